// The JSON views of schedules, series and their points: the one place their shapes are built.
// A regression's view is shared with the alert sender (coordinator/services/regression_json.h).
// Shapes: docs/design.md and openapi.json.
#pragma once

#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "coordinator/services/regression_json.h"
#include "coordinator/store/store.h"

namespace benchfleet::api {

nlohmann::json schedule_json(const store::ScheduleInfo& schedule);
nlohmann::json series_json(const store::SeriesInfo& series);
nlohmann::json point_json(const store::SeriesPoint& point);

}  // namespace benchfleet::api
