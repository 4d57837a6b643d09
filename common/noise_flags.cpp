#include "common/noise_flags.h"

namespace benchfleet {
namespace {

std::optional<double> number(const nlohmann::json& telemetry, const char* key) {
  const auto it = telemetry.find(key);
  if (it == telemetry.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

}  // namespace

std::vector<std::string> noise_flags(const JobResult& result, const NoiseSpec& noise,
                                     std::optional<double> target_ci_rel_width) {
  std::vector<std::string> flags;
  if (result.status != ResultStatus::kOk) return flags;
  if (result.stats && result.stats->cv > noise.max_cv) flags.emplace_back("high_cv");
  const auto before = number(result.telemetry, "before_sm_clock_mhz");
  const auto after = number(result.telemetry, "after_sm_clock_mhz");
  if (before && after && *before > 0 && *after < (1 - noise.max_clock_drop) * *before) flags.emplace_back("clock_drop");
  if (const auto it = result.telemetry.find("after_throttle_reasons");
      it != result.telemetry.end() && it->is_number_integer() && it->get<long long>() >= 0 &&
      (static_cast<unsigned long long>(it->get<long long>()) & ~kBenignThrottleReasons) != 0) {
    flags.emplace_back("throttled");
  }
  const bool bound_hit = result.stop_reason == StopReason::kMaxIterations || result.stop_reason == StopReason::kMaxTime;
  const bool claim_unshown = result.stop_reason == StopReason::kCiTarget && result.stats && target_ci_rel_width &&
                             result.stats->median_ms > 0 &&
                             (result.stats->ci_high_ms - result.stats->ci_low_ms) / result.stats->median_ms >
                                 kCiClaimSlack * *target_ci_rel_width;
  if (bound_hit || claim_unshown) flags.emplace_back("ci_not_met");
  return flags;
}

}  // namespace benchfleet
