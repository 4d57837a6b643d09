// Timestamps as the HTTP API writes them: RFC 3339, UTC, with milliseconds
// ("2026-11-21T20:05:00.123Z").
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"

namespace benchfleet {

// "2026-11-21T20:05:00.123Z" for 1'795'291'500'123.
std::string format_time(TimestampMs ms);

// The inverse of format_time: exactly "YYYY-MM-DDTHH:MM:SS.mmmZ" (24 characters, a real date
// and time of day); nullopt for anything else.
std::optional<TimestampMs> parse_time(std::string_view text);

}  // namespace benchfleet
