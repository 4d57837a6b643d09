// The launcher's decisions, free of I/O: how many allocations each class wants from the queue,
// and the rate limiter that keeps sbatch calls to a handful a minute. Time is passed in.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
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
  // `queued` by the timeout_s of the jobs' runs, ascending; absent from a coordinator before it
  // (then every queued job counts).
  std::optional<std::vector<std::pair<int, std::int64_t>>> queued_by_timeout = std::nullopt;
};

// What an allocation's agent needs beyond a job's timeout_s before it starts that job: its own
// start (a few seconds), the worker's kill grace (kill_grace_s, 10 by default) and the margin it
// keeps before the allocation's end (end_margin_s, 30 by default).
inline constexpr int kAgentOverheadS = 60;

// Parses the QueueSummary body {"cells": [{"gpu_class", "torch_build", "queued", "active",
// "queued_by_timeout": [{"timeout_s", "queued"}]}]}; an error naming the field (e.g.
// "cells[2].queued") otherwise.
Result<std::vector<QueueCell>> parse_queue_summary(std::string_view body);

// Queued jobs that count for `cls`: its gpu_class, and its builds (all when none are listed),
// whose run's timeout_s + kAgentOverheadS fits in the class's time_limit: an agent never starts
// a job that cannot finish before its allocation ends, so an allocation for the others would
// start, give the job back and end, over and over. Those are added to `too_long` when given.
std::int64_t queued_for_class(const ClassConfig& cls, const std::vector<QueueCell>& cells,
                              std::int64_t* too_long = nullptr);

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
  std::int64_t queued = 0;    // queued_for_class
  std::int64_t too_long = 0;  // queued jobs of the class whose timeout_s does not fit its time_limit
  int active = 0;             // pending + running allocations before this pass
  int wanted = 0;             // allocations_to_submit
  int submit = 0;             // wanted, or 0 when the rate limiter said no
  bool rate_limited = false;
};

// The pass's decisions, one per configured class (config order). Classes that want allocations
// take a rate-limiter slot each, in config order; one that gets none waits for a later pass.
// `active` maps gpu_class to its pending + running allocations (absent: 0).
std::vector<ClassDecision> plan_pass(const LauncherConfig& config, const std::vector<QueueCell>& cells,
                                     const std::map<std::string, int>& active, RateLimiter& limiter, TimestampMs now);

}  // namespace benchfleet::slurm
