// Handlers for schedules, series and regressions. Shapes: history_json.h.
#include <string>

#include "common/codecs.h"
#include "common/matrix.h"
#include "coordinator/api/handlers.h"
#include "coordinator/api/history_json.h"
#include "coordinator/rules/cron.h"

namespace benchfleet::api {
namespace {

namespace bhttp = boost::beast::http;
using http::json_response;
using nlohmann::json;

// Longest note on a regression.
constexpr std::size_t kMaxNoteBytes = 4096;
// Regressions listed with a series (GET /series/{id}).
constexpr int kSeriesRegressions = 50;

// The error of a check made on the matrix after decoding, with its field under "matrix.".
Error under_matrix(Error e) {
  if (e.code == ErrorCode::kInvalidArgument) e.field = e.field.empty() ? "matrix" : "matrix." + e.field;
  return e;
}

Result<http::Response> schedule_response(bhttp::status status, const store::ScheduleInfo& s, const http::Request& req) {
  return json_response(status, schedule_json(s), req);
}

// The optional {"note": "..."} of a state change; no body is no note.
Result<std::optional<std::string>> read_note(ApiContext& ctx, const http::Request& req) {
  if (req.body().empty()) return std::optional<std::string>();
  BF_ASSIGN_OR_RETURN(const json body, json_body(ctx, req));
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

Result<http::Response> change_regression_state(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m,
                                               store::RegressionState state) {
  BF_RETURN_IF_ERROR(require_operator(ctx, req));
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  BF_ASSIGN_OR_RETURN(const auto note, read_note(ctx, req));
  BF_ASSIGN_OR_RETURN(const auto regression, ctx.store.history().set_regression_state(id, state, note));
  return json_response(bhttp::status::ok, regression_json(regression), req);
}

}  // namespace

// ---- schedules --------------------------------------------------------------------------------

Result<http::Response> create_schedule(ApiContext& ctx, const http::Request& req, const http::RouteMatch&) {
  BF_RETURN_IF_ERROR(require_operator(ctx, req));
  BF_ASSIGN_OR_RETURN(const json body, json_body(ctx, req));
  if (auto err = expect_object(body, "")) return *err;
  std::string cron;
  bool enabled = true;
  MatrixSpec spec;
  JsonReader r(body, "");
  r.required("cron", cron);
  r.optional("enabled", enabled);
  r.required("matrix", spec);
  BF_RETURN_IF_ERROR(r.finish());
  BF_ASSIGN_OR_RETURN(const auto schedule, history::CronSchedule::parse(cron));
  // The matrix must expand now; the schedule expands it again each time it fires.
  if (auto jobs = expand_submitted_matrix(ctx, spec); !jobs.ok()) {
    return under_matrix(jobs.error());
  }
  BF_ASSIGN_OR_RETURN(const auto created, ctx.store.history().create_schedule(spec, schedule.text(), enabled));
  auto res = json_response(bhttp::status::created, schedule_json(created), req);
  res.set(bhttp::field::location, "/api/v1/schedules/" + std::to_string(created.id));
  return res;
}

Result<http::Response> list_schedules(ApiContext& ctx, const http::Request& req, const http::RouteMatch&) {
  BF_RETURN_IF_ERROR(require_reader(ctx, req));
  BF_ASSIGN_OR_RETURN(const auto schedules, ctx.store.history().list_schedules());
  json out = json::array();
  for (const auto& s : schedules) out.push_back(schedule_json(s));
  return json_response(bhttp::status::ok, {{"schedules", out}}, req);
}

Result<http::Response> get_schedule(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_RETURN_IF_ERROR(require_reader(ctx, req));
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  BF_ASSIGN_OR_RETURN(const auto schedule, ctx.store.history().get_schedule(id));
  return schedule_response(bhttp::status::ok, schedule, req);
}

Result<http::Response> pause_schedule(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_RETURN_IF_ERROR(require_operator(ctx, req));
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  BF_ASSIGN_OR_RETURN(const auto schedule, ctx.store.history().set_schedule_enabled(id, false));
  return schedule_response(bhttp::status::ok, schedule, req);
}

Result<http::Response> resume_schedule(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_RETURN_IF_ERROR(require_operator(ctx, req));
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  BF_ASSIGN_OR_RETURN(const auto schedule, ctx.store.history().set_schedule_enabled(id, true));
  return schedule_response(bhttp::status::ok, schedule, req);
}

Result<http::Response> delete_schedule(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_RETURN_IF_ERROR(require_operator(ctx, req));
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  BF_RETURN_IF_ERROR(ctx.store.history().delete_schedule(id));
  http::Response res{bhttp::status::no_content, req.version()};
  res.keep_alive(req.keep_alive());
  res.prepare_payload();
  return res;
}

// ---- series -----------------------------------------------------------------------------------

Result<http::Response> list_series(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_RETURN_IF_ERROR(require_reader(ctx, req));
  BF_ASSIGN_OR_RETURN(const auto limit, int_query(m, "limit", 1, 500));
  BF_ASSIGN_OR_RETURN(const auto after, int_query(m, "after", 0, INT64_MAX));
  BF_ASSIGN_OR_RETURN(const CellQuery cell, cell_query(m));
  const store::SeriesFilter f{.model = cell.model,
                              .mode = cell.mode,
                              .dtype = cell.dtype,
                              .runtime = cell.runtime,
                              .gpu = cell.gpu,
                              .torch_build = cell.torch_build,
                              .batch = cell.batch};
  BF_ASSIGN_OR_RETURN(const auto page,
                      ctx.store.history().list_series(f, after, static_cast<int>(limit.value_or(100))));
  json out = json::array();
  for (const auto& s : page.items) out.push_back(series_json(s));
  const json next = page.next_cursor ? json(*page.next_cursor) : json();
  return json_response(bhttp::status::ok, {{"series", out}, {"next_after", next}}, req);
}

Result<http::Response> get_series(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_RETURN_IF_ERROR(require_reader(ctx, req));
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  BF_ASSIGN_OR_RETURN(const auto limit, int_query(m, "limit", 1, 5000));
  BF_ASSIGN_OR_RETURN(const auto after_point, int_query(m, "after_point", 1, INT64_MAX));
  BF_ASSIGN_OR_RETURN(const auto series,
                      ctx.store.history().get_series(id, after_point, static_cast<int>(limit.value_or(1000))));
  store::RegressionFilter f;
  f.series_id = id;
  BF_ASSIGN_OR_RETURN(const auto regressions,
                      ctx.store.history().list_regressions(f, std::nullopt, kSeriesRegressions));
  json out = series_json(series.series);
  json points = json::array();
  for (const auto& p : series.points) points.push_back(point_json(p));
  json changes = json::array();
  for (const auto& r : regressions.items) changes.push_back(regression_json(r));
  out["points"] = std::move(points);
  out["next_after_point"] = series.next_cursor ? json(*series.next_cursor) : json();
  out["regressions"] = std::move(changes);
  return json_response(bhttp::status::ok, out, req);
}

// ---- regressions ------------------------------------------------------------------------------

Result<http::Response> list_regressions(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_RETURN_IF_ERROR(require_reader(ctx, req));
  BF_ASSIGN_OR_RETURN(const auto limit, int_query(m, "limit", 1, 500));
  BF_ASSIGN_OR_RETURN(const auto before, int_query(m, "before", 1, INT64_MAX));
  BF_ASSIGN_OR_RETURN(const auto series, int_query(m, "series", 1, INT64_MAX));
  store::RegressionFilter f;
  f.series_id = series;
  const std::string state = str_query(m, "state").value_or("open");
  if (state != "all") {
    f.state = store::parse_regression_state(state);
    if (!f.state) return Error::invalid("query.state", "must be open, acknowledged, resolved or all");
  }
  const std::string direction = str_query(m, "direction").value_or("regression");
  if (direction != "all") {
    f.direction = history::parse_change_direction(direction);
    if (!f.direction) return Error::invalid("query.direction", "must be regression, improvement or all");
  }
  BF_ASSIGN_OR_RETURN(const auto page,
                      ctx.store.history().list_regressions(f, before, static_cast<int>(limit.value_or(100))));
  json out = json::array();
  for (const auto& r : page.items) out.push_back(regression_json(r));
  const json next = page.next_cursor ? json(*page.next_cursor) : json();
  return json_response(bhttp::status::ok, {{"regressions", out}, {"next_before", next}}, req);
}

Result<http::Response> get_regression(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_RETURN_IF_ERROR(require_reader(ctx, req));
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  BF_ASSIGN_OR_RETURN(const auto regression, ctx.store.history().get_regression(id));
  return json_response(bhttp::status::ok, regression_json(regression), req);
}

Result<http::Response> acknowledge_regression(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  return change_regression_state(ctx, req, m, store::RegressionState::kAcknowledged);
}

Result<http::Response> resolve_regression(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  return change_regression_state(ctx, req, m, store::RegressionState::kResolved);
}

Result<http::Response> reopen_regression(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  return change_regression_state(ctx, req, m, store::RegressionState::kOpen);
}

}  // namespace benchfleet::api
