// Leases: the protocol by which a slot gets its next job and keeps it (grant, redelivery,
// withdrawal, renewal, heartbeat, release, expiry), with the dispatch rules that pick the job.
// Thread-safe: every method is one operation of the store's group commit (store_core.h): it
// runs alone on the one connection and returns once what it wrote is committed.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "common/agent_protocol.h"
#include "common/result.h"
#include "common/thread_safety.h"
#include "common/types.h"
#include "coordinator/rules/scheduler.h"
#include "coordinator/store/agent_types.h"
#include "coordinator/store/store_core.h"

namespace benchfleet::store {

class LeaseStore {
 public:
  explicit LeaseStore(StoreCore& core) : core_(core) {}
  LeaseStore(const LeaseStore&) = delete;
  LeaseStore& operator=(const LeaseStore&) = delete;

  // Grants `slot` of `agent_id` its next job; no grant when nothing fits or the agent drains.
  // A slot runs one job at a time, so what the slot already holds decides first:
  // - a lease not yet acknowledged (no renewal or heartbeat has named it), or one granted to
  //   the same `request_id`, is handed over again: same lease id, same attempt, its expiry
  //   renewed (LeaseGrant::redelivered). A retried or concurrent poll so never burns an attempt.
  //   While the agent drains, an unacknowledged lease is withdrawn instead (see withdraw_lease);
  // - an expired lease is expired (requeued at attempt + 1, or failed after max attempts);
  // - an acknowledged lease is released the same way: the slot has given up on it (restart).
  // `request_id` is the poll's agent-chosen id (idempotency key), kept with the lease it gets.
  Result<LeaseAnswer> lease(std::int64_t agent_id, const std::string& slot,
                            const std::optional<std::string>& request_id = std::nullopt);
  // Undoes a grant whose response never reached its agent: while the lease is current and not
  // yet acknowledged, the job goes back to the queue at the attempt it had before the grant (the
  // attempt's row is removed) and waiting polls are woken. Returns whether it was withdrawn;
  // false when the lease was acknowledged, ended, or its run cancelled (nothing to undo).
  Result<bool> withdraw_lease(std::int64_t agent_id, const LeaseRef& lease);
  // Extends a lease (progress) and acknowledges it; marks the job running. `arrived_at`: when the
  // request arrived (AgentArrivals); a lease that had not expired then is renewed, however late
  // the coordinator comes to it. 0: now.
  Result<Renewal> renew(std::int64_t agent_id, const LeaseRef& lease, TimestampMs arrived_at = 0);
  // Heartbeat: records the agent as seen and renews (and acknowledges) each listed lease, as
  // renew does.
  Result<std::vector<Renewal>> heartbeat(std::int64_t agent_id, const std::vector<LeaseRef>& leases,
                                         TimestampMs arrived_at = 0);
  // The holder gives a lease back unfinished (an aborting agent): the job is requeued at once
  // (or fails after max attempts). kLost when the lease is not current, kCancelled when its run
  // was cancelled (nothing to do then).
  Result<LeaseState> release(std::int64_t agent_id, const LeaseRef& lease);
  // Requeues (or fails, after max attempts) jobs whose lease expired. Returns how many changed.
  // A lease is never lost for the coordinator's own lateness: while agent requests are being
  // handled (arrivals()), only leases that expired before the oldest of them arrived are expired,
  // since that request may be the heartbeat that renews the others.
  Result<std::int64_t> expire_leases();

  // The agent requests being handled, by arrival: the API notes each from the moment it has the
  // request until it answered (ticket), so the sweeper does not expire what they may renew.
  class Arrivals {
   public:
    class Ticket {
     public:
      Ticket(Arrivals& a, TimestampMs at);
      ~Ticket();
      Ticket(const Ticket&) = delete;
      Ticket& operator=(const Ticket&) = delete;
      TimestampMs at() const { return at_; }

     private:
      Arrivals& arrivals_;
      TimestampMs at_;
    };
    // The arrival time of the oldest request being handled; nullopt when none is.
    std::optional<TimestampMs> oldest() const;

   private:
    mutable Mutex mu_;
    std::multiset<TimestampMs> at_ BF_GUARDED_BY(mu_);
  };
  Arrivals& arrivals() { return arrivals_; }

 private:
  // The job `offer` should run next (rules::pick_job over the best queued job of each cell
  // the slot can run, tier by tier), or nullopt when none fits.
  Result<std::optional<std::int64_t>> pick_candidate_locked(const rules::SlotOffer& offer) BF_REQUIRES(core_.lock());
  // lease, step one: what `slot` already holds is handed over again (returned), withdrawn
  // (draining), expired or released; see lease().
  Result<std::optional<LeaseGrant>> settle_slot_locked(const AgentInfo& agent, const std::string& slot,
                                                       const std::optional<std::string>& request_id)
      BF_REQUIRES(core_.lock());
  // lease, last step: `job_id` (queued, picked by pick_candidate_locked) leased to `slot`.
  Result<LeaseGrant> grant_locked(std::int64_t agent_id, const std::string& slot, std::int64_t job_id,
                                  const std::optional<std::string>& request_id) BF_REQUIRES(core_.lock());
  Result<Renewal> renew_locked(std::int64_t agent_id, const LeaseRef& lease, bool mark_running, TimestampMs arrived_at)
      BF_REQUIRES(core_.lock());
  // The current lease on `job_id` handed over again, its expiry renewed (lease).
  Result<LeaseGrant> redeliver_locked(std::int64_t job_id) BF_REQUIRES(core_.lock());
  // withdraw_lease inside a caller's transaction.
  Result<bool> withdraw_locked(std::int64_t agent_id, const LeaseRef& lease) BF_REQUIRES(core_.lock());
  // Fills a grant's run-level parts (measurement, memory limit, timeout; for python compiled
  // jobs dynamic and the shape walk's batch sizes) from its run.
  Status complete_grant_locked(LeaseGrant& grant) BF_REQUIRES(core_.lock());

  StoreCore& core_;
  Arrivals arrivals_;
};

}  // namespace benchfleet::store
