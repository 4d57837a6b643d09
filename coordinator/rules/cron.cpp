#include "coordinator/rules/cron.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

namespace benchfleet::rules {
namespace {

constexpr std::int64_t kMsPerMinute = 60'000;
constexpr std::int64_t kMinutesPerDay = 1440;
// The Gregorian calendar repeats (dates and weekdays) every 400 years: an expression that
// matches no day of one cycle matches none ever.
constexpr std::int64_t kDaysPer400Years = 146'097;

// One cron field: its name in messages, its range, and the names it accepts for its values.
struct FieldSpec {
  const char* name;
  int min;
  int max;                                   // inclusive; day-of-week accepts 7 (Sunday) and stores it as 0
  const std::array<const char*, 13>* names;  // names[v] for value v, or nullptr
};

constexpr std::array<const char*, 13> kMonthNames = {nullptr, "jan", "feb", "mar", "apr", "may", "jun",
                                                     "jul",   "aug", "sep", "oct", "nov", "dec"};
constexpr std::array<const char*, 13> kDayNames = {"sun",   "mon",   "tue",   "wed",   "thu",   "fri",  "sat",
                                                   nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};

constexpr FieldSpec kMinute{"minute", 0, 59, nullptr};
constexpr FieldSpec kHour{"hour", 0, 23, nullptr};
constexpr FieldSpec kDayOfMonth{"day-of-month", 1, 31, nullptr};
constexpr FieldSpec kMonth{"month", 1, 12, &kMonthNames};
constexpr FieldSpec kDayOfWeek{"day-of-week", 0, 7, &kDayNames};

Error cron_error(std::string message) { return Error::invalid("cron", std::move(message)); }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string range_text(const FieldSpec& spec) { return std::to_string(spec.min) + "-" + std::to_string(spec.max); }

// A number or (where the field has them) a name; checked against the field's range.
Result<int> parse_value(std::string_view text, const FieldSpec& spec) {
  if (text.empty()) return cron_error(std::string(spec.name) + ": a value is missing");
  const bool all_digits =
      std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
  if (all_digits) {
    // More digits than any field's range has are out of range; no overflow to worry about.
    if (text.size() > 4) {
      return cron_error(std::string(spec.name) + " " + std::string(text) + " is out of range " + range_text(spec));
    }
    int v = 0;
    for (char c : text) v = v * 10 + (c - '0');
    if (v < spec.min || v > spec.max) {
      return cron_error(std::string(spec.name) + " " + std::string(text) + " is out of range " + range_text(spec));
    }
    return v;
  }
  if (spec.names != nullptr) {
    const std::string name = lower(text);
    for (std::size_t v = 0; v < spec.names->size(); ++v) {
      const char* candidate = (*spec.names)[v];
      if (candidate != nullptr && name == candidate) return static_cast<int>(v);
    }
    return cron_error(std::string(spec.name) + ": '" + std::string(text) + "' is neither a number in " +
                      range_text(spec) + " nor a name (" + (spec.names == &kMonthNames ? "jan..dec" : "sun..sat") +
                      ")");
  }
  return cron_error(std::string(spec.name) + ": '" + std::string(text) + "' is not a number in " + range_text(spec));
}

// Sets the values of one field ("*", "5", "1-5", "*/15", "0-30/10", lists of those) in `bits`
// (index = value). Returns whether the field begins with '*' (Vixie cron's test of whether the
// day fields are restricted).
Result<bool> parse_field(std::string_view text, const FieldSpec& spec, std::vector<bool>& bits) {
  bits.assign(static_cast<std::size_t>(spec.max) + 1, false);
  if (text.empty()) return cron_error(std::string(spec.name) + " is empty");
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = text.find(',', start);
    const std::string_view item = text.substr(start, comma == std::string_view::npos ? text.npos : comma - start);
    if (item.empty()) return cron_error(std::string(spec.name) + ": empty list item in '" + std::string(text) + "'");
    std::string_view base = item;
    int step = 1;
    if (const std::size_t slash = item.find('/'); slash != std::string_view::npos) {
      base = item.substr(0, slash);
      const std::string_view step_text = item.substr(slash + 1);
      const bool digits = !step_text.empty() && step_text.size() <= 4 &&
                          std::all_of(step_text.begin(), step_text.end(),
                                      [](char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; });
      if (digits) {
        step = 0;
        for (char c : step_text) step = step * 10 + (c - '0');
      }
      if (!digits || step < 1 || step > spec.max) {
        return cron_error(std::string(spec.name) + ": bad step '" + std::string(step_text) + "' in '" +
                          std::string(item) + "' (a number 1-" + std::to_string(spec.max) + ")");
      }
      if (base != "*" && base.find('-') == std::string_view::npos) {
        return cron_error(std::string(spec.name) + ": a step needs '*' or a range before it ('" + std::string(item) +
                          "': write " + std::string(base) + "-" + std::to_string(spec.max) + "/" +
                          std::string(step_text) + ")");
      }
    }
    int lo = spec.min;
    int hi = spec.max;
    if (base == "*") {
      if (&spec == &kDayOfWeek) hi = 6;  // 7 is Sunday again
    } else if (const std::size_t dash = base.find('-'); dash != std::string_view::npos) {
      BF_ASSIGN_OR_RETURN(lo, parse_value(base.substr(0, dash), spec));
      BF_ASSIGN_OR_RETURN(hi, parse_value(base.substr(dash + 1), spec));
      if (lo > hi) {
        return cron_error(std::string(spec.name) + ": range '" + std::string(base) + "' runs backwards");
      }
    } else {
      BF_ASSIGN_OR_RETURN(lo, parse_value(base, spec));
      hi = lo;
    }
    for (int v = lo; v <= hi; v += step) bits[static_cast<std::size_t>(v)] = true;
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return text.front() == '*';
}

template <std::size_t N>
std::bitset<N> to_bitset(const std::vector<bool>& bits) {
  std::bitset<N> out;
  for (std::size_t v = 0; v < bits.size() && v < N; ++v) out[v] = bits[v];
  return out;
}

std::string_view trim(std::string_view s) {
  const auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_fields(std::string_view s) {
  std::vector<std::string_view> fields;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])) != 0) ++i;
    const std::size_t begin = i;
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i])) == 0) ++i;
    if (i > begin) fields.push_back(s.substr(begin, i - begin));
  }
  return fields;
}

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  std::int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

