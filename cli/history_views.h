// Text views of the history API's JSON: schedules, series with their points, and
// regressions. Pure functions, as views.h: a missing member shows as "-" or "?".
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace benchfleet::cli {

// ScheduleList -> "ID  NAME  CRON  STATE  NEXT DUE  LAST RUN  RUNS  MISSED".
std::string schedules_view(const nlohmann::json& schedule_list);
// Schedule -> key/value lines and the matrix's axes.
std::string schedule_view(const nlohmann::json& schedule);
// SeriesList -> "ID  MODEL  BATCH  MODE  DTYPE  RUNTIME  GPU  BUILD  POINTS  LAST TORCH  LAST MEDIAN  OPEN".
std::string series_list_view(const nlohmann::json& series_list);
// SeriesDetail -> the key, then "TORCH  GIT  RUN  STATUS  MEDIAN  CI" per point, then its regressions.
std::string series_view(const nlohmann::json& series);
// RegressionList -> "ID  SERIES  DIRECTION  STATE  BEFORE  AFTER  RATIO  P  LAST GOOD -> FIRST BAD  DETECTED".
std::string regressions_view(const nlohmann::json& regression_list);
// Regression -> one line: "regression 4 acknowledged: ... 10.012 -> 11.503 ms (x1.149)".
std::string regression_line(const nlohmann::json& regression);

}  // namespace benchfleet::cli
