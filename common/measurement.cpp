#include "common/measurement.h"

#include <algorithm>
#include <string>

#include "common/shared_rules.h"
#include "common/stats.h"

namespace benchfleet {
namespace {
// Fewer resamples than the final statistics: the check only decides when to stop.
constexpr int kCheckResamples = 400;
}  // namespace

StoppingRule::StoppingRule(const MeasurementSpec& spec) : spec_(spec) {}

std::optional<StopReason> StoppingRule::check(std::span<const double> samples_ms, double elapsed_s) {
  const std::size_t n = samples_ms.size();
  const bool fixed = spec_.min_iterations == spec_.max_iterations;
  if (fixed && n >= static_cast<std::size_t>(spec_.max_iterations)) return StopReason::kFixedCount;
  if (n >= static_cast<std::size_t>(spec_.max_iterations)) return StopReason::kMaxIterations;
  if (elapsed_s >= spec_.max_duration_s) return StopReason::kMaxTime;
  if (fixed) return std::nullopt;
  if (n < static_cast<std::size_t>(spec_.min_iterations) || elapsed_s < spec_.min_duration_s) return std::nullopt;
  if (n < next_ci_check_) return std::nullopt;

  const Interval ci = bootstrap_median_ci(samples_ms, 0.95, kCheckResamples, /*seed=*/n);
  const double med = median(samples_ms);
  const double relative_width = med > 0 ? (ci.high - ci.low) / med : 0.0;
  if (relative_width <= spec_.target_ci_rel_width) return StopReason::kCiTarget;
  next_ci_check_ = n + std::max<std::size_t>(10, n / 10);
  return std::nullopt;
}

int exit_code_for(ResultStatus status) {
  // common/rules/worker_exit_codes.json, which the python runner reads too.
  const nlohmann::json& codes = shared_rule("worker_exit_codes.json").at("codes");
  const auto it = codes.find(std::string(to_string(status)));
  return it != codes.end() && it->is_number_integer() ? it->get<int>() : 1;
}

}  // namespace benchfleet
