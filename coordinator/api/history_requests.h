// What the schedule, series and regression routes read from a request: bodies and queries
// decoded and checked, errors naming the field ("cron", "matrix.models", "note",
// "query.state"). Pure (no store, no context), so the fuzz target fuzz_history_requests runs
// them on arbitrary input.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "common/http/router.h"
#include "common/result.h"
#include "common/types.h"
#include "coordinator/store/history_types.h"

namespace benchfleet::api {

// Longest note on a regression (bytes).
inline constexpr std::size_t kMaxNoteBytes = 4096;

// POST /api/v1/schedules: {"cron": "...", "enabled": bool?, "matrix": MatrixSpec}. `cron` comes
// back in its canonical text (CronSchedule::text). The matrix is decoded, not yet expanded.
struct ScheduleRequest {
  std::string cron;
  bool enabled = true;
  MatrixSpec matrix;
};
Result<ScheduleRequest> decode_schedule_request(const nlohmann::json& body);

// The optional {"note": "..."} of a regression's state change: display text (no control,
// invisible or bidirectional characters; newlines and tabs allowed), at most kMaxNoteBytes.
Result<std::optional<std::string>> decode_state_note(const nlohmann::json& body);

// GET /api/v1/series: the cell filters, `after` (a series id) and `limit` (1..500, default 100).
struct SeriesListQuery {
  store::SeriesFilter filter;
  std::optional<std::int64_t> after;
  int limit = 100;
};
Result<SeriesListQuery> series_list_query(const http::RouteMatch& match);

// GET /api/v1/series/{id}: `after_point` and `limit` (1..5000, default 1000).
struct SeriesPointsQuery {
  std::optional<std::int64_t> after_point;
  int limit = 1000;
};
Result<SeriesPointsQuery> series_points_query(const http::RouteMatch& match);

// GET /api/v1/regressions: `state` (open by default, or all), `direction` (regression by
// default, or all), `series`, `before` and `limit` (1..500, default 100).
struct RegressionListQuery {
  store::RegressionFilter filter;
  std::optional<std::int64_t> before;
  int limit = 100;
};
Result<RegressionListQuery> regression_list_query(const http::RouteMatch& match);

}  // namespace benchfleet::api
