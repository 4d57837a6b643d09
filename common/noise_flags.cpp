#include "common/noise_flags.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace benchfleet {
namespace {

std::optional<double> number(const nlohmann::json& telemetry, const char* key) {
  const auto it = telemetry.find(key);
  if (it == telemetry.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

struct Fences {
  double low = 0, high = 0;
};

// Tukey's outer fences of `x` (Q1 - 3 IQR, Q3 + 3 IQR). REQUIRES: x not empty.
Fences outer_fences(const std::vector<double>& x) {
  std::vector<double> sorted = x;
  const auto at = [&sorted](std::size_t k) {
    std::nth_element(sorted.begin(), sorted.begin() + static_cast<std::ptrdiff_t>(k), sorted.end());
    return sorted[k];
  };
  const double q1 = at(sorted.size() / 4);
  const double q3 = at(3 * sorted.size() / 4);
  return {q1 - 3 * (q3 - q1), q3 + 3 * (q3 - q1)};
}

constexpr std::size_t kMinSamplesForFences = 8;

}  // namespace

double outlier_share(const JobResult& result) {
  const std::vector<double>& x = result.samples_ms;
  if (x.size() < kMinSamplesForFences) return 0;
  const Fences f = outer_fences(x);
  const auto outside = std::count_if(x.begin(), x.end(), [&f](double v) { return v < f.low || v > f.high; });
  return static_cast<double>(outside) / static_cast<double>(x.size());
}

double judged_cv(const JobResult& result) {
  const double reported = result.stats ? result.stats->cv : 0;
  const std::vector<double>& x = result.samples_ms;
  if (x.size() < kMinSamplesForFences) return reported;
  const auto [low, high] = outer_fences(x);
  double sum = 0;
  std::size_t n = 0;
  for (double v : x) {
    if (v < low || v > high) continue;
    sum += v;
    ++n;
  }
  if (n < 2 || sum <= 0) return reported;
  const double mean = sum / static_cast<double>(n);
  double squares = 0;
  for (double v : x) {
    if (v >= low && v <= high) squares += (v - mean) * (v - mean);
  }
  return std::sqrt(squares / static_cast<double>(n - 1)) / mean;
}

std::vector<std::string> noise_flags(const JobResult& result, const NoiseSpec& noise,
                                     std::optional<double> target_ci_rel_width) {
  std::vector<std::string> flags;
  if (result.status != ResultStatus::kOk) return flags;
  if (result.stats && judged_cv(result) > noise.max_cv) flags.emplace_back("high_cv");
  if (result.stats && outlier_share(result) > kMaxOutlierShare) flags.emplace_back("second_mode");
  const auto before = number(result.telemetry, "before_sm_clock_mhz");
  const auto after = number(result.telemetry, "after_sm_clock_mhz");
  if (before && after && *before > 0 && *after < (1 - noise.max_clock_drop) * *before) flags.emplace_back("clock_drop");
  if (const auto it = result.telemetry.find("after_throttle_reasons");
      it != result.telemetry.end() && it->is_number_integer() && it->get<long long>() >= 0 &&
      (static_cast<unsigned long long>(it->get<long long>()) & ~kBenignThrottleReasons) != 0) {
    flags.emplace_back("throttled");
  }
  // The CI's width relative to the median, as the stopping rule measures it (nullopt: unknown).
  std::optional<double> width;
  if (result.stats && result.stats->median_ms > 0) {
    width = (result.stats->ci_high_ms - result.stats->ci_low_ms) / result.stats->median_ms;
  }
  const bool bound_hit =
      (result.stop_reason == StopReason::kMaxIterations || result.stop_reason == StopReason::kMaxTime) &&
      (!target_ci_rel_width || !width || *width > *target_ci_rel_width);
  const bool claim_unshown = result.stop_reason == StopReason::kCiTarget && target_ci_rel_width && width &&
                             *width > kCiClaimSlack * *target_ci_rel_width;
  if (bound_hit || claim_unshown) flags.emplace_back("ci_not_met");
  return flags;
}

}  // namespace benchfleet
