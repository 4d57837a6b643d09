#include "coordinator/api/history_json.h"

#include <string>

#include "common/codecs.h"
#include "common/json_optional.h"
#include "common/time_format.h"
#include "coordinator/api/common.h"

namespace benchfleet::api {
namespace {

using nlohmann::json;

}  // namespace

json schedule_json(const store::ScheduleInfo& s) {
  return {{"id", s.id},
          {"name", s.name},
          {"cron", s.cron},
          {"enabled", s.enabled},
          {"matrix", s.spec},
          {"created_at", format_time(s.created_at)},
          {"updated_at", format_time(s.updated_at)},
          {"next_due_at", s.enabled ? json(format_time(s.next_due_at)) : json(nullptr)},
          {"last_due_at", time_or_null(s.last_due_at)},
          {"last_run_id", or_null(s.last_run_id)},
          {"missed", s.missed},
          {"runs", s.runs},
          {"url", "/api/v1/schedules/" + std::to_string(s.id)}};
}

json series_json(const store::SeriesInfo& s) {
  json out = services::series_key_json(s.key);
  out["id"] = s.id;
  out["point_count"] = s.points;
  out["last_point_at"] = time_or_null(s.last_point_at);
  out["last_median_ms"] = or_null(s.last_median_ms);
  out["last_torch_version"] = or_null(s.last_torch_version);
  out["last_status"] = s.last_status ? json(to_string(*s.last_status)) : json(nullptr);
  out["open_regressions"] = s.open_regressions;
  out["url"] = "/api/v1/series/" + std::to_string(s.id);
  return out;
}

json point_json(const store::SeriesPoint& p) {
  return {{"id", p.id},
          {"result_id", p.result_id},
          {"run_id", p.run_id},
          {"status", to_string(p.status)},
          {"median_ms", or_null(p.median_ms)},
          {"ci_low_ms", or_null(p.ci_low_ms)},
          {"ci_high_ms", or_null(p.ci_high_ms)},
          {"torch_version", or_null(p.torch_version)},
          {"torch_git", or_null(p.torch_git)},
          {"recorded_at", format_time(p.recorded_at)},
          {"flags", p.flags},
          {"accuracy", or_null(p.accuracy)}};
}

}  // namespace benchfleet::api
