// When a schedule is due: cron expressions, evaluated in UTC at minute resolution. Pure.
//   auto nightly = CronSchedule::parse("30 2 * * *");          // 02:30 UTC every day
//   TimestampMs next = nightly->next_after(now);              // first due time > now
// Accepted: five fields "minute hour day-of-month month day-of-week" with *, numbers, ranges
// (1-5), steps (*/15, 0-30/10), lists (1,15), month names (jan..dec) and day names (sun..sat,
// 0 and 7 both Sunday); and the macros @yearly (@annually), @monthly, @weekly, @daily
// (@midnight), @hourly. As in Vixie cron, when both day-of-month and day-of-week are restricted
// a day matches either.
#pragma once

#include <bitset>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/result.h"

namespace benchfleet::history {

class CronSchedule {
 public:
  // Error{kInvalidArgument} naming the field ("cron") and what is wrong, e.g.
  // "cron: hour 24 is out of range 0-23".
  static Result<CronSchedule> parse(std::string_view expression);

  // The first due time strictly after `t` (a whole minute, UTC). Every valid expression has one
  // within 8 years (Feb 29 included).
  TimestampMs next_after(TimestampMs t) const;

  // The expression as given (trimmed).
  const std::string& text() const { return text_; }

 private:
  CronSchedule() = default;
  std::string text_;
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_of_month_;  // 1..31
  std::bitset<13> months_;         // 1..12
  std::bitset<7> days_of_week_;    // 0 = Sunday
  bool dom_restricted_ = false;
  bool dow_restricted_ = false;
};

}  // namespace benchfleet::history