struct CivilDate {
  std::int64_t year;
  int month;  // 1..12
  int day;    // 1..31
};

// Howard Hinnant's civil_from_days / days_from_civil (proleptic Gregorian, days since
// 1970-01-01).
CivilDate civil_from_days(std::int64_t z) {
  z += 719468;
  const std::int64_t era = floor_div(z, 146097);
  const std::int64_t doe = z - era * 146097;
  const std::int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const std::int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const std::int64_t mp = (5 * doy + 2) / 153;
  const auto day = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  const auto month = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  return {yoe + era * 400 + (month <= 2 ? 1 : 0), month, day};
}

std::int64_t days_from_civil(std::int64_t year, int month, int day) {
  year -= month <= 2 ? 1 : 0;
  const std::int64_t era = floor_div(year, 400);
  const std::int64_t yoe = year - era * 400;
  const std::int64_t mp = month > 2 ? month - 3 : month + 9;
  const std::int64_t doy = (153 * mp + 2) / 5 + day - 1;
  const std::int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

int weekday(std::int64_t days) {  // 0 = Sunday; 1970-01-01 was a Thursday
  const std::int64_t w = (days + 4) % 7;
  return static_cast<int>(w < 0 ? w + 7 : w);
}

}  // namespace

Result<CronSchedule> CronSchedule::parse(std::string_view expression) {
  const std::string_view text = trim(expression);
  if (text.empty()) return cron_error("the expression is empty");
  std::string_view fields_text = text;
  if (text.front() == '@') {
    const std::string macro = lower(text);
    if (macro == "@yearly" || macro == "@annually") {
      fields_text = "0 0 1 1 *";
    } else if (macro == "@monthly") {
      fields_text = "0 0 1 * *";
    } else if (macro == "@weekly") {
      fields_text = "0 0 * * 0";
    } else if (macro == "@daily" || macro == "@midnight") {
      fields_text = "0 0 * * *";
    } else if (macro == "@hourly") {
      fields_text = "0 * * * *";
    } else {
      return cron_error("unknown macro '" + std::string(text) +
                        "' (known: @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly)");
    }
  }
  const std::vector<std::string_view> fields = split_fields(fields_text);
  if (fields.size() != 5) {
    return cron_error("expected 5 fields (minute hour day-of-month month day-of-week), got " +
                      std::to_string(fields.size()));
  }
  CronSchedule schedule;
  schedule.text_ = std::string(text);
  std::vector<bool> bits;
  BF_RETURN_IF_ERROR(parse_field(fields[0], kMinute, bits));
  schedule.minutes_ = to_bitset<60>(bits);
  BF_RETURN_IF_ERROR(parse_field(fields[1], kHour, bits));
  schedule.hours_ = to_bitset<24>(bits);
  BF_ASSIGN_OR_RETURN(const bool dom_star, parse_field(fields[2], kDayOfMonth, bits));
  schedule.days_of_month_ = to_bitset<32>(bits);
  schedule.dom_restricted_ = !dom_star;
  BF_RETURN_IF_ERROR(parse_field(fields[3], kMonth, bits));
  schedule.months_ = to_bitset<13>(bits);
  BF_ASSIGN_OR_RETURN(const bool dow_star, parse_field(fields[4], kDayOfWeek, bits));
  if (bits[7]) bits[0] = true;  // 7 is Sunday too
  schedule.days_of_week_ = to_bitset<7>(bits);
  schedule.dow_restricted_ = !dow_star;

  // "0 0 30 2 *" parses but is never due: refuse it rather than never run. One 400-year cycle
  // holds every combination of date and weekday there is.
  bool ever = false;
  for (std::int64_t d = 0; d < kDaysPer400Years && !ever; ++d) ever = schedule.day_matches(d);
  if (!ever) {
    return cron_error("'" + std::string(text) + "' is never due (no day has that day-of-month" +
                      (schedule.dow_restricted_ && !schedule.dom_restricted_ ? " and day-of-week" : "") +
                      " in those months)");
  }
  return schedule;
}

