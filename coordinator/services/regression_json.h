// The JSON view of a regression: the one place its shape is built, for the API handlers
// (coordinator/api/history_json.h) and for the webhook bodies the alert sender posts
// (history_worker.cpp). Shapes: docs/design.md and openapi.json.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "coordinator/store/history_types.h"

namespace benchfleet::services {

// {"model","batch","mode","dtype","runtime","gpu","torch_build"}
nlohmann::json series_key_json(const store::SeriesKey& key);
nlohmann::json point_ref_json(const store::PointRef& ref);
nlohmann::json regression_json(const store::RegressionInfo& regression);

// The webhook body of a new regression: {"event": "regression.opened", "delivery_id", "regression"}.
nlohmann::json regression_opened_event(const store::RegressionInfo& regression, std::int64_t delivery_id);

}  // namespace benchfleet::services
