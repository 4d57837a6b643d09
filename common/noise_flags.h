// Which ok results the coordinator marks as noisy (docs/design.md §11): flagged, never dropped.
// A report may leave flagged results out of its geomeans (GET .../report?exclude_flagged=true).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/types.h"

namespace benchfleet {

// NVML throttle reasons that do not slow a running kernel: GpuIdle (0x1),
// ApplicationsClocksSetting (0x2), DisplayClockSetting (0x100). Any other bit set in the reading
// taken right after measuring (power cap, thermal or hardware slowdown, sync boost) is throttling.
inline constexpr unsigned long long kBenignThrottleReasons = 0x1 | 0x2 | 0x100;

// The flags of `result`, in this order, for an ok result (none for any other status):
//   high_cv     judged_cv(result) > noise.max_cv: the samples spread, not a few isolated spikes
//   second_mode outlier_share(result) > kMaxOutlierShare: more samples outside the outer fences
//               than isolated spikes make, i.e. a second mode (a clock state, a second code path,
//               a periodic stall) that the judged CV, which leaves them out, cannot see
//   clock_drop  telemetry after_sm_clock_mhz < (1 - noise.max_clock_drop) x before_sm_clock_mhz
//   throttled   telemetry after_throttle_reasons has a bit outside kBenignThrottleReasons
//   ci_not_met  the stopping rule ended at max_iterations or max_time and the result's 95% CI is
//               wider than `target_ci_rel_width` relative to its median (without the target:
//               any such stop; a bound that ended the loop after the CI was narrow enough, e.g.
//               max_iterations before min_duration_s, met it; a fixed count never sets it), or it
//               claims ci_target
//               while its 95% CI is more than kCiClaimSlack x `target_ci_rel_width` (the job's)
//               wide relative to its median: the claim is not what its own figures show
std::vector<std::string> noise_flags(const JobResult& result, const NoiseSpec& noise,
                                     std::optional<double> target_ci_rel_width = std::nullopt);

// The coefficient of variation the noise rule judges: that of the samples within Tukey's outer
// fences (Q1 - 3 IQR, Q3 + 3 IQR), so that a handful of isolated spikes (a preemption on a VM,
// one page fault) does not make a tight distribution "noisy" while a wide spread still does;
// stats.cv where there are fewer than 8 samples (or none). O(n): two selections and two passes.
double judged_cv(const JobResult& result);

// The share of the samples outside Tukey's outer fences (the ones judged_cv leaves out); 0 with
// fewer than 8 samples. When fewer than a quarter of the samples sit in a second mode, the IQR
// is the main mode's and the fences drop the whole second mode: 200 samples with 20% at 1.4x the
// rest have a judged CV of 0.009 (plain: 0.147). This share is then 0.20.
double outlier_share(const JobResult& result);
// Above this share the samples outside the fences are a mode, not spikes: a continuous heavy
// tail (exponential) leaves under 1% outside them, a preemption or two on 200 samples 1%.
inline constexpr double kMaxOutlierShare = 0.05;

// The stopping rule checks the CI with fewer bootstrap resamples than the result's final CI, so
// the final one may come out a little wider than the target it stopped at; twice as wide is not
// that.
inline constexpr double kCiClaimSlack = 2.0;

}  // namespace benchfleet
