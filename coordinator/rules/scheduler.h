// Scheduling decisions as pure functions of store state and the clock. The store loads the
// inputs and applies the outputs inside one transaction; everything here is unit-tested alone.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/types.h"

namespace benchfleet::rules {

// One agent slot asking for work.
struct SlotOffer {
  std::int64_t agent_id = 0;
  std::string slot;
  std::string gpu_class;
  std::vector<TorchBuildDescriptor> builds;  // what the agent advertised at enrolment
};

// True when the slot's GPU class, a torch build, a runtime of that build and that runtime's
// modes all match the job.
bool can_run(const SlotOffer& offer, const JobSpec& job);

// Why `offer` declares `job` unsupported: the slot has the job's GPU class, torch build and
// runtime but that build does not offer the job's mode (e.g. AOTInductor modes on a LibTorch
// without it). Nullopt when the slot can run the job or is not the judge of it (other class,
// build or runtime). Builds are names for one torch install, so one slot's answer holds for all.
std::optional<std::string> unsupported_reason(const SlotOffer& offer, const JobSpec& job);

struct SlotRef {
  std::int64_t agent_id = 0;
  std::string slot;
  bool operator==(const SlotRef&) const = default;
};

struct Candidate {
  std::int64_t job_id = 0;
  int priority = 0;
  JobSpec spec;
  std::optional<SlotRef> group_owner;  // the slot that leased the first job of this job's group
};

// Picks the job `offer` should run next, or nullopt when none fits. Preference:
//  1. a job of a group this slot already owns (eager and compiled on the same physical GPU),
//  2. a job of a group no slot owns yet,
//  3. a job of a group another slot owns (better than idling),
// then higher priority, then lower job id (submission order).
// The store (LeaseStore::pick_candidate_locked, coordinator/store/lease_store.cpp) feeds it one
// tier at a time, each read by an index and only when the tiers before gave nothing:
//  1. up to 64 queued jobs of groups this slot owns that it can run (jobs_queued_owned);
//  2. for each (build, runtime, mode) the slot offers, the best queued job of that cell whose
//     group nobody owns (jobs_queued_unowned_cells, one row per cell);
//  3. the same without the owner condition (jobs_queued_cells).
// So candidates are never the whole queue, and each holds only jobs can_run() accepts.
std::optional<std::int64_t> pick_job(const SlotOffer& offer, std::span<const Candidate> candidates);

enum class ExpiryAction { kRequeue, kFail };
// What happens to a job whose lease expired after `attempts_started` attempts.
ExpiryAction on_lease_expired(int attempts_started, int max_attempts);

// A lease's expiry when granted or renewed at `now`.
TimestampMs lease_expiry(TimestampMs now, TimestampMs ttl_ms);

// After a coordinator restart every live lease gets at least `grace_ms` to be renewed,
// so a restart does not requeue the whole fleet's work.
TimestampMs expiry_after_restart(TimestampMs expires_at, TimestampMs now, TimestampMs grace_ms);

struct QueuedJob {
  std::int64_t job_id = 0;
  JobSpec spec;
};

// Queued jobs that must not run because a smaller batch of the same (model, mode, build,
// GPU class, runtime, dtype) ran out of memory: a float16 OOM says nothing about float32. Returns (job id, the smallest
// OOMed batch below it).
std::vector<std::pair<std::int64_t, int>> implied_oom(std::span<const QueuedJob> queued,
                                                      std::span<const JobSpec> oomed);

enum class RunState { kQueued, kRunning, kDone, kCancelled };
std::string_view to_string(RunState s);
// A run's state from its job counts by status.
RunState run_state(const std::map<JobStatus, std::int64_t>& job_counts, bool cancelled);

}  // namespace benchfleet::rules
