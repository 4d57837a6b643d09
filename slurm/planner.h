// The launcher's decisions, free of I/O: how many allocations each class wants from the queue,
// and the rate limiter that keeps sbatch calls to a handful a minute. Time is passed in.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "slurm/launcher_config.h"

namespace benchfleet::slurm {

// One row of GET /api/v1/queue.
struct QueueCell {
  std::string gpu_class;
  std::string torch_build;
  std::int64_t queued = 0;
  std::int64_t active = 0;  // leased + running jobs
};

// Parses the QueueSummary body {"cells": [{"gpu_class", "torch_build", "queued", "active"}]};
// an error naming the field (e.g. "cells[2].queued") otherwise.
Result<std::vector<QueueCell>> parse_queue_summary(std::string_view body);

// Queued jobs that count for `cls`: its gpu_class, and its builds (all when none are listed).
std::int64_t queued_for_class(const ClassConfig& cls, const std::vector<QueueCell>& cells);

// Allocations to submit now: min(max_allocations, queued) - active, at least 0. Never makes
// active + submitted exceed max_allocations; 0 when nothing is queued.
int allocations_to_submit(int max_allocations, std::int64_t queued, int active);

// At most `per_minute` acquisitions in any 60 s window (sliding, not per calendar minute).
// Thread safety: none (the reconcile loop owns it).
class RateLimiter {
 public:
  static constexpr TimestampMs kWindowMs = 60'000;
  explicit RateLimiter(int per_minute) : per_minute_(per_minute) {}

  // Takes one slot at `now` when fewer than per_minute were taken in (now - 60 s, now].
  bool try_acquire(TimestampMs now);
  // Slots taken in the window ending at `now`.
  int taken(TimestampMs now);
  // The earliest time a slot is free again (now when one is free).
  TimestampMs next_free(TimestampMs now);

 private:
  void expire(TimestampMs now);
  int per_minute_;
  std::deque<TimestampMs> taken_;
};

// What one pass decided for one class.
struct ClassDecision {
  std::string gpu_class;
  std::int64_t queued = 0;
  int active = 0;  // pending + running allocations before this pass
  int wanted = 0;  // allocations_to_submit
  int submit = 0;  // wanted, or 0 when the rate limiter said no
  bool rate_limited = false;
};

// The pass's decisions, one per configured class (config order). Classes that want allocations
// take a rate-limiter slot each, in config order; one that gets none waits for a later pass.
// `active` maps gpu_class to its pending + running allocations (absent: 0).
std::vector<ClassDecision> plan_pass(const LauncherConfig& config, const std::vector<QueueCell>& cells,
                                     const std::map<std::string, int>& active, RateLimiter& limiter, TimestampMs now);

}  // namespace benchfleet::slurm
