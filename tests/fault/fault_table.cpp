#include "tests/fault/fault_table.h"

#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>

namespace benchfleet::testing {
namespace {

// The median and maximum of `values` (0, 0 when empty).
std::pair<double, double> median_and_max(std::vector<double> values) {
  if (values.empty()) return {0, 0};
  std::sort(values.begin(), values.end());
  std::size_t n = values.size();
  double median = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
  return {median, values.back()};
}

}  // namespace

void print_fault_table(const std::vector<FaultRow>& rows) {
  std::printf("%-36s %9s %8s %6s %11s %20s\n", "fault class", "injected", "checked", "lost", "duplicated",
              "recovery p50 / max");
  for (const FaultRow& row : rows) {
    auto [p50, max] = median_and_max(row.recovery_s);
    char recovery[64];
    std::snprintf(recovery, sizeof recovery, "%.2f s / %.2f s", p50, max);
    std::printf("%-36s %9d %8ld %6ld %11ld %20s\n", row.fault_class.c_str(), row.injected, row.checked, row.lost,
                row.duplicated, row.recovery_s.empty() ? "-" : recovery);
  }
  for (const FaultRow& row : rows)
    if (!row.recovery_meaning.empty())
      std::printf("  %s: recovery = %s\n", row.fault_class.c_str(), row.recovery_meaning.c_str());
  std::fflush(stdout);
}

std::string fault_row_json(const FaultRow& row) {
  auto [p50, max] = median_and_max(row.recovery_s);
  nlohmann::json json = {{"fault_class", row.fault_class},
                         {"injected", row.injected},
                         {"checked", row.checked},
                         {"lost", row.lost},
                         {"duplicated", row.duplicated},
                         {"recovery_p50_s", p50},
                         {"recovery_max_s", max},
                         {"recovery_s", row.recovery_s},
                         {"recovery_meaning", row.recovery_meaning}};
  return json.dump();
}

}  // namespace benchfleet::testing
