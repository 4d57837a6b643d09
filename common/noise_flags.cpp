#include "common/noise_flags.h"

namespace benchfleet {
namespace {

std::optional<double> number(const nlohmann::json& telemetry, const char* key) {
  const auto it = telemetry.find(key);
  if (it == telemetry.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

}  // namespace

std::vector<std::string> noise_flags(const JobResult& result, const NoiseSpec& noise) {
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
  if (result.stop_reason == StopReason::kMaxIterations || result.stop_reason == StopReason::kMaxTime) {
    flags.emplace_back("ci_not_met");
  }
  return flags;
}

}  // namespace benchfleet
