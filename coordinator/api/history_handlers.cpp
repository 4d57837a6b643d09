// Handlers for schedules, series and regressions. Shapes: history_json.h.
#include <string>

#include "common/codecs.h"
#include "common/json_optional.h"
#include "common/matrix.h"
#include "coordinator/api/handlers.h"
#include "coordinator/api/history_json.h"
#include "coordinator/api/history_requests.h"
#include "coordinator/rules/run_summary.h"

namespace benchfleet::api {
namespace {

namespace bhttp = boost::beast::http;
using http::json_response;
using nlohmann::json;

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
  return decode_state_note(body);
}

Result<http::Response> change_regression_state(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m,
                                               store::RegressionState state) {
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  BF_ASSIGN_OR_RETURN(const auto note, read_note(ctx, req));
  BF_ASSIGN_OR_RETURN(const auto regression, ctx.store.regressions().set_regression_state(id, state, note));
  return json_response(bhttp::status::ok, services::regression_json(regression), req);
}

}  // namespace

// ---- schedules --------------------------------------------------------------------------------

Result<http::Response> create_schedule(ApiContext& ctx, const http::Request& req, const http::RouteMatch&) {
  BF_ASSIGN_OR_RETURN(const json body, json_body(ctx, req));
  BF_ASSIGN_OR_RETURN(ScheduleRequest request, decode_schedule_request(body));
  if (auto resolved = resolve_models(request.matrix, *ctx.models.catalog()); !resolved.ok())
    return under_matrix(resolved.error());
  // The matrix must expand now; the schedule expands it again each time it fires.
  if (auto jobs = expand_submitted_matrix(ctx, request.matrix); !jobs.ok()) {
    return under_matrix(jobs.error());
  }
  BF_ASSIGN_OR_RETURN(const auto created,
                      ctx.store.schedules().create_schedule(request.matrix, request.cron, request.enabled));
  auto res = json_response(bhttp::status::created, schedule_json(created), req);
  res.set(bhttp::field::location, "/api/v1/schedules/" + std::to_string(created.id));
  return res;
}

Result<http::Response> list_schedules(ApiContext& ctx, const http::Request& req, const http::RouteMatch&) {
  BF_ASSIGN_OR_RETURN(const auto schedules, ctx.store.schedules().list_schedules());
  json out = json::array();
  for (const auto& s : schedules) out.push_back(schedule_json(s));
  return json_response(bhttp::status::ok, {{"schedules", out}}, req);
}

Result<http::Response> get_schedule(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  BF_ASSIGN_OR_RETURN(const auto schedule, ctx.store.schedules().get_schedule(id));
  return schedule_response(bhttp::status::ok, schedule, req);
}

namespace {

json mode_summary_json(const rules::ModeSummary& s) {
  return {{"key", s.key},
          {"build", s.build},
          {"runtime", to_string(s.runtime)},
          {"mode", to_string(s.mode)},
          {"torch_versions", s.torch_versions},
          {"geomean_speedup", or_null(s.geomean_speedup)},
          {"speedup_covered", s.speedup_covered},
          {"speedup_total", s.speedup_total},
          {"passed", s.passed},
          {"attempted", s.attempted},
          {"pass_rate", or_null(s.pass_rate)},
          {"oom", s.oom},
          {"errors", s.errors},
          {"wrong", s.wrong},
          {"unsupported", s.unsupported},
          {"compile_ms_median", or_null(s.compile_ms_median)},
          {"memory_ratio_geomean", or_null(s.memory_ratio_geomean)}};
}

}  // namespace

// Per run of the schedule (its latest `limit`, oldest first), per compiled (build, runtime,
// mode): geomean speedup, pass rate, compile time and memory ratio over the run's tables. Each
// run's report is built as GET /runs/{id}/report builds it.
Result<http::Response> schedule_summary(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  BF_ASSIGN_OR_RETURN(const auto limit, int_query(m, "limit", 1, 200));
  BF_ASSIGN_OR_RETURN(const rules::Stat stat, stat_query(m));
  BF_ASSIGN_OR_RETURN(const auto schedule_and_runs,
                      ctx.store.schedules().schedule_runs(id, static_cast<int>(limit.value_or(30))));
  const auto& [schedule, run_ids] = schedule_and_runs;
  json runs = json::array();
  for (auto it = run_ids.rbegin(); it != run_ids.rend(); ++it) {
    BF_ASSIGN_OR_RETURN(const auto run, ctx.store.runs().get_run(*it));
    BF_ASSIGN_OR_RETURN(const rules::Report built, report_of_run(ctx, run, stat, false));
    json columns = json::array();
    for (const rules::ModeSummary& s : rules::summarize(built)) columns.push_back(mode_summary_json(s));
    runs.push_back({{"run_id", run.id},
                    {"name", run.name},
                    {"created_at", format_time(run.created_at)},
                    {"state", run.state},
                    {"columns", std::move(columns)}});
  }
  return json_response(bhttp::status::ok,
                       {{"schedule", {{"id", schedule.id}, {"name", schedule.name}}},
                        {"stat", rules::to_string(stat)},
                        {"runs", std::move(runs)}},
                       req);
}

