// AgentLoops: one slot's loop (lease -> run -> spool -> upload) and giving leases back.
#include <spdlog/spdlog.h>

#include "agent/daemon/agent_loops.h"

namespace benchfleet::agent {

using namespace std::chrono_literals;

void AgentLoops::slot_loop(Slot& slot) {
  auto client = parts_.connect(identity_);
  Backoff backoff(parts_.uniform);
  while (!draining()) {
    const Intervals iv = current_intervals();
    auto answer = client->lease(slot.descriptor.id, iv.long_poll_timeout_s);
    if (!answer.ok()) {
      if (answer.error().code == ErrorCode::kUnauthenticated) {
        ensure_enrolled(identity_.get().second);
      } else {
        spdlog::warn("slot {}: lease failed: {}", slot.descriptor.id, answer.error().message);
        sleep_for(backoff.next());
      }
      continue;
    }
    backoff.reset();
    adopt_intervals(answer->intervals);
    if (!answer->job) {
      if (answer->draining) sleep_for(std::chrono::seconds(answer->intervals.heartbeat_interval_s));
      continue;
    }
    const LeasedJob job = *answer->job;
    if (draining()) {
      // Granted to a long poll that began before the drain: give it back untouched.
      spdlog::info("slot {}: draining; giving job {} back", slot.descriptor.id, job.job_id);
      give_back_untouched(*client, slot, job);
      continue;
    }
    spdlog::info("slot {}: job {} attempt {} ({} batch {} {} {} {})", slot.descriptor.id, job.job_id, job.attempt,
                 job.spec.model, job.spec.batch, to_string(job.spec.mode), job.spec.torch_build,
                 to_string(job.spec.runtime));
    std::optional<JobResult> result = run_job(*client, slot, job);
    if (!result && aborting()) {
      // Give the job back now rather than leaving it to the lease's expiry.
      if (auto s = client->release(job.job_id, job.lease_id); !s) {
        spdlog::warn("release failed: {}", s.error().message);
      }
    }
    if (!result) continue;  // stopped: nothing to report
    spdlog::info("slot {}: job {} -> {}", slot.descriptor.id, job.job_id, to_string(result->status));
    const SpoolEntry entry{job.job_id, job.lease_id, job.attempt, std::move(*result)};
    if (auto s = parts_.spool->put(entry); !s) spdlog::error("cannot spool job {}: {}", job.job_id, s.error().message);
    upload(entry);
  }
  // A poll left without a readable answer may hold a grant nobody will ask for again.
  if (!aborting() && client->has_unanswered_poll(slot.descriptor.id)) give_back_untouched(*client, slot, std::nullopt);
}

// Runs `job` as the slot's current lease, which the heartbeat renews. While it runs, the job's
// lease is renewed once per heartbeat interval, and the job is stopped (nullopt) on abort or
// when a renewal or a heartbeat says the lease is lost or the run cancelled.
std::optional<JobResult> AgentLoops::run_job(CoordinatorApi& client, Slot& slot, const LeasedJob& job) {
  {
    std::lock_guard lock(slot.mu);
    slot.current = LeaseRef{job.job_id, job.lease_id};
    slot.stop_job = LeaseState::kActive;
  }
  auto next_renewal = parts_.clock->now() + std::chrono::seconds(current_intervals().heartbeat_interval_s);
  auto stop = [&](LeaseState why) {
    spdlog::warn("slot {}: job {} {}; stopping its worker", slot.descriptor.id, job.job_id,
                 why == LeaseState::kCancelled ? "was cancelled" : "lost its lease");
    return false;
  };
  std::optional<JobResult> result = parts_.runner->run(job, slot.descriptor, [&] {
    if (aborting()) return false;
    if (const LeaseState why = slot.stop_job.load(); why != LeaseState::kActive) return stop(why);  // heartbeat
    if (parts_.clock->now() < next_renewal) return true;
    next_renewal = parts_.clock->now() + std::chrono::seconds(current_intervals().heartbeat_interval_s);
    auto renewal = client.progress(job.job_id, job.lease_id, "running");
    if (renewal.ok() && *renewal != LeaseState::kActive) return stop(*renewal);
    return true;  // a coordinator that is down is no reason to throw the work away
  });
  {
    std::lock_guard lock(slot.mu);
    slot.current.reset();
  }
  return result;
}

// While draining, gives back a lease `slot` was granted but never started: `job` when its answer
// was read, or whatever an unanswered poll may have been granted. Once the coordinator knows
// the agent drains, the slot's next poll has it withdraw that lease (queued again at the same
// attempt, Store::lease); a release, the fallback, would use the attempt up.
void AgentLoops::give_back_untouched(CoordinatorApi& client, Slot& slot, const std::optional<LeasedJob>& job) {
  auto told = client.heartbeat({}, /*draining=*/true);
  auto answer = told.ok() ? client.lease(slot.descriptor.id, 0) : Result<LeaseResponse>(told.error());
  if (answer.ok() && !answer->job) {
    spdlog::info("slot {}: draining; the coordinator took back the lease it may have granted", slot.descriptor.id);
    return;
  }
  const std::optional<LeasedJob> held = answer.ok() ? answer->job : job;
  if (!held) {
    spdlog::warn("slot {}: draining; a lease granted to its unanswered poll is left to expire: {}", slot.descriptor.id,
                 answer.error().message);
    return;
  }
  if (auto s = client.release(held->job_id, held->lease_id); !s) spdlog::warn("release failed: {}", s.error().message);
}

// The slot thread's body: slot_loop under a guard. An exception (a bug, std::bad_alloc) must
// not reach std::terminate, which would skip every destructor: the worker's group is killed
// by its Child's destructor while the exception unwinds, the lease is given back here, and
// the slot serves on after a pause (unless the agent is stopping).
void AgentLoops::serve_slot(std::size_t index) {
  Slot& slot = *slots_.at(index);
  while (true) {
    try {
      slot_loop(slot);
      return;
    } catch (const std::exception& e) {
      spdlog::error("slot {}: unexpected exception: {}; its job is given back, the slot serves on", slot.descriptor.id,
                    e.what());
    } catch (...) {
      spdlog::error("slot {}: unexpected exception; its job is given back, the slot serves on", slot.descriptor.id);
    }
    give_back_current(slot);
    if (draining()) return;
    sleep_for(5s);
  }
}

// Releases the lease `slot` was working on, if any (best effort, never throws).
void AgentLoops::give_back_current(Slot& slot) noexcept {
  try {
    std::optional<LeaseRef> lease;
    {
      std::lock_guard lock(slot.mu);
      lease.swap(slot.current);
    }
    if (!lease) return;
    auto client = parts_.connect(identity_);
    if (auto s = client->release(lease->job_id, lease->lease_id); !s) {
      spdlog::warn("job {}: release failed ({}); its lease will expire", lease->job_id, s.error().message);
    }
  } catch (...) {
    spdlog::error("slot {}: cannot give its job back; its lease will expire", slot.descriptor.id);
  }
}

}  // namespace benchfleet::agent
