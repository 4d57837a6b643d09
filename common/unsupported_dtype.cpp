#include "common/unsupported_dtype.h"

#include <algorithm>
#include <regex>
#include <vector>

#include "common/shared_rules.h"

namespace benchfleet {
namespace {

struct UnsupportedDtypeRule {
  std::vector<std::string> dtypes;
  std::size_t max_line_chars = 0;
  std::vector<std::regex> patterns;
};

UnsupportedDtypeRule load_rule() {
  const auto& j = shared_rule("unsupported_dtype.json");
  UnsupportedDtypeRule rule;
  rule.dtypes = j.at("dtypes").get<std::vector<std::string>>();
  rule.max_line_chars = j.at("max_line_chars").get<std::size_t>();
  for (const auto& pattern : j.at("patterns")) {
    rule.patterns.emplace_back(pattern.get<std::string>(), std::regex::ECMAScript | std::regex::icase);
  }
  return rule;
}

const UnsupportedDtypeRule& rule() {
  static const UnsupportedDtypeRule loaded = load_rule();
  return loaded;
}

std::string_view strip(std::string_view s) {
  constexpr std::string_view kBlanks = " \t\r\f\v";
  const auto start = s.find_first_not_of(kBlanks);
  if (start == std::string_view::npos) return {};
  return s.substr(start, s.find_last_not_of(kBlanks) - start + 1);
}

}  // namespace

std::optional<std::string> unsupported_dtype_line(std::string_view dtype, std::string_view message) {
  const auto& r = rule();
  if (std::find(r.dtypes.begin(), r.dtypes.end(), dtype) == r.dtypes.end()) return std::nullopt;
  std::size_t start = 0;
  while (start <= message.size()) {
    std::size_t end = message.find('\n', start);
    if (end == std::string_view::npos) end = message.size();
    const std::string line(message.substr(start, std::min(end - start, r.max_line_chars)));
    for (const auto& pattern : r.patterns) {
      if (std::regex_search(line, pattern)) return std::string(strip(line));
    }
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace benchfleet
