// Retry pacing of the agent (docs/design.md §7): exponential backoff with jitter, the random
// draw injected so tests see exact waits.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <random>

namespace benchfleet::agent {

// A number drawn uniformly from [lo, hi] (REQUIRES: lo <= hi).
using UniformInt = std::function<std::int64_t(std::int64_t lo, std::int64_t hi)>;

// UniformInt from a generator per thread, seeded from std::random_device. Thread-safe.
inline UniformInt random_uniform_int() {
  return [](std::int64_t lo, std::int64_t hi) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
  };
}

// The n-th consecutive failure (from 0) waits between half and all of its bound,
// min(250 ms * 2^n, 30 s). Not thread-safe: one per retrying loop.
class Backoff {
 public:
  static constexpr std::int64_t kFirstBoundMs = 250;
  static constexpr std::int64_t kMaxBoundMs = 30'000;

  explicit Backoff(UniformInt uniform) : uniform_(std::move(uniform)) {}

  std::chrono::milliseconds next() {
    const auto bound = std::min<std::int64_t>(kMaxBoundMs, kFirstBoundMs << std::min(failures_++, 7));
    return std::chrono::milliseconds(uniform_(bound / 2, bound));
  }
  // After a success: the next failure waits the first bound again.
  void reset() { failures_ = 0; }

 private:
  UniformInt uniform_;
  int failures_ = 0;
};

}  // namespace benchfleet::agent
