#include "coordinator/api/api.h"

#include <utility>

#include "common/embedded_file.h"
#include "coordinator/api/blocking.h"
#include "coordinator/api/handlers.h"

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
    co_return co_await run_blocking(ctx.blocking, [&] { return respond(ctx, f, req, m); });
  };
}

// Runs a handler that never blocks directly on the I/O thread.
http::Handler inline_handler(ApiContext& ctx, SyncHandler f) {
  return [&ctx, f](const http::Request& req, const http::RouteMatch& m) -> boost::asio::awaitable<http::Response> {
    co_return respond(ctx, f, req, m);
  };
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
  // Operators and dashboards.
  r.add(verb::post, "/api/v1/runs", "runs.submit", offload(ctx, submit_run));
  r.add(verb::get, "/api/v1/runs", "runs.list", offload(ctx, list_runs));
  r.add(verb::get, "/api/v1/runs/{id}", "runs.get", offload(ctx, get_run));
  r.add(verb::post, "/api/v1/runs/{id}/cancel", "runs.cancel", offload(ctx, cancel_run));
  r.add(verb::get, "/api/v1/runs/{id}/results", "runs.results", offload(ctx, list_results));
  r.add(verb::get, "/api/v1/runs/{id}/jobs", "runs.jobs", offload(ctx, list_jobs));
  r.add(verb::get, "/api/v1/runs/{id}/report", "runs.report", offload(ctx, run_report));
  r.add(verb::get, "/api/v1/results/{id}", "results.get", offload(ctx, get_result));
  r.add(verb::get, "/api/v1/models", "models.list", offload(ctx, list_models));
  r.add(verb::get, "/api/v1/agents", "agents.list", offload(ctx, list_agents));
  r.add(verb::post, "/api/v1/agents/{id}/drain", "agents.drain", offload(ctx, drain_agent));
  // Agents.
  r.add(verb::post, "/api/v1/agents/enroll", "agents.enroll", offload(ctx, enroll_agent));
  r.add(verb::post, "/api/v1/agents/{id}/heartbeat", "agents.heartbeat", offload(ctx, agent_heartbeat));
  r.add(verb::post, "/api/v1/agents/{id}/lease", "agents.lease",
        [&ctx](const http::Request& req, const http::RouteMatch& m) { return agent_lease(ctx, req, m); });
  r.add(verb::post, "/api/v1/jobs/{id}/progress", "jobs.progress", offload(ctx, job_progress));
  r.add(verb::post, "/api/v1/jobs/{id}/result", "jobs.result", offload(ctx, job_result));
  r.add(verb::post, "/api/v1/jobs/{id}/release", "jobs.release", offload(ctx, job_release));
  // Service.
  r.add(verb::get, "/healthz", "healthz", inline_handler(ctx, healthz));
  r.add(verb::get, "/metrics", "metrics", offload(ctx, metrics));
  r.add(verb::get, "/api/v1/openapi.json", "openapi", inline_handler(ctx, openapi));
  // The dashboard: static files, read on the blocking pool.
  r.add(verb::get, "/", "web.index", offload(ctx, web_asset));
  r.set_fallback("web.asset", offload(ctx, web_asset));
}

}  // namespace benchfleet::api
