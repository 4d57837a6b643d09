#include "common/time_format.h"

#include <chrono>
#include <cstdio>
#include <ctime>

namespace benchfleet {
namespace {

// The digits of text[at, at + n) as a number; nullopt unless all are digits.
std::optional<int> digits(std::string_view text, std::size_t at, std::size_t n) {
  int value = 0;
  for (std::size_t i = at; i < at + n; ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    value = value * 10 + (text[i] - '0');
  }
  return value;
}

}  // namespace

std::string format_time(TimestampMs ms) {
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms % 1000));
  return buf;
}

std::optional<TimestampMs> parse_time(std::string_view text) {
  // YYYY-MM-DDTHH:MM:SS.mmmZ
  // 0    5  8  11 14 17 20  23
  if (text.size() != 24 || text[4] != '-' || text[7] != '-' || text[10] != 'T' || text[13] != ':' || text[16] != ':' ||
      text[19] != '.' || text[23] != 'Z') {
    return std::nullopt;
  }
  const auto year = digits(text, 0, 4), month = digits(text, 5, 2), day = digits(text, 8, 2);
  const auto hour = digits(text, 11, 2), minute = digits(text, 14, 2), second = digits(text, 17, 2);
  const auto milli = digits(text, 20, 3);
  if (!year || !month || !day || !hour || !minute || !second || !milli) return std::nullopt;
  const std::chrono::year_month_day date{std::chrono::year(*year), std::chrono::month(static_cast<unsigned>(*month)),
                                         std::chrono::day(static_cast<unsigned>(*day))};
  if (!date.ok() || *hour > 23 || *minute > 59 || *second > 59) return std::nullopt;
  const auto since_epoch = std::chrono::sys_days(date).time_since_epoch() + std::chrono::hours(*hour) +
                           std::chrono::minutes(*minute) + std::chrono::seconds(*second) +
                           std::chrono::milliseconds(*milli);
  return std::chrono::duration_cast<std::chrono::milliseconds>(since_epoch).count();
}

}  // namespace benchfleet