bool CronSchedule::day_matches(std::int64_t days_since_epoch) const {
  const CivilDate date = civil_from_days(days_since_epoch);
  if (!months_[static_cast<std::size_t>(date.month)]) return false;
  const bool dom = days_of_month_[static_cast<std::size_t>(date.day)];
  const bool dow = days_of_week_[static_cast<std::size_t>(weekday(days_since_epoch))];
  return dom_restricted_ && dow_restricted_ ? (dom || dow) : (dom && dow);
}

TimestampMs CronSchedule::next_after(TimestampMs t) const {
  // Keep the arithmetic below (one cycle of days ahead, in ms) away from int64 overflow.
  constexpr TimestampMs kLatest = std::numeric_limits<TimestampMs>::max() / 2;
  t = std::min(t, kLatest);
  const std::int64_t first_minute = floor_div(t, kMsPerMinute) + 1;  // strictly after t
  const std::int64_t first_day = floor_div(first_minute, kMinutesPerDay);
  std::int64_t minute_of_day = first_minute - first_day * kMinutesPerDay;
  for (std::int64_t day = first_day; day <= first_day + kDaysPer400Years; ++day, minute_of_day = 0) {
    const CivilDate date = civil_from_days(day);
    if (!months_[static_cast<std::size_t>(date.month)]) {
      // Jump to the last day of this month; the loop's ++day starts the next one.
      day = days_from_civil(date.month == 12 ? date.year + 1 : date.year, date.month == 12 ? 1 : date.month + 1, 1) - 1;
      continue;
    }
    if (!day_matches(day)) continue;
    for (auto hour = static_cast<int>(minute_of_day / 60); hour < 24; ++hour) {
      if (!hours_[static_cast<std::size_t>(hour)]) continue;
      const int first = hour == minute_of_day / 60 ? static_cast<int>(minute_of_day % 60) : 0;
      for (int minute = first; minute < 60; ++minute) {
        if (minutes_[static_cast<std::size_t>(minute)]) {
          return (day * kMinutesPerDay + std::int64_t{hour} * 60 + minute) * kMsPerMinute;
        }
      }
    }
  }
  // parse() refused expressions that are never due, so the loop returned within one cycle.
  return kLatest;
}

}  // namespace benchfleet::rules
