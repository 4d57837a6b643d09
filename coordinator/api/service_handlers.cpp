// Handlers for health, metrics and the OpenAPI document.
#include "coordinator/api/handlers.h"

namespace benchfleet::api {
namespace {
namespace bhttp = boost::beast::http;
}  // namespace

http::Response healthz(ApiContext& ctx, const http::Request& req, const http::RouteMatch&) {
  // Liveness only: it must answer even while every store call waits on a slow disk, so it
  // does not touch the store (storage errors surface on the requests that need it).
  return http::json_response(bhttp::status::ok,
                             {{"status", ctx.stopping.load() ? "stopping" : "ok"}, {"version", BENCHFLEET_VERSION}},
                             req);
}

http::Response metrics(ApiContext& ctx, const http::Request& req, const http::RouteMatch&) {
  if (auto s = require_reader(ctx, req); !s) return error_response(s.error(), req);
  auto g = ctx.store.gauges(3LL * ctx.config.heartbeat_interval_s * 1000);
  if (!g.ok()) return error_response(g.error(), req);
  return http::text_response(bhttp::status::ok, ctx.metrics.render(*g), req, "text/plain; version=0.0.4");
}

http::Response openapi(ApiContext&, const http::Request& req, const http::RouteMatch&) {
  return http::text_response(bhttp::status::ok, openapi_document(), req, "application/json");
}

}  // namespace benchfleet::api
