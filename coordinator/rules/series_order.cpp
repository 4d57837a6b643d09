#include "coordinator/rules/series_order.h"

#include <algorithm>
#include <cctype>
#include <cstddef>

namespace benchfleet::rules {
namespace {

constexpr std::size_t kWidth = 12;
// A run of 12 nines opens the escape for numbers that do not fit in 12 digits (those with 12
// significant digits, all nines, included): the nines, the count of digits as two digits, the
// digits. Every escaped key sorts after every padded one, and longer numbers after shorter.
constexpr std::string_view kEscape = "999999999999";

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

void append_number(std::string& key, std::string_view digits) {
  digits.remove_prefix(std::min(digits.find_first_not_of('0'), digits.size()));
  if (digits.size() < kWidth || (digits.size() == kWidth && digits != kEscape)) {
    key.append(kWidth - digits.size(), '0');
    key += digits;
    return;
  }
  key += kEscape;
  // Runs of 100 digits and more (never a version) share the count 99 and sort by their digits.
  const std::size_t count = std::min<std::size_t>(digits.size(), 99);
  key += static_cast<char>('0' + count / 10);
  key += static_cast<char>('0' + count % 10);
  key += digits;
}

}  // namespace

std::string version_sort_key(std::string_view version) {
  std::string key;
  key.reserve(version.size() + 4 * kWidth);
  std::size_t i = 0;
  while (i < version.size()) {
    if (!is_digit(version[i])) {
      key += version[i++];
      continue;
    }
    const std::size_t begin = i;
    while (i < version.size() && is_digit(version[i])) ++i;
    append_number(key, version.substr(begin, i - begin));
  }
  return key;
}

}  // namespace benchfleet::rules
