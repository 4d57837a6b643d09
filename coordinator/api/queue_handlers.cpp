// GET /api/v1/queue: queued and active jobs by GPU class and torch build, what an autoscaler
// (benchfleet-slurm-launcher) sizes its allocations from.
#include "coordinator/api/handlers.h"

namespace benchfleet::api {
namespace {
namespace bhttp = boost::beast::http;
}  // namespace

Result<http::Response> queue_summary(ApiContext& ctx, const http::Request& req, const http::RouteMatch&) {
  BF_ASSIGN_OR_RETURN(const auto cells, ctx.store.runs().queue_summary());
  nlohmann::json out = nlohmann::json::array();
  for (const auto& c : cells) {
    nlohmann::json by_timeout = nlohmann::json::array();
    for (const auto& [timeout_s, queued] : c.queued_by_timeout) {
      by_timeout.push_back({{"timeout_s", timeout_s}, {"queued", queued}});
    }
    out.push_back({{"gpu_class", c.gpu_class},
                   {"torch_build", c.torch_build},
                   {"queued", c.queued},
                   {"active", c.active},
                   {"queued_by_timeout", std::move(by_timeout)}});
  }
  return http::json_response(bhttp::status::ok, {{"cells", out}}, req);
}

}  // namespace benchfleet::api
