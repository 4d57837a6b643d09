#include "coordinator/rules/scheduler.h"

#include <algorithm>
#include <tuple>

namespace benchfleet::rules {

bool can_run(const SlotOffer& offer, const JobSpec& job) {
  if (job.gpu != offer.gpu_class) return false;
  for (const auto& build : offer.builds) {
    if (build.name != job.torch_build) continue;
    for (const auto& rt : build.runtimes) {
      if (rt.runtime != job.runtime) continue;
      if (std::find(rt.modes.begin(), rt.modes.end(), job.mode) != rt.modes.end()) return true;
    }
  }
  return false;
}

std::optional<std::string> unsupported_reason(const SlotOffer& offer, const JobSpec& job) {
  if (job.gpu != offer.gpu_class) return std::nullopt;
  for (const auto& build : offer.builds) {
    if (build.name != job.torch_build) continue;
    for (const auto& rt : build.runtimes) {
      if (rt.runtime != job.runtime) continue;
      if (std::find(rt.modes.begin(), rt.modes.end(), job.mode) != rt.modes.end()) return std::nullopt;
      std::string reason = "torch build ";
      reason += build.name;
      if (!build.version.empty()) reason += " (torch " + build.version + ")";
      reason += " does not offer mode ";
      reason += to_string(job.mode);
      reason += " with the ";
      reason += to_string(job.runtime);
      reason += " runtime on ";
      reason += job.gpu;
      return reason;
    }
  }
  return std::nullopt;
}

std::optional<std::int64_t> pick_job(const SlotOffer& offer, std::span<const Candidate> candidates) {
  const SlotRef me{offer.agent_id, offer.slot};
  auto tier = [&](const Candidate& c) {
    if (!c.group_owner) return 1;
    return *c.group_owner == me ? 0 : 2;
  };
  const Candidate* best = nullptr;
  auto key = [&](const Candidate& c) { return std::make_tuple(tier(c), -c.priority, c.job_id); };
  for (const auto& c : candidates) {
    if (!can_run(offer, c.spec)) continue;
    if (best == nullptr || key(c) < key(*best)) best = &c;
  }
  if (best == nullptr) return std::nullopt;
  return best->job_id;
}

ExpiryAction on_lease_expired(int attempts_started, int max_attempts) {
  return attempts_started >= max_attempts ? ExpiryAction::kFail : ExpiryAction::kRequeue;
}

TimestampMs lease_expiry(TimestampMs now, TimestampMs ttl_ms) { return now + ttl_ms; }

TimestampMs expiry_after_restart(TimestampMs expires_at, TimestampMs now, TimestampMs grace_ms) {
  return std::max(expires_at, now + grace_ms);
}

std::vector<std::pair<std::int64_t, int>> implied_oom(std::span<const QueuedJob> queued,
                                                      std::span<const JobSpec> oomed) {
  std::vector<std::pair<std::int64_t, int>> out;
  for (const auto& q : queued) {
    std::optional<int> smallest;
    for (const auto& o : oomed) {
      const bool same_cell = o.model == q.spec.model && o.mode == q.spec.mode && o.torch_build == q.spec.torch_build &&
                             o.gpu == q.spec.gpu && o.runtime == q.spec.runtime && o.dtype == q.spec.dtype;
      if (same_cell && o.batch < q.spec.batch && (!smallest || o.batch < *smallest)) smallest = o.batch;
    }
    if (smallest) out.emplace_back(q.job_id, *smallest);
  }
  return out;
}

std::string_view to_string(RunState s) {
  switch (s) {
    case RunState::kQueued:
      return "queued";
    case RunState::kRunning:
      return "running";
    case RunState::kDone:
      return "done";
    case RunState::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

RunState run_state(const std::map<JobStatus, std::int64_t>& job_counts, bool cancelled) {
  if (cancelled) return RunState::kCancelled;
  auto count = [&](JobStatus s) {
    auto it = job_counts.find(s);
    return it == job_counts.end() ? std::int64_t{0} : it->second;
  };
  const std::int64_t active = count(JobStatus::kQueued) + count(JobStatus::kLeased) + count(JobStatus::kRunning);
  if (active == 0) return RunState::kDone;
  const std::int64_t started =
      count(JobStatus::kLeased) + count(JobStatus::kRunning) + count(JobStatus::kDone) + count(JobStatus::kFailed);
  return started == 0 ? RunState::kQueued : RunState::kRunning;
}

}  // namespace benchfleet::rules
