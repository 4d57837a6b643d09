#include "coordinator/api/history_requests.h"

#include "common/codecs.h"
#include "common/display_text.h"
#include "common/json_reader.h"
#include "coordinator/api/query_params.h"
#include "coordinator/rules/cron.h"

namespace benchfleet::api {

Result<ScheduleRequest> decode_schedule_request(const nlohmann::json& body) {
  if (auto err = expect_object(body, "")) return *err;
  ScheduleRequest out;
  JsonReader r(body, "");
  r.required("cron", out.cron);
  r.optional("enabled", out.enabled);
  r.required("matrix", out.matrix);
  BF_RETURN_IF_ERROR(r.finish());
  BF_ASSIGN_OR_RETURN(const auto schedule, rules::CronSchedule::parse(out.cron));
  out.cron = schedule.text();
  return out;
}

Result<std::optional<std::string>> decode_state_note(const nlohmann::json& body) {
  if (auto err = expect_object(body, "")) return *err;
  std::optional<std::string> note;
  JsonReader r(body, "");
  r.optional("note", note);
  if (note) {
    const auto why = display_text_problem(*note, kMaxNoteBytes, TextLines::kMany);
    r.check(!why, "note", why.value_or(""));
  }
  BF_RETURN_IF_ERROR(r.finish());
  return note;
}

Result<SeriesListQuery> series_list_query(const http::RouteMatch& match) {
  SeriesListQuery out;
  BF_ASSIGN_OR_RETURN(const auto limit, int_query(match, "limit", 1, 500));
  BF_ASSIGN_OR_RETURN(out.after, int_query(match, "after", 0, INT64_MAX));
  BF_ASSIGN_OR_RETURN(const CellQuery cell, cell_query(match));
  out.filter = store::SeriesFilter{.model = cell.model,
                                   .mode = cell.mode,
                                   .dtype = cell.dtype,
                                   .runtime = cell.runtime,
                                   .gpu = cell.gpu,
                                   .torch_build = cell.torch_build,
                                   .batch = cell.batch};
  out.limit = static_cast<int>(limit.value_or(out.limit));
  return out;
}

Result<SeriesPointsQuery> series_points_query(const http::RouteMatch& match) {
  SeriesPointsQuery out;
  BF_ASSIGN_OR_RETURN(const auto limit, int_query(match, "limit", 1, 5000));
  BF_ASSIGN_OR_RETURN(out.after_point, int_query(match, "after_point", 1, INT64_MAX));
  out.limit = static_cast<int>(limit.value_or(out.limit));
  return out;
}

Result<RegressionListQuery> regression_list_query(const http::RouteMatch& match) {
  RegressionListQuery out;
  BF_ASSIGN_OR_RETURN(const auto limit, int_query(match, "limit", 1, 500));
  BF_ASSIGN_OR_RETURN(out.before, int_query(match, "before", 1, INT64_MAX));
  BF_ASSIGN_OR_RETURN(out.filter.series_id, int_query(match, "series", 1, INT64_MAX));
  const std::string state = str_query(match, "state").value_or("open");
  if (state != "all") {
    out.filter.state = store::parse_regression_state(state);
    if (!out.filter.state) return Error::invalid("query.state", "must be open, acknowledged, resolved or all");
  }
  const std::string direction = str_query(match, "direction").value_or("regression");
  if (direction != "all") {
    out.filter.direction = rules::parse_change_direction(direction);
    if (!out.filter.direction) return Error::invalid("query.direction", "must be regression, improvement or all");
  }
  out.limit = static_cast<int>(limit.value_or(out.limit));
  return out;
}

}  // namespace benchfleet::api
