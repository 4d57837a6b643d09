#include "coordinator/api/api.h"

#include "common/embedded_file.h"
#include "coordinator/api/handlers.h"

namespace benchfleet::api {

std::vector<EmbeddedFile> embedded_documents();  // generated from coordinator/api/openapi.json

namespace {

namespace bhttp = boost::beast::http;
using SyncHandler = http::Response (*)(ApiContext&, const http::Request&, const http::RouteMatch&);

http::Handler wrap(ApiContext& ctx, SyncHandler f) {
  return [&ctx, f](const http::Request& req, const http::RouteMatch& m) -> boost::asio::awaitable<http::Response> {
    co_return f(ctx, req, m);
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
  r.add(verb::post, "/api/v1/runs", "runs.submit", wrap(ctx, submit_run));
  r.add(verb::get, "/api/v1/runs", "runs.list", wrap(ctx, list_runs));
  r.add(verb::get, "/api/v1/runs/{id}", "runs.get", wrap(ctx, get_run));
  r.add(verb::post, "/api/v1/runs/{id}/cancel", "runs.cancel", wrap(ctx, cancel_run));
  r.add(verb::get, "/api/v1/runs/{id}/results", "runs.results", wrap(ctx, list_results));
  r.add(verb::get, "/api/v1/runs/{id}/report", "runs.report", wrap(ctx, run_report));
  r.add(verb::get, "/api/v1/results/{id}", "results.get", wrap(ctx, get_result));
  r.add(verb::get, "/api/v1/models", "models.list", wrap(ctx, list_models));
  r.add(verb::get, "/api/v1/agents", "agents.list", wrap(ctx, list_agents));
  r.add(verb::post, "/api/v1/agents/{id}/drain", "agents.drain", wrap(ctx, drain_agent));
  // Agents.
  r.add(verb::post, "/api/v1/agents/enroll", "agents.enroll", wrap(ctx, enroll_agent));
  r.add(verb::post, "/api/v1/agents/{id}/heartbeat", "agents.heartbeat", wrap(ctx, agent_heartbeat));
  r.add(verb::post, "/api/v1/agents/{id}/lease", "agents.lease",
        [&ctx](const http::Request& req, const http::RouteMatch& m) { return agent_lease(ctx, req, m); });
  r.add(verb::post, "/api/v1/jobs/{id}/progress", "jobs.progress", wrap(ctx, job_progress));
  r.add(verb::post, "/api/v1/jobs/{id}/result", "jobs.result", wrap(ctx, job_result));
  // Service.
  r.add(verb::get, "/healthz", "healthz", wrap(ctx, healthz));
  r.add(verb::get, "/metrics", "metrics", wrap(ctx, metrics));
  r.add(verb::get, "/api/v1/openapi.json", "openapi", wrap(ctx, openapi));
}

}  // namespace benchfleet::api
