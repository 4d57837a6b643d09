// Per-iteration timers: steady clock on CPU, CUDA event pairs on the benchmark stream; and the
// schedule on which a measurement loop harvests them.
#pragma once

#include <chrono>
#include <cstddef>
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

// When a measurement loop harvests its timer. A CUDA harvest synchronizes with the device, so it
// is done once per `batch` timed iterations, or sooner once `interval` has passed since the last
// harvest (so slow iterations are still read, and the stopping rule checked, about that often).
// The interval runs on the schedule's own clock, restarted by each harvest it calls for; nothing
// else (a progress report) restarts it. With batch 1 every iteration is harvested, without
// reading the clock.
//   HarvestSchedule schedule(16, 250ms);
//   while (...) { timer->time(step); if (schedule.iteration_timed()) timer->harvest(samples); }
// Not thread-safe.
class HarvestSchedule {
 public:
  using Clock = std::chrono::steady_clock;
  using Now = std::function<Clock::time_point()>;

  // REQUIRES: batch >= 1 (0 is taken as 1). The interval starts at construction. `now` is
  // injected for tests.
  HarvestSchedule(std::size_t batch, Clock::duration interval, Now now = &Clock::now);

  // Counts one more timed iteration. True when the caller must harvest now: `batch` iterations
  // are pending, or `interval` has passed since the last harvest. A true answer counts as that
  // harvest: nothing is pending any more and the interval starts again.
  bool iteration_timed();

  std::size_t batch() const { return batch_; }
  // Timed iterations not harvested yet (at most batch() - 1 between calls).
  std::size_t pending() const { return pending_; }

 private:
  std::size_t batch_;
  Clock::duration interval_;
  Now now_;
  std::size_t pending_ = 0;
  Clock::time_point last_harvest_;
};

}  // namespace benchfleet::worker
