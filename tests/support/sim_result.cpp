#include "tests/support/sim_result.h"

#include <algorithm>
#include <random>

#include "common/stats.h"

namespace benchfleet::testing {

JobResult plausible_ok_result(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> noise(12.0, 0.3);
  JobResult r;
  r.status = ResultStatus::kOk;
  for (int i = 0; i < 30; ++i) r.samples_ms.push_back(std::max(1.0, noise(rng)));
  r.stats = compute_statistics(r.samples_ms);
  r.first_call_ms = 250.0;
  r.stop_reason = StopReason::kCiTarget;  // 30 samples, the default min_iterations; a CI of ~2%
  return r;
}

}  // namespace benchfleet::testing
