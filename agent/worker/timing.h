// Per-iteration timers: steady clock on CPU, CUDA event pairs on the benchmark stream.
#pragma once

#include <functional>
#include <memory>
#include <vector>

namespace benchfleet::worker {

class IterationTimer {
 public:
  virtual ~IterationTimer() = default;
  // Times one call of `fn`. On CUDA the duration is known only after harvest().
  virtual void time(const std::function<void()>& fn) = 0;
  // Waits for every timed call to finish and appends their durations (ms), in order.
  virtual void harvest(std::vector<double>& samples_ms) = 0;
};

// CPU work is synchronous: the steady clock around the call is the iteration's time.
std::unique_ptr<IterationTimer> make_cpu_timer();

}  // namespace benchfleet::worker
