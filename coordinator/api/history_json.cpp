#include "coordinator/api/history_json.h"

#include <string>

#include "common/codecs.h"
#include "common/time_format.h"
#include "coordinator/api/common.h"

namespace benchfleet::api {
namespace {

using nlohmann::json;

template <class T>
json or_null(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

}  // namespace

std::string_view to_string(history::ChangeDirection direction) {
  return direction == history::ChangeDirection::kRegression ? "regression" : "improvement";
}

std::optional<history::ChangeDirection> parse_change_direction(std::string_view s) {
  if (s == "regression") return history::ChangeDirection::kRegression;
  if (s == "improvement") return history::ChangeDirection::kImprovement;
  return std::nullopt;
}

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

json series_key_json(const store::SeriesKey& k) {
  return {{"model", k.model},
          {"batch", k.batch},
          {"mode", to_string(k.mode)},
          {"dtype", to_string(k.dtype)},
          {"runtime", to_string(k.runtime)},
          {"gpu", k.gpu},
          {"torch_build", k.torch_build}};
}

json series_json(const store::SeriesInfo& s) {
  json out = series_key_json(s.key);
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

}  // namespace benchfleet::api
