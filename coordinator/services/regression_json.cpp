#include "coordinator/services/regression_json.h"

#include <string>

#include "common/json_optional.h"
#include "common/time_format.h"

namespace benchfleet::services {
namespace {

using nlohmann::json;

}  // namespace

json series_key_json(const store::SeriesKey& k) {
  return {{"model", k.model},
          {"batch", k.batch},
          {"mode", to_string(k.mode)},
          {"dtype", to_string(k.dtype)},
          {"runtime", to_string(k.runtime)},
          {"gpu", k.gpu},
          {"torch_build", k.torch_build}};
}

json point_ref_json(const store::PointRef& r) {
  return {{"point_id", r.point_id},
          {"result_id", r.result_id},
          {"run_id", r.run_id},
          {"torch_version", or_null(r.torch_version)},
          {"torch_git", or_null(r.torch_git)},
          {"recorded_at", format_time(r.recorded_at)},
          {"median_ms", or_null(r.median_ms)}};
}

json regression_json(const store::RegressionInfo& r) {
  return {{"id", r.id},
          {"series_id", r.series_id},
          {"series", series_key_json(r.key)},
          {"direction", to_string(r.direction)},
          {"state", to_string(r.state)},
          {"before_median_ms", r.before_median_ms},
          {"after_median_ms", r.after_median_ms},
          {"ratio", r.ratio},
          {"p_value", r.p_value},
          {"baseline_runs", r.baseline_runs},
          {"confirm_runs", r.confirm_runs},
          {"detected_at", format_time(r.detected_at)},
          {"acknowledged_at", time_or_null(r.acknowledged_at)},
          {"resolved_at", time_or_null(r.resolved_at)},
          {"note", or_null(r.note)},
          {"first_bad", point_ref_json(r.first_bad)},
          {"last_good", r.last_good ? point_ref_json(*r.last_good) : json(nullptr)},
          {"url", "/api/v1/regressions/" + std::to_string(r.id)},
          {"series_url", "/api/v1/series/" + std::to_string(r.series_id)}};
}

json regression_opened_event(const store::RegressionInfo& regression, std::int64_t delivery_id) {
  return {{"event", "regression.opened"}, {"delivery_id", delivery_id}, {"regression", regression_json(regression)}};
}

}  // namespace benchfleet::services
