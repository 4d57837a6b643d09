// Time source, injected wherever a decision depends on "now" so tests control it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace benchfleet {

// Milliseconds since the Unix epoch.
using TimestampMs = std::int64_t;

class Clock {
 public:
  virtual ~Clock() = default;
  virtual TimestampMs now_ms() const = 0;
};

class SystemClock final : public Clock {
 public:
  TimestampMs now_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

// A clock tests move by hand. Thread-safe.
class ManualClock final : public Clock {
 public:
  explicit ManualClock(TimestampMs start = 1'700'000'000'000) : now_(start) {}
  TimestampMs now_ms() const override { return now_.load(); }
  void advance_ms(TimestampMs delta) { now_ += delta; }
  void set_ms(TimestampMs t) { now_ = t; }

 private:
  std::atomic<TimestampMs> now_;
};

}  // namespace benchfleet
