// Cron expressions (coordinator/rules/cron.h): parsing, its errors, and the next due time,
// checked against dates written out by hand and against a minute-by-minute scan that uses
// gmtime_r (not the code under test) for the calendar.
#include "coordinator/rules/cron.h"

#include <ctime>
#include <random>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/time_format.h"

namespace benchfleet::rules {
namespace {

using ::testing::HasSubstr;

TimestampMs at(const std::string& text) {
  const std::optional<TimestampMs> t = parse_time(text);
  EXPECT_TRUE(t.has_value()) << text;
  return t.value_or(0);
}

CronSchedule cron(const std::string& expression) {
  Result<CronSchedule> parsed = CronSchedule::parse(expression);
  EXPECT_TRUE(parsed.ok()) << expression << ": " << (parsed.ok() ? "" : parsed.error().describe());
  if (!parsed.ok()) return CronSchedule::parse("* * * * *").value();
  return std::move(parsed).value();
}

// The next due time after `from`, as a time string.
std::string next(const std::string& expression, const std::string& from) {
  return format_time(cron(expression).next_after(at(from)));
}

// The error parse gives, as describe() writes it ("cron: ...").
std::string error_of(const std::string& expression) {
  const Result<CronSchedule> parsed = CronSchedule::parse(expression);
  if (parsed.ok()) return "parsed: " + expression;
  EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(parsed.error().field, "cron");
  return parsed.error().describe();
}

TEST(Cron, DailyAtATime) {
  EXPECT_EQ(next("30 2 * * *", "2026-11-25T09:00:00.000Z"), "2026-11-26T02:30:00.000Z");
  EXPECT_EQ(next("30 2 * * *", "2026-11-26T01:00:00.000Z"), "2026-11-26T02:30:00.000Z");
  EXPECT_EQ(cron("  30 2 * * *\t").text(), "30 2 * * *");
}

TEST(Cron, StrictlyAfter) {
  EXPECT_EQ(next("30 2 * * *", "2026-11-26T02:30:00.000Z"), "2026-11-27T02:30:00.000Z");
  EXPECT_EQ(next("30 2 * * *", "2026-11-26T02:29:59.999Z"), "2026-11-26T02:30:00.000Z");
  EXPECT_EQ(next("30 2 * * *", "2026-11-26T02:30:00.001Z"), "2026-11-27T02:30:00.000Z");
  EXPECT_EQ(next("* * * * *", "2026-11-26T02:30:00.000Z"), "2026-11-26T02:31:00.000Z");
  EXPECT_EQ(next("* * * * *", "2026-11-26T02:30:59.999Z"), "2026-11-26T02:31:00.000Z");
}

TEST(Cron, MinuteHourDayMonthAndYearBoundaries) {
  EXPECT_EQ(next("*/15 * * * *", "2026-11-25T10:07:30.000Z"), "2026-11-25T10:15:00.000Z");
  EXPECT_EQ(next("*/15 * * * *", "2026-11-25T10:45:00.000Z"), "2026-11-25T11:00:00.000Z");
  EXPECT_EQ(next("0 9-17 * * *", "2026-11-25T17:30:00.000Z"), "2026-11-26T09:00:00.000Z");
  EXPECT_EQ(next("0 0 1 * *", "2026-01-31T12:00:00.000Z"), "2026-02-01T00:00:00.000Z");
  EXPECT_EQ(next("0 0 31 * *", "2026-04-01T00:00:00.000Z"), "2026-05-31T00:00:00.000Z");  // April has 30
  EXPECT_EQ(next("* * * * *", "2026-12-31T23:59:30.000Z"), "2027-01-01T00:00:00.000Z");
  EXPECT_EQ(next("0 0 1 1 *", "2026-06-01T00:00:00.000Z"), "2027-01-01T00:00:00.000Z");
  EXPECT_EQ(next("59 23 31 12 *", "2026-12-31T23:59:00.000Z"), "2027-12-31T23:59:00.000Z");
}

TEST(Cron, February29) {
  EXPECT_EQ(next("0 0 29 2 *", "2026-11-25T00:00:00.000Z"), "2028-02-29T00:00:00.000Z");
  EXPECT_EQ(next("0 0 29 2 *", "2028-02-29T00:00:00.000Z"), "2032-02-29T00:00:00.000Z");
  // 2100 is not a leap year: eight years from one Feb 29 to the next.
  EXPECT_EQ(next("0 0 29 2 *", "2096-03-01T00:00:00.000Z"), "2104-02-29T00:00:00.000Z");
  EXPECT_EQ(next("0 0 28 2 *", "2100-02-28T00:00:00.000Z"), "2101-02-28T00:00:00.000Z");
}

TEST(Cron, DayOfMonthOrDayOfWeekWhenBothRestricted) {
  // The 13th or a Friday: 2026-11-25 is a Wednesday; December's Fridays are the 4th, 11th,
  // 18th, and the 13th is a Sunday.
  EXPECT_EQ(next("0 12 13 * 5", "2026-11-25T00:00:00.000Z"), "2026-11-27T12:00:00.000Z");
  EXPECT_EQ(next("0 12 13 * 5", "2026-12-11T12:00:00.000Z"), "2026-12-13T12:00:00.000Z");
  EXPECT_EQ(next("0 12 13 * 5", "2026-12-13T12:00:00.000Z"), "2026-12-18T12:00:00.000Z");
  // Only one restricted: that one decides.
  EXPECT_EQ(next("0 9 * * mon-fri", "2026-11-28T10:00:00.000Z"), "2026-11-30T09:00:00.000Z");
  EXPECT_EQ(next("0 0 13 * *", "2026-11-25T00:00:00.000Z"), "2026-12-13T00:00:00.000Z");
  // Vixie's rule: a field beginning with '*' is not restricted, so */10 and Monday must both
  // hold (days 1, 11, 21, 31 that are Mondays: 2026-12-21) ...
  EXPECT_EQ(next("0 0 */10 * 1", "2026-11-25T00:00:00.000Z"), "2026-12-21T00:00:00.000Z");
  // ... while 1-31/10 is restricted: either (Monday 2026-11-30 first).
  EXPECT_EQ(next("0 0 1-31/10 * 1", "2026-11-25T00:00:00.000Z"), "2026-11-30T00:00:00.000Z");
  // A Feb 1 that is a Monday (2027, then 2038).
  EXPECT_EQ(next("0 0 */31 2 1", "2026-11-25T00:00:00.000Z"), "2027-02-01T00:00:00.000Z");
  EXPECT_EQ(next("0 0 */31 2 1", "2027-02-01T00:00:00.000Z"), "2038-02-01T00:00:00.000Z");
}

TEST(Cron, SundayIsZeroAndSevenAndSun) {
  for (const char* e : {"0 0 * * 0", "0 0 * * 7", "0 0 * * sun", "0 0 * * SUN", "0 0 * * 6-7"}) {
    EXPECT_EQ(next(e, "2026-11-25T00:00:00.000Z"),
              std::string(e) == "0 0 * * 6-7" ? "2026-11-28T00:00:00.000Z" : "2026-11-29T00:00:00.000Z")
        << e;
  }
}

TEST(Cron, ListsRangesStepsAndNames) {
  EXPECT_EQ(next("0-30/10,45 * * * *", "2026-11-25T10:31:00.000Z"), "2026-11-25T10:45:00.000Z");
  EXPECT_EQ(next("0-30/10,45 * * * *", "2026-11-25T10:46:00.000Z"), "2026-11-25T11:00:00.000Z");
  EXPECT_EQ(next("0-30/10,45 * * * *", "2026-11-25T11:00:00.000Z"), "2026-11-25T11:10:00.000Z");
  EXPECT_EQ(next("0 0 1 */3 *", "2026-05-15T00:00:00.000Z"), "2026-07-01T00:00:00.000Z");
  EXPECT_EQ(next("0 0 1 jan,Jul *", "2026-02-01T00:00:00.000Z"), "2026-07-01T00:00:00.000Z");
  EXPECT_EQ(next("0 0 1 FEB-apr *", "2026-05-01T00:00:00.000Z"), "2027-02-01T00:00:00.000Z");
  EXPECT_EQ(next("15 6,18 * * sat,sun", "2026-11-28T07:00:00.000Z"), "2026-11-28T18:15:00.000Z");
  EXPECT_EQ(next("5 4 * * *", "2026-11-25T04:05:00.000Z"), "2026-11-26T04:05:00.000Z");
}

TEST(Cron, Macros) {
  const std::string from = "2026-11-25T10:20:00.000Z";  // a Wednesday
  EXPECT_EQ(next("@hourly", from), "2026-11-25T11:00:00.000Z");
  EXPECT_EQ(next("@daily", from), "2026-11-26T00:00:00.000Z");
  EXPECT_EQ(next("@midnight", from), "2026-11-26T00:00:00.000Z");
  EXPECT_EQ(next("@weekly", from), "2026-11-29T00:00:00.000Z");
  EXPECT_EQ(next("@monthly", from), "2026-12-01T00:00:00.000Z");
  EXPECT_EQ(next("@yearly", from), "2027-01-01T00:00:00.000Z");
  EXPECT_EQ(next("@annually", from), "2027-01-01T00:00:00.000Z");
  EXPECT_EQ(next(" @DAILY ", from), "2026-11-26T00:00:00.000Z");
  EXPECT_EQ(cron(" @daily ").text(), "@daily");
}

TEST(Cron, TimesBeforeTheEpoch) {
  EXPECT_EQ(cron("* * * * *").next_after(-1), 0);
  EXPECT_EQ(cron("* * * * *").next_after(-60'001), -60'000);
  EXPECT_EQ(cron("0 0 1 1 *").next_after(-86'400'000 * 100LL), 0);
  EXPECT_EQ(cron("0 0 1 1 *").next_after(0), at("1971-01-01T00:00:00.000Z"));
}

TEST(Cron, ErrorsNameWhatIsWrong) {
  EXPECT_THAT(error_of(""), HasSubstr("cron: the expression is empty"));
  EXPECT_THAT(error_of("   "), HasSubstr("cron: the expression is empty"));
  EXPECT_THAT(error_of("* * * *"),
              HasSubstr("cron: expected 5 fields (minute hour day-of-month month day-of-week), got 4"));
  EXPECT_THAT(error_of("* * * * * *"), HasSubstr("got 6"));
  EXPECT_EQ(error_of("0 24 * * *"), "cron: hour 24 is out of range 0-23");
  EXPECT_EQ(error_of("60 * * * *"), "cron: minute 60 is out of range 0-59");
  EXPECT_EQ(error_of("0 0 0 * *"), "cron: day-of-month 0 is out of range 1-31");
  EXPECT_EQ(error_of("0 0 32 * *"), "cron: day-of-month 32 is out of range 1-31");
  EXPECT_EQ(error_of("0 0 * 13 *"), "cron: month 13 is out of range 1-12");
  EXPECT_EQ(error_of("0 0 * 0 *"), "cron: month 0 is out of range 1-12");
  EXPECT_EQ(error_of("0 0 * * 8"), "cron: day-of-week 8 is out of range 0-7");
  EXPECT_EQ(error_of("99999999999 * * * *"), "cron: minute 99999999999 is out of range 0-59");
  EXPECT_EQ(error_of("0 1-30 * * *"), "cron: hour 30 is out of range 0-23");
  EXPECT_THAT(error_of("*/0 * * * *"), HasSubstr("cron: minute: bad step '0' in '*/0' (a number 1-59)"));
  EXPECT_THAT(error_of("*/x * * * *"), HasSubstr("bad step 'x'"));
  EXPECT_THAT(error_of("*/ * * * *"), HasSubstr("bad step ''"));
  EXPECT_THAT(error_of("0 */24 * * *"), HasSubstr("cron: hour: bad step '24'"));
  EXPECT_THAT(error_of("5/15 * * * *"), HasSubstr("a step needs '*' or a range before it ('5/15': write 5-59/15)"));
  EXPECT_THAT(error_of("1,,2 * * * *"), HasSubstr("cron: minute: empty list item in '1,,2'"));
  EXPECT_THAT(error_of("0 1, * * *"), HasSubstr("cron: hour: empty list item"));
  EXPECT_THAT(error_of("30-5 * * * *"), HasSubstr("cron: minute: range '30-5' runs backwards"));
  EXPECT_THAT(error_of("-5 * * * *"), HasSubstr("cron: minute: a value is missing"));
  EXPECT_THAT(error_of("x * * * *"), HasSubstr("cron: minute: 'x' is not a number in 0-59"));
  EXPECT_THAT(error_of("0 0 * foo *"), HasSubstr("cron: month: 'foo' is neither a number in 1-12 nor a name"));
  EXPECT_THAT(error_of("0 0 * * funday"), HasSubstr("cron: day-of-week: 'funday' is neither a number"));
  EXPECT_THAT(error_of("0 0 * mon *"), HasSubstr("'mon' is neither"));  // a day name in the month field
  EXPECT_THAT(error_of("@reboot"), HasSubstr("cron: unknown macro '@reboot'"));
  EXPECT_THAT(error_of("@daily 5"), HasSubstr("unknown macro"));
  EXPECT_THAT(error_of("0 0 30 2 *"), HasSubstr("cron: '0 0 30 2 *' is never due"));
  EXPECT_THAT(error_of("0 0 31 4,6,9,11 *"), HasSubstr("is never due"));
  EXPECT_TRUE(CronSchedule::parse("0 0 31 * *").ok());
  EXPECT_TRUE(CronSchedule::parse("0 0 30 2 1").ok());  // either: every Monday in February
}

// ---- against a scan that reads the calendar from gmtime_r -------------------------------------

struct Fields {
  std::vector<int> minutes, hours, days, months, weekdays;  // empty: '*'
};

std::string list_text(const std::vector<int>& values) {
  if (values.empty()) return "*";
  std::string text;
  for (int v : values) {
    if (!text.empty()) text += ',';
    text += std::to_string(v);
  }
  return text;
}

bool in(const std::vector<int>& values, int v) {
  if (values.empty()) return true;
  for (int x : values) {
    if (x == v) return true;
  }
  return false;
}

bool weekday_in(const std::vector<int>& values, int v) { return in(values, v) || (v == 0 && in(values, 7)); }

// The first matching minute after `from`, day by day and then minute by minute, within `days`;
// -1 when none.
TimestampMs scan(const Fields& f, TimestampMs from, int days) {
  TimestampMs minute = (from / 60'000 + 1) * 60'000;  // from >= 0 here
  const TimestampMs end = minute + days * 86'400'000LL;
  while (minute < end) {
    const std::time_t secs = minute / 1000;
    std::tm tm{};
    gmtime_r(&secs, &tm);
    const bool dom = in(f.days, tm.tm_mday);
    const bool dow = weekday_in(f.weekdays, tm.tm_wday);
    const bool day =
        in(f.months, tm.tm_mon + 1) && (!f.days.empty() && !f.weekdays.empty() ? (dom || dow) : (dom && dow));
    if (!day) {
      minute += (1440 - (tm.tm_hour * 60 + tm.tm_min)) * 60'000LL;  // next midnight
      continue;
    }
    if (in(f.hours, tm.tm_hour) && in(f.minutes, tm.tm_min)) return minute;
    minute += 60'000;
  }
  return -1;
}

std::vector<int> random_values(std::mt19937_64& rng, int lo, int hi, int max_count) {
  std::vector<int> values;
  const int count = 1 + static_cast<int>(rng() % static_cast<std::uint64_t>(max_count));
  for (int k = 0; k < count; ++k)
    values.push_back(lo + static_cast<int>(rng() % static_cast<std::uint64_t>(hi - lo + 1)));
  return values;
}

TEST(Cron, AgreesWithACalendarScanOnRandomExpressions) {
  std::mt19937_64 rng(20);
  const TimestampMs start = at("2024-01-01T00:00:00.000Z");
  int compared = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Fields f;
    f.minutes = random_values(rng, 0, 59, 3);
    f.hours = random_values(rng, 0, 23, 3);
    if (rng() % 2 == 0) f.days = random_values(rng, 1, 31, 3);
    if (rng() % 3 == 0) f.months = random_values(rng, 1, 12, 4);
    if (rng() % 2 == 0) f.weekdays = random_values(rng, 0, 7, 3);
    const std::string expression = list_text(f.minutes) + " " + list_text(f.hours) + " " + list_text(f.days) + " " +
                                   list_text(f.months) + " " + list_text(f.weekdays);
    const Result<CronSchedule> schedule = CronSchedule::parse(expression);
    const TimestampMs from = start + static_cast<TimestampMs>(rng() % (6ULL * 365 * 86'400'000));
    const TimestampMs expected = scan(f, from, 9 * 366);
    if (!schedule.ok()) {
      // Refused only when never due (e.g. day 31 of February alone).
      EXPECT_EQ(expected, -1) << expression << ": " << schedule.error().describe();
      EXPECT_THAT(schedule.error().message, HasSubstr("never due")) << expression;
      continue;
    }
    ASSERT_NE(expected, -1) << expression;
    EXPECT_EQ(format_time(schedule->next_after(from)), format_time(expected))
        << expression << " after " << format_time(from);
    ++compared;
  }
  EXPECT_GT(compared, 250);
}

}  // namespace
}  // namespace benchfleet::rules
