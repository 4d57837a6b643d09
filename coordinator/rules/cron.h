// When a schedule is due: cron expressions, evaluated in UTC at minute resolution. Pure.
//   auto nightly = CronSchedule::parse("30 2 * * *");          // 02:30 UTC every day
//   TimestampMs next = nightly->next_after(now);              // first due time > now
// Accepted: five fields "minute hour day-of-month month day-of-week" with *, numbers, ranges
// (1-5), steps (*/15, 0-30/10), lists (1,15), month names (jan..dec) and day names (sun..sat,
// 0 and 7 both Sunday); and the macros @yearly (@annually), @monthly, @weekly, @daily
// (@midnight), @hourly. As in Vixie cron, when both day-of-month and day-of-week are restricted
// (neither field begins with '*') a day matches either; otherwise it must match both. A step
// needs '*' or a range before it ("5/15" is refused: write 5-59/15), and is at most the
// field's largest value. Expressions that are never due ("0 0 30 2 *") are refused.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/result.h"

namespace benchfleet::rules {

class CronSchedule {
 public:
  // Error{kInvalidArgument} naming the field ("cron") and what is wrong, e.g.
  // "cron: hour 24 is out of range 0-23".
  static Result<CronSchedule> parse(std::string_view expression);

  // The first due time strictly after `t` (a whole minute, UTC). Every expression parse()
  // accepts has one: within 8 years where day-of-month alone picks the days (Feb 29 included),
  // within weeks where a day-of-week list does; Vixie's AND rule can put it years out
  // ("0 0 */31 2 1": a Feb 1 that is a Monday). The search covers one 400-year calendar cycle.
  TimestampMs next_after(TimestampMs t) const;

  // The expression as given (trimmed).
  const std::string& text() const { return text_; }

 private:
  CronSchedule() = default;
  bool day_matches(std::int64_t days_since_epoch) const;  // day-of-month/-week rule, and month

  std::string text_;
  std::bitset<60> minutes_;
  std::bitset<24> hours_;
  std::bitset<32> days_of_month_;  // 1..31
  std::bitset<13> months_;         // 1..12
  std::bitset<7> days_of_week_;    // 0 = Sunday
  bool dom_restricted_ = false;
  bool dow_restricted_ = false;
};

}  // namespace benchfleet::rules
