// Handlers for health, metrics and the OpenAPI document.
#include "coordinator/api/handlers.h"

namespace benchfleet::api {
namespace {
namespace bhttp = boost::beast::http;
}  // namespace

Result<http::Response> healthz(ApiContext& ctx, const http::Request& req, const http::RouteMatch&) {
  // Liveness only: it must answer even while every store call waits on a slow disk, so it
  // does not touch the store (storage errors surface on the requests that need it).
  return http::json_response(bhttp::status::ok,
                             {{"status", ctx.stopping.load() ? "stopping" : "ok"}, {"version", BENCHFLEET_VERSION}},
                             req);
}

Result<http::Response> metrics(ApiContext& ctx, const http::Request& req, const http::RouteMatch&) {
  BF_RETURN_IF_ERROR(require_reader(ctx, req));
  BF_ASSIGN_OR_RETURN(const auto gauges, ctx.store.gauges(3LL * ctx.config.heartbeat_interval_s * 1000));
  return http::text_response(bhttp::status::ok, ctx.metrics.render(gauges), req, "text/plain; version=0.0.4");
}

Result<http::Response> openapi(ApiContext&, const http::Request& req, const http::RouteMatch&) {
  return http::text_response(bhttp::status::ok, openapi_document(), req, "application/json");
}

}  // namespace benchfleet::api
