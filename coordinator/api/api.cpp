#include "coordinator/api/api.h"

#include <cstddef>
#include <optional>
#include <utility>

#include "common/embedded_file.h"
#include "coordinator/api/handlers.h"
#include "coordinator/services/blocking.h"
#include "coordinator/store/group_commit.h"

namespace benchfleet::api {

std::vector<EmbeddedFile> embedded_documents();  // generated from coordinator/api/openapi.json

namespace {

namespace bhttp = boost::beast::http;
using SyncHandler = Result<http::Response> (*)(ApiContext&, const http::Request&, const http::RouteMatch&);

// The handler's response, or its error as problem+json: the one place where a handler's Error
// becomes an answer.
http::Response respond(ApiContext& ctx, SyncHandler f, const http::Request& req, const http::RouteMatch& m) {
  auto res = f(ctx, req, m);
  if (!res.ok()) return error_response(res.error(), req);
  return std::move(res).value();
}

// Runs a handler that may block (store, report rendering) on the blocking executor; the
// connection's coroutine resumes on its own executor when it is done.
http::Handler offload(ApiContext& ctx, SyncHandler f) {
  return [&ctx, f](const http::Request& req, const http::RouteMatch& m) -> boost::asio::awaitable<http::Response> {
    co_return co_await services::run_blocking(ctx.blocking, [&] { return respond(ctx, f, req, m); });
  };
}

// Runs a read without a token on the read lane (lower CPU priority; its store operations yield
// to the agents'), and one with a token (an operator, a reader) with the operators' writes, so a
// flood of anonymous reads queues before neither.
http::Handler read_offload(ApiContext& ctx, SyncHandler f) {
  return [&ctx, f](const http::Request& req, const http::RouteMatch& m) -> boost::asio::awaitable<http::Response> {
    const auto lane = holds_client_token(ctx, req) ? ctx.blocking : ctx.read_lane;
    co_return co_await services::run_blocking(lane, [&] { return respond(ctx, f, req, m); });
  };
}

// Runs an agent-protocol handler on the agent lane, its store operations first in line, noting
// the request's arrival until it is answered: the lease it renews or the result it posts is
// judged as of then, and the sweeper expires nothing the request may renew.
http::Handler agent_offload(ApiContext& ctx, SyncHandler f) {
  return [&ctx, f](const http::Request& req, const http::RouteMatch& m) -> boost::asio::awaitable<http::Response> {
    const store::LeaseStore::Arrivals::Ticket arrived(ctx.store.leases().arrivals(), ctx.clock.now_ms());
    co_return co_await services::run_blocking(ctx.agent_lane, [&] {
      const store::GroupCommit::FirstInLine first;
      const AgentRequestArrival arrival(arrived.at());
      return respond(ctx, f, req, m);
    });
  };
}

// Runs a handler that never blocks directly on the I/O thread.
http::Handler inline_handler(ApiContext& ctx, SyncHandler f) {
  return [&ctx, f](const http::Request& req, const http::RouteMatch& m) -> boost::asio::awaitable<http::Response> {
    co_return respond(ctx, f, req, m);
  };
}

// ---- Admission: checked on a request's headers, before the server reads its body ------------
// Access is checked here, once, by each route's guard (Router::dispatch runs it too, so tests
// that drive the router alone get the same answers); handlers do not check it again. Checked on
// the headers, a client the route refuses cannot make the coordinator buffer its body. An agent
// guard hands the agent it authenticated to the handler (RouteMatch::principal, admitted_agent).

// A request admitted with a token that checked makes its connection trusted (the server keeps
// slots that anonymous connections cannot take); one admitted because reads are public does not.
http::Guard guard_with(ApiContext& ctx, Status (*check)(const ApiContext&, const http::Request&)) {
  return [&ctx, check](const http::Request& head, const http::RouteMatch&) -> boost::asio::awaitable<http::Admission> {
    const Status s = check(ctx, head);
    if (!s.ok()) co_return http::Admission::refused(error_response(s.error(), head));
    co_return http::Admission::admitted(holds_client_token(ctx, head));
  };
}

// The agent token; with `own_path`, of the agent named by the path's {id} (403 otherwise).
// Reads the store, so it runs on the blocking executor.
http::Guard agent_guard(ApiContext& ctx, bool own_path) {
  return [&ctx, own_path](const http::Request& head,
                          const http::RouteMatch& m) -> boost::asio::awaitable<http::Admission> {
    const Result<std::int64_t> agent = co_await services::run_blocking(ctx.agent_lane, [&] {
      const store::GroupCommit::FirstInLine first;
      return own_path ? authenticate_agent_path(ctx, head, m) : authenticate_agent(ctx, head);
    });
    if (agent.ok()) co_return http::Admission::admitted(true, agent_principal(*agent));
    co_return http::Admission::refused(error_response(agent.error(), head));
  };
}

// Body limits per route; the server caps each at max_body_bytes (what results may use).
// Readers, operators and agents (an agent fetches the artifacts of the models it runs).
http::Guard agent_or_reader(ApiContext& ctx) {
  return [&ctx](const http::Request& head, const http::RouteMatch&) -> boost::asio::awaitable<http::Admission> {
    if (require_reader(ctx, head).ok()) co_return http::Admission::admitted(holds_client_token(ctx, head));
    const Result<std::int64_t> agent =
        co_await services::run_blocking(ctx.agent_lane, [&] { return authenticate_agent(ctx, head); });
    if (agent.ok()) co_return http::Admission::admitted(true, agent_principal(*agent));
    co_return http::Admission::refused(error_response(agent.error(), head));
  };
}

constexpr std::size_t kNoBody = 0;              // GETs
constexpr std::size_t kControlBody = 64 << 10;  // a lease, heartbeat, progress, release, cancel, drain
constexpr std::size_t kDocumentBody = 1 << 20;  // a matrix (submit), a descriptor (enrol)

http::RouteOptions admit(http::Guard guard, std::optional<std::size_t> body_limit) {
  http::RouteOptions options;
  options.guard = std::move(guard);
  options.body_limit = body_limit;
  return options;
}

}  // namespace

const std::string& openapi_document() {
  static const std::string doc = [] {
    for (auto& f : embedded_documents()) {
      if (f.name == "openapi.json") return f.content;
    }
    return std::string("{}");
  }();
  return doc;
}

void register_routes(http::Router& r, ApiContext& ctx) {
  using bhttp::verb;
  const http::Guard op = guard_with(ctx, require_operator);
  const http::Guard reader = guard_with(ctx, require_reader);
  const http::Guard enrolling = guard_with(ctx, require_enrollment);
  const http::Guard own_agent = agent_guard(ctx, /*own_path=*/true);
  const http::Guard any_agent = agent_guard(ctx, /*own_path=*/false);
  // Operators and dashboards.
  r.add(verb::post, "/api/v1/runs", "runs.submit", offload(ctx, submit_run), admit(op, kDocumentBody));
  r.add(verb::get, "/api/v1/runs", "runs.list", read_offload(ctx, list_runs), admit(reader, kNoBody));
  r.add(verb::get, "/api/v1/runs/{id}", "runs.get", read_offload(ctx, get_run), admit(reader, kNoBody));
  r.add(verb::post, "/api/v1/runs/{id}/cancel", "runs.cancel", offload(ctx, cancel_run), admit(op, kControlBody));
  r.add(verb::get, "/api/v1/runs/{id}/results", "runs.results", read_offload(ctx, list_results),
        admit(reader, kNoBody));
  r.add(verb::get, "/api/v1/runs/{id}/jobs", "runs.jobs", read_offload(ctx, list_jobs), admit(reader, kNoBody));
  r.add(verb::get, "/api/v1/runs/{id}/report", "runs.report", read_offload(ctx, run_report), admit(reader, kNoBody));
  r.add(verb::get, "/api/v1/compare", "runs.compare", read_offload(ctx, compare_runs), admit(reader, kNoBody));
  r.add(verb::get, "/api/v1/results/{id}", "results.get", read_offload(ctx, get_result), admit(reader, kNoBody));
  r.add(verb::get, "/api/v1/models", "models.list", read_offload(ctx, list_models), admit(reader, kNoBody));
  r.add(verb::post, "/api/v1/models", "models.register", offload(ctx, register_model), admit(op, kDocumentBody));
  r.add(verb::get, "/api/v1/models/{id}", "models.get", read_offload(ctx, get_model), admit(reader, kNoBody));
  r.add(verb::delete_, "/api/v1/models/{id}", "models.delete", offload(ctx, delete_model), admit(op, kControlBody));
  // An upload streams to disk (never held in memory), up to max_artifact_bytes.
  http::RouteOptions upload = admit(
      [&ctx](const http::Request& head, const http::RouteMatch& m) -> boost::asio::awaitable<http::Admission> {
        Status s = require_operator(ctx, head);
        if (s.ok()) s = check_upload_query(m);
        if (!s.ok()) co_return http::Admission::refused(error_response(s.error(), head));
        co_return http::Admission::admitted(true);
      },
      static_cast<std::size_t>(ctx.artifacts.max_bytes()));
  upload.body_sink = [&ctx](const http::Request&, const http::RouteMatch& m) -> std::shared_ptr<http::BodySink> {
    return ctx.artifacts.begin_upload(m.query.count("kind") != 0 ? m.query.at("kind") : "file");
  };
  r.add(verb::post, "/api/v1/artifacts", "artifacts.upload", offload(ctx, upload_artifact), std::move(upload));
  r.add(verb::get, "/api/v1/artifacts", "artifacts.list", read_offload(ctx, list_artifacts), admit(reader, kNoBody));
  r.add(verb::get, "/api/v1/artifacts/{digest}", "artifacts.get", read_offload(ctx, get_artifact),
        admit(agent_or_reader(ctx), kNoBody));
  r.add(verb::get, "/api/v1/agents", "agents.list", read_offload(ctx, list_agents), admit(reader, kNoBody));
  r.add(verb::get, "/api/v1/queue", "queue.summary", read_offload(ctx, queue_summary), admit(reader, kNoBody));
  r.add(verb::post, "/api/v1/agents/{id}/drain", "agents.drain", offload(ctx, drain_agent), admit(op, kControlBody));
  r.add(verb::post, "/api/v1/agents/{id}/approve", "agents.approve", offload(ctx, approve_agent),
        admit(op, kControlBody));
  r.add(verb::post, "/api/v1/schedules", "schedules.create", offload(ctx, create_schedule), admit(op, kDocumentBody));
  r.add(verb::get, "/api/v1/schedules", "schedules.list", read_offload(ctx, list_schedules), admit(reader, kNoBody));
  r.add(verb::get, "/api/v1/schedules/{id}", "schedules.get", read_offload(ctx, get_schedule), admit(reader, kNoBody));
  r.add(verb::get, "/api/v1/schedules/{id}/summary", "schedules.summary", read_offload(ctx, schedule_summary),
        admit(reader, kNoBody));
  r.add(verb::post, "/api/v1/schedules/{id}/pause", "schedules.pause", offload(ctx, pause_schedule),
        admit(op, kControlBody));
  r.add(verb::post, "/api/v1/schedules/{id}/resume", "schedules.resume", offload(ctx, resume_schedule),
        admit(op, kControlBody));
  r.add(verb::delete_, "/api/v1/schedules/{id}", "schedules.delete", offload(ctx, delete_schedule),
        admit(op, kControlBody));
  r.add(verb::get, "/api/v1/series", "series.list", read_offload(ctx, list_series), admit(reader, kNoBody));
  r.add(verb::get, "/api/v1/series/{id}", "series.get", read_offload(ctx, get_series), admit(reader, kNoBody));
  r.add(verb::get, "/api/v1/regressions", "regressions.list", read_offload(ctx, list_regressions),
        admit(reader, kNoBody));
  r.add(verb::get, "/api/v1/regressions/{id}", "regressions.get", read_offload(ctx, get_regression),
        admit(reader, kNoBody));
  r.add(verb::post, "/api/v1/regressions/{id}/acknowledge", "regressions.acknowledge",
        offload(ctx, acknowledge_regression), admit(op, kControlBody));
  r.add(verb::post, "/api/v1/regressions/{id}/resolve", "regressions.resolve", offload(ctx, resolve_regression),
        admit(op, kControlBody));
  r.add(verb::post, "/api/v1/regressions/{id}/reopen", "regressions.reopen", offload(ctx, reopen_regression),
        admit(op, kControlBody));
  // Agents.
  r.add(verb::post, "/api/v1/agents/enroll", "agents.enroll", offload(ctx, enroll_agent),
        admit(enrolling, kDocumentBody));
  r.add(verb::post, "/api/v1/agents/{id}/heartbeat", "agents.heartbeat", agent_offload(ctx, agent_heartbeat),
        admit(own_agent, kControlBody));
  r.add(
      verb::post, "/api/v1/agents/{id}/lease", "agents.lease",
      [&ctx](const http::Request& req, const http::RouteMatch& m) { return agent_lease(ctx, req, m); },
      admit(own_agent, kControlBody));
  r.add(verb::post, "/api/v1/jobs/{id}/progress", "jobs.progress", agent_offload(ctx, job_progress),
        admit(any_agent, kControlBody));
  r.add(verb::post, "/api/v1/jobs/{id}/result", "jobs.result", agent_offload(ctx, job_result),
        admit(any_agent, std::nullopt));
  r.add(verb::post, "/api/v1/jobs/{id}/release", "jobs.release", agent_offload(ctx, job_release),
        admit(any_agent, kControlBody));
  // Service.
  r.add(verb::get, "/healthz", "healthz", inline_handler(ctx, healthz), admit({}, kNoBody));
  r.add(verb::get, "/metrics", "metrics", read_offload(ctx, metrics), admit(reader, kNoBody));
  r.add(verb::get, "/api/v1/openapi.json", "openapi", inline_handler(ctx, openapi), admit({}, kNoBody));
  // The dashboard: static files, read on the read lane; public (its API calls may need a token).
  r.add(verb::get, "/", "web.index", read_offload(ctx, web_asset), admit({}, kNoBody));
  r.set_fallback("web.asset", read_offload(ctx, web_asset), admit({}, kNoBody));
}

}  // namespace benchfleet::api
