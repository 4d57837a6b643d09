// The measurement loop's stopping rule (docs/design.md §11), shared by the C++ worker and
// mirrored by the Python runner: a minimum iteration count AND a minimum duration, then until
// the 95% CI of the median is within the target relative width, bounded by a maximum
// iteration count and a maximum duration. min_iterations == max_iterations is a fixed count
// (the seeds' "300 runs").
#pragma once

#include <optional>
#include <span>

#include "common/types.h"

namespace benchfleet {

class StoppingRule {
 public:
  explicit StoppingRule(const MeasurementSpec& spec);

  // Call after every timed iteration with all samples so far and the seconds since the first
  // timed iteration began. Returns why to stop, or nullopt to keep measuring. The CI check is
  // not run on every call (a bootstrap is not free): first when both minimums are met, then
  // every max(10, n/10) iterations. Deterministic for the same inputs.
  std::optional<StopReason> check(std::span<const double> samples_ms, double elapsed_s);

 private:
  MeasurementSpec spec_;
  std::size_t next_ci_check_ = 0;
};

// Exit codes of a worker process, one per result status, so a supervisor that lost the JSON
// (e.g. a truncated stdout) still knows the verdict. 2 is reserved for usage errors.
int exit_code_for(ResultStatus status);

}  // namespace benchfleet
