#include "coordinator/rules/torch_version.h"

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <set>

namespace benchfleet::rules {
namespace {

bool is_digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

std::string_view public_version(std::string_view v) { return v.substr(0, v.find('+')); }

}  // namespace

bool version_less(std::string_view a, std::string_view b) {
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    if (is_digit(a[i]) && is_digit(b[j])) {
      const std::size_t ai = i, bj = j;
      while (i < a.size() && is_digit(a[i])) ++i;
      while (j < b.size() && is_digit(b[j])) ++j;
      std::string_view x = a.substr(ai, i - ai), y = b.substr(bj, j - bj);
      x.remove_prefix(std::min(x.find_first_not_of('0'), x.size()));
      y.remove_prefix(std::min(y.find_first_not_of('0'), y.size()));
      if (x.size() != y.size()) return x.size() < y.size();
      if (x != y) return x < y;
    } else {
      if (a[i] != b[j]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[j]);
      ++i;
      ++j;
    }
  }
  if (i < a.size() || j < b.size()) return j < b.size();  // a prefix sorts first
  return a < b;                                           // equal as versions ("2.06" and "2.6"): keep the order strict
}

std::string torch_versions_label(const std::vector<std::string>& versions) {
  if (versions.empty()) return {};
  std::set<std::string_view> publics;
  for (const std::string& v : versions) publics.insert(public_version(v));
  const bool strip = publics.size() == versions.size();
  std::string label = "torch ";
  for (std::size_t k = 0; k < versions.size(); ++k) {
    if (k > 0) label += ", ";
    label += strip ? public_version(versions[k]) : std::string_view(versions[k]);
  }
  return label;
}

}  // namespace benchfleet::rules
