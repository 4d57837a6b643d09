// Optional values as JSON members: the value, or null (a member the API always writes).
//   out["finished_at"] = time_or_null(run.finished_at);   // "2026-12-05T20:00:00.000Z" or null
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/time_format.h"

namespace benchfleet {

template <class T>
nlohmann::json or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// A time as format_time writes it, or null.
inline nlohmann::json time_or_null(const std::optional<TimestampMs>& ms) {
  return ms ? nlohmann::json(format_time(*ms)) : nlohmann::json(nullptr);
}

}  // namespace benchfleet
