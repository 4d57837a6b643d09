// AgentLoops: one slot's loop (lease -> run -> spool -> upload) and giving leases back.
#include <spdlog/spdlog.h>

#include <algorithm>

#include "agent/daemon/agent_loops.h"
#include "common/result_checks.h"

namespace benchfleet::agent {

using namespace std::chrono_literals;

void AgentLoops::slot_loop(Slot& slot) {
  auto client = parts_.connect(identity_);
  Backoff backoff(parts_.uniform);
  while (!draining()) {
    drain_if_time_is_up(/*after_no_work=*/false);
    if (draining()) break;
    const Intervals iv = current_intervals();
    auto answer = client->lease(slot.descriptor.id, lease_wait_s(iv.long_poll_timeout_s));
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
      drain_if_time_is_up(/*after_no_work=*/true);
      continue;
    }
    const LeasedJob job = *answer->job;
    if (draining()) {
      // Granted to a long poll that began before the drain: give it back untouched.
      spdlog::info("slot {}: draining; giving job {} back", slot.descriptor.id, job.job_id);
      give_back_untouched(*client, slot, job);
      continue;
    }
    if (!fits_before_the_end(slot, job)) {
      // Never started: back to the queue at the same attempt, for an allocation with time left.
      give_back_untouched(*client, slot, job);
      continue;
    }
    spdlog::info("slot {}: job {} attempt {} ({} batch {} {} {} {})", slot.descriptor.id, job.job_id, job.attempt,
                 job.spec.model, job.spec.batch, to_string(job.spec.mode), job.spec.torch_build,
                 to_string(job.spec.runtime));
    slot_busy(true);
    const auto started = parts_.clock->now();
    std::optional<JobResult> result;
    try {
      result = run_job(*client, slot, job);
    } catch (...) {
      slot_busy(false);
      throw;
    }
    slot_busy(false);
    (void)deadline(/*refresh=*/true);  // an admin may have moved the allocation's end meanwhile
    if (result && killed_from_outside(*result, draining())) {
      // Slurm ending the allocation (scancel, preemption, time limit), not the job's fault: it
      // runs again elsewhere.
      spdlog::warn(
          "slot {}: job {}'s worker or exporter was killed from outside (signal {}); releasing its lease, no verdict",
          slot.descriptor.id, job.job_id, result->signal.value_or(0));
      result.reset();
      if (auto s = client->release(job.job_id, job.lease_id); !s) spdlog::warn("release failed: {}", s.error().message);
      continue;
    }
    if (!result && aborting()) {
      // Give the job back now rather than leaving it to the lease's expiry.
      if (auto s = client->release(job.job_id, job.lease_id); !s) {
        spdlog::warn("release failed: {}", s.error().message);
      }
    }
    if (!result) continue;  // stopped: nothing to report
    durations_.add(job.spec, std::chrono::duration_cast<std::chrono::milliseconds>(parts_.clock->now() - started));
    jobs_run_.fetch_add(1);
    spdlog::info("slot {}: job {} -> {}", slot.descriptor.id, job.job_id, to_string(result->status));
    const SpoolEntry entry{job.job_id, job.lease_id, job.attempt, std::move(*result)};
    if (auto s = parts_.spool->put(entry); !s) spdlog::error("cannot spool job {}: {}", job.job_id, s.error().message);
    upload(entry);
  }
  // A poll left without a readable answer may hold a grant nobody will ask for again.
  if (!aborting() && client->has_unanswered_poll(slot.descriptor.id)) give_back_untouched(*client, slot, std::nullopt);
}

std::optional<std::chrono::steady_clock::time_point> AgentLoops::deadline(bool refresh) {
  std::lock_guard lock(deadline_mu_);
  if ((refresh || !deadline_read_) && parts_.allocation.read_deadline) {
    deadline_ = parts_.allocation.read_deadline();
    deadline_read_ = true;
  }
  return deadline_;
}

bool AgentLoops::fits_before_the_end(const Slot& slot, const LeasedJob& job) {
  const auto end = deadline();
  if (!end) return true;
  const auto longest = durations_.longest(job.spec);
  const auto estimate = estimated_duration(job, longest, parts_.allocation.kill_grace_s);
  const auto now = parts_.clock->now();
  if (fits_before(now, *end, estimate, parts_.allocation.end_margin)) return true;
  const auto left_s = std::chrono::duration_cast<std::chrono::seconds>(*end - now).count();
  const std::string why =
      "job " + std::to_string(job.job_id) + " (estimate " +
      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(estimate).count()) + " s, " +
      (longest ? "the longest measured for its cell" : "its timeout_s") + ", plus " +
      std::to_string(parts_.allocation.kill_grace_s) + " s kill grace and a " +
      std::to_string(std::chrono::duration_cast<std::chrono::seconds>(parts_.allocation.end_margin).count()) +
      " s margin) does not fit in the " + std::to_string(left_s) + " s left";
  drain_by_itself(why);
  spdlog::info("slot {}: giving job {} back untouched", slot.descriptor.id, job.job_id);
  return false;
}

int AgentLoops::lease_wait_s(int long_poll_s) {
  using std::chrono::milliseconds;
  milliseconds wait = std::chrono::seconds(long_poll_s);
  const auto now = parts_.clock->now();
  if (const auto end = deadline()) {
    wait = std::min(wait, std::chrono::duration_cast<milliseconds>(*end - parts_.allocation.end_margin - now));
  }
  if (parts_.allocation.idle_exit > milliseconds(0)) {
    std::lock_guard lock(idle_mu_);
    if (busy_slots_ == 0) {
      wait = std::min(wait, std::chrono::duration_cast<milliseconds>(idle_since_ + parts_.allocation.idle_exit - now));
    }
  }
  // Whole seconds, rounded up; at least 1 (a poll of 0 answers at once and would spin).
  const auto s = static_cast<int>((wait.count() + 999) / 1000);
  return std::clamp(s, std::min(1, long_poll_s), long_poll_s);
}

void AgentLoops::drain_if_time_is_up(bool after_no_work) {
  const auto now = parts_.clock->now();
  if (const auto end = deadline(); end && now + parts_.allocation.end_margin >= *end) {
    drain_by_itself(
        "less than end_margin_s (" +
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(parts_.allocation.end_margin).count()) +
        " s) left before the allocation's end");
    return;
  }
  if (!after_no_work || parts_.allocation.idle_exit <= std::chrono::milliseconds(0)) return;
  std::lock_guard lock(idle_mu_);
  if (busy_slots_ == 0 && now - idle_since_ >= parts_.allocation.idle_exit) {
    drain_by_itself(
        "idle for " + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(now - idle_since_).count()) +
        " s (idle_exit_s " +
        std::to_string(std::chrono::duration_cast<std::chrono::seconds>(parts_.allocation.idle_exit).count()) + ")");
  }
}

void AgentLoops::slot_busy(bool busy) {
  std::lock_guard lock(idle_mu_);
  busy_slots_ += busy ? 1 : -1;
  if (busy_slots_ == 0) idle_since_ = parts_.clock->now();
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
  // Error texts carry stderr tails (a compiler's coloured diagnostics): what reaches operators'
  // screens is escaped here, for every runner, and the coordinator refuses what is not.
  if (result) escape_result_text(*result);
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
