// Handlers for health, metrics, the OpenAPI document and the dashboard's files.
#include "coordinator/api/handlers.h"
#include "coordinator/api/web_assets.h"

namespace benchfleet::api {
namespace {
namespace bhttp = boost::beast::http;
}  // namespace

Result<http::Response> healthz(ApiContext& ctx, const http::Request& req, const http::RouteMatch&) {
  // Liveness only: it must answer even while every store call waits on a slow disk, so it
  // does not touch the store (storage errors surface on the requests that need it).
  return http::json_response(
      bhttp::status::ok, {{"status", ctx.stopping.load() ? "stopping" : "ok"}, {"version", BENCHFLEET_VERSION}}, req);
}

Result<http::Response> metrics(ApiContext& ctx, const http::Request& req, const http::RouteMatch&) {
  BF_ASSIGN_OR_RETURN(const auto gauges, ctx.store.gauges(3LL * ctx.config.heartbeat_interval_s * 1000));
  return http::text_response(bhttp::status::ok, ctx.metrics.render(gauges), req, "text/plain; version=0.0.4");
}

Result<http::Response> openapi(ApiContext&, const http::Request& req, const http::RouteMatch&) {
  return http::text_response(bhttp::status::ok, openapi_document(), req, "application/json");
}

Result<http::Response> web_asset(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  // The dashboard is public: its pages load without a token (their API calls may need one).
  // An unknown API path keeps the router's answer rather than looking for a file.
  if (!m.segments.empty() && m.segments.front() == "api") {
    const std::string_view target(req.target().data(), req.target().size());
    std::string detail = "no route for ";
    detail += req.method_string();
    detail += ' ';
    detail += target.substr(0, target.find('?'));
    return Error::not_found(std::move(detail));
  }
  return serve_asset(ctx.config.web_root, req, m.segments);
}

}  // namespace benchfleet::api