Result<http::Response> pause_schedule(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  BF_ASSIGN_OR_RETURN(const auto schedule, ctx.store.schedules().set_schedule_enabled(id, false));
  return schedule_response(bhttp::status::ok, schedule, req);
}

Result<http::Response> resume_schedule(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  BF_ASSIGN_OR_RETURN(const auto schedule, ctx.store.schedules().set_schedule_enabled(id, true));
  return schedule_response(bhttp::status::ok, schedule, req);
}

Result<http::Response> delete_schedule(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  BF_RETURN_IF_ERROR(ctx.store.schedules().delete_schedule(id));
  http::Response res{bhttp::status::no_content, req.version()};
  res.keep_alive(req.keep_alive());
  res.prepare_payload();
  return res;
}

// ---- series -----------------------------------------------------------------------------------

Result<http::Response> list_series(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(SeriesListQuery q, series_list_query(m));
  // A short model name finds its catalog id's series ("resnet18"); one the catalog does not know
  // is looked up as given (series outlive a model's removal from the catalog).
  if (q.filter.model && !ctx.models.catalog()->ids_matching(*q.filter.model).empty()) {
    BF_ASSIGN_OR_RETURN(q.filter.model, ctx.models.catalog()->resolve_id(*q.filter.model, "query.model"));
  }
  BF_ASSIGN_OR_RETURN(const auto page, ctx.store.series().list_series(q.filter, q.after, q.limit));
  // A short name (no '/') neither the catalog nor any series knows ("resnet": a part of several
  // ids, whole in none) is a mistake to name, not an empty answer; a whole id is looked up as given.
  if (page.items.empty() && !q.after && q.filter.model && q.filter.model->find('/') == std::string::npos &&
      ctx.models.catalog()->ids_matching(*q.filter.model).empty()) {
    BF_ASSIGN_OR_RETURN(q.filter.model, ctx.models.catalog()->resolve_id(*q.filter.model, "query.model"));
  }
  json out = json::array();
  for (const auto& s : page.items) out.push_back(series_json(s));
  const json next = page.next_cursor ? json(*page.next_cursor) : json();
  return json_response(bhttp::status::ok, {{"series", out}, {"next_after", next}}, req);
}

Result<http::Response> get_series(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  BF_ASSIGN_OR_RETURN(const SeriesPointsQuery q, series_points_query(m));
  BF_ASSIGN_OR_RETURN(const auto series, ctx.store.series().get_series(id, q.after_point, q.limit));
  store::RegressionFilter f;
  f.series_id = id;
  BF_ASSIGN_OR_RETURN(const auto regressions,
                      ctx.store.regressions().list_regressions(f, std::nullopt, kSeriesRegressions));
  json out = series_json(series.series);
  json points = json::array();
  for (const auto& p : series.points) points.push_back(point_json(p));
  json changes = json::array();
  for (const auto& r : regressions.items) changes.push_back(services::regression_json(r));
  out["points"] = std::move(points);
  out["next_after_point"] = series.next_cursor ? json(*series.next_cursor) : json();
  out["regressions"] = std::move(changes);
  return json_response(bhttp::status::ok, out, req);
}

// ---- regressions ------------------------------------------------------------------------------

Result<http::Response> list_regressions(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const RegressionListQuery q, regression_list_query(m));
  BF_ASSIGN_OR_RETURN(const auto page, ctx.store.regressions().list_regressions(q.filter, q.before, q.limit));
  json out = json::array();
  for (const auto& r : page.items) out.push_back(services::regression_json(r));
  const json next = page.next_cursor ? json(*page.next_cursor) : json();
  return json_response(bhttp::status::ok, {{"regressions", out}, {"next_before", next}}, req);
}

Result<http::Response> get_regression(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  BF_ASSIGN_OR_RETURN(const auto regression, ctx.store.regressions().get_regression(id));
  return json_response(bhttp::status::ok, services::regression_json(regression), req);
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
