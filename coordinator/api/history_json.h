// The JSON views of schedules, series, their points and regressions: the one place
// their shapes are built, for the API handlers and for the webhook bodies the alert sender
// posts (coordinator/history_worker.cpp). Shapes: docs/design.md and openapi.json.
#pragma once

#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "coordinator/history/change_detector.h"
#include "coordinator/store/store.h"

namespace benchfleet::api {

// "regression" or "improvement".
std::string_view to_string(history::ChangeDirection direction);
std::optional<history::ChangeDirection> parse_change_direction(std::string_view s);

nlohmann::json schedule_json(const store::ScheduleInfo& schedule);
// {"model","batch","mode","dtype","runtime","gpu","torch_build"}
nlohmann::json series_key_json(const store::SeriesKey& key);
nlohmann::json series_json(const store::SeriesInfo& series);
nlohmann::json point_json(const store::SeriesPoint& point);
nlohmann::json point_ref_json(const store::PointRef& ref);
nlohmann::json regression_json(const store::RegressionInfo& regression);

// The webhook body of a new regression: {"event": "regression.opened", "delivery_id", "regression"}.
nlohmann::json regression_opened_event(const store::RegressionInfo& regression, std::int64_t delivery_id);

}  // namespace benchfleet::api
