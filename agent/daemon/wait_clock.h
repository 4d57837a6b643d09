// The time the agent's loops wait on (heartbeat periods, backoff, lease renewals), injected so
// their unit tests run without real time. common/clock.h is wall-clock time for timestamps.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

namespace benchfleet::agent {

class WaitClock {
 public:
  virtual ~WaitClock() = default;

  // Monotonic time, for deadlines.
  virtual std::chrono::steady_clock::time_point now() const = 0;
  // Returns after `d`, or earlier once `woken()` is true. `woken` is asked at the start and
  // again after each wake_all(). Thread-safe.
  virtual void sleep_for(std::chrono::milliseconds d, const std::function<bool()>& woken) = 0;
  // Has every sleeper ask its `woken` again. Change what `woken` reads first (an atomic, or
  // under the caller's own lock), then call this: no wake-up is lost. Thread-safe.
  virtual void wake_all() = 0;
};

// Real time: std::chrono::steady_clock and a condition variable.
class SteadyWaitClock final : public WaitClock {
 public:
  std::chrono::steady_clock::time_point now() const override { return std::chrono::steady_clock::now(); }
  void sleep_for(std::chrono::milliseconds d, const std::function<bool()>& woken) override {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, d, woken);
  }
  void wake_all() override {
    { std::lock_guard lock(mu_); }  // a sleeper is either before its check or waiting
    cv_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
};

}  // namespace benchfleet::agent
