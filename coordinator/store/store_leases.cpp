// Store: leases. Granting one (Store::lease: settle what the slot holds, pick a candidate,
// grant it), handing it over again, withdrawing it, renewing it (renew, heartbeat), giving it
// back (release) and expiring it. Which job a slot runs next is decided in store_dispatch.cpp
// (the SQL tiers) and scheduler.h (the ranking); results are stored in store_results.cpp.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "common/codecs.h"
#include "coordinator/rules/scheduler.h"
#include "coordinator/rules/tokens.h"
#include "coordinator/store/rows.h"
#include "coordinator/store/store.h"

namespace benchfleet::store {

Result<MatrixSpec> Store::run_spec_locked(std::int64_t run_id) {
  if (auto it = run_specs_.find(run_id); it != run_specs_.end()) return it->second;
  BF_ASSIGN_OR_RETURN(auto row, db_->query_one("SELECT spec FROM runs WHERE id = ?", run_id));
  if (!row.found()) return Error::not_found("run " + std::to_string(run_id) + " does not exist");
  auto spec = decode<MatrixSpec>(nlohmann::json::parse(row->text(0), nullptr, false));
  if (!spec.ok()) return Error::internal("stored matrix of run " + std::to_string(run_id) + " is unreadable");
  run_specs_.emplace(run_id, *spec);
  return spec;
}

Result<std::optional<Store::HeldLease>> Store::held_lease_locked(std::int64_t agent_id, const LeaseRef& lease,
                                                                 std::optional<int> attempt) {
  BF_ASSIGN_OR_RETURN(
      auto row,
      db_->query_one(
          "SELECT status, lease_id, lease_agent_id, attempt, max_attempts, run_id, lease_expires_at, lease_slot"
          " FROM jobs WHERE id = ?",
          lease.job_id));
  if (!row.found()) return std::optional<HeldLease>();
  HeldLease held;
  const JobStatus status = job_status_at(*row, 0);
  const bool holder =
      row->opt_text(1) == lease.lease_id && row->opt_int64(2) == agent_id && (!attempt || row->int64(3) == *attempt);
  held.attempt = static_cast<int>(row->int64(3));
  held.max_attempts = static_cast<int>(row->int64(4));
  held.run_id = row->int64(5);
  held.expires_at = row->opt_int64(6).value_or(0);
  held.slot = row->opt_text(7).value_or("");
  // The one rule for every request a lease holder makes: only the current holder may act, and
  // a cancelled run's holder only learns that it was cancelled.
  held.state = !holder                                                           ? LeaseState::kLost
               : status == JobStatus::kCancelled                                 ? LeaseState::kCancelled
               : (status == JobStatus::kLeased || status == JobStatus::kRunning) ? LeaseState::kActive
                                                                                 : LeaseState::kLost;
  return std::optional<HeldLease>(std::move(held));
}

Status Store::requeue_or_fail(std::int64_t job_id, int attempt, int max_attempts, std::int64_t run_id,
                              std::string_view outcome) {
  const TimestampMs now = clock_.now_ms();
  BF_RETURN_IF_ERROR(end_attempt(job_id, attempt, outcome));
  const bool fail = scheduler::on_lease_expired(attempt, max_attempts) == scheduler::ExpiryAction::kFail;
  BF_RETURN_IF_ERROR(
      db_->run("UPDATE jobs SET status = ?, finished_at = ?, updated_at = ?, lease_id = NULL, lease_agent_id = NULL,"
               " lease_slot = NULL, lease_expires_at = NULL, lease_request_id = NULL WHERE id = ?",
               fail ? "failed" : "queued", fail ? std::optional<TimestampMs>(now) : std::nullopt, now, job_id));
  if (!fail) work_appeared_ = true;
  // A requeued job may be implied by an OOM that arrived meanwhile; a failed one may end the run.
  BF_ASSIGN_OR_RETURN(const std::int64_t implied, mark_implied_oom(run_id, job_id));
  (void)implied;
  return update_run_finished(run_id);
}

Result<LeaseGrant> Store::redeliver_locked(std::int64_t job_id) {
  LeaseGrant grant;
  grant.expires_at = scheduler::lease_expiry(clock_.now_ms(), options_.lease_ttl_ms);
  {
    BF_ASSIGN_OR_RETURN(
        auto row,
        db_->query_one("UPDATE jobs SET lease_expires_at = ?, updated_at = ? WHERE id = ? AND lease_id IS NOT NULL"
                       " RETURNING id, run_id, attempt, lease_id, " +
                           job_spec_columns("jobs"),
                       grant.expires_at, clock_.now_ms(), job_id));
    if (!row.found()) return Error::internal("job " + std::to_string(job_id) + " has no lease to hand over again");
    grant.job_id = row->int64(0);
    grant.run_id = row->int64(1);
    grant.attempt = static_cast<int>(row->int64(2));
    grant.lease_id = row->text(3);
    grant.spec = job_spec_at(*row, 4);
    BF_ASSIGN_OR_RETURN(bool more, row->step());  // completes the UPDATE
    (void)more;
  }
  grant.redelivered = true;
  BF_RETURN_IF_ERROR(complete_grant_locked(grant));
  return grant;
}

Status Store::complete_grant_locked(LeaseGrant& grant) {
  BF_ASSIGN_OR_RETURN(MatrixSpec spec, run_spec_locked(grant.run_id));
  grant.measurement = spec.measurement;
  grant.memory_limit_mb = spec.memory_limit_mb;
  grant.timeout_s = spec.timeout_s;
  // Dynamic shapes and the shape walk are torch.compile's (docs/design.md §4): python jobs of a
  // compiled mode only. The walk calls the model at every batch size of the matrix, ascending.
  grant.dynamic = false;
  grant.walk_batches.clear();
  if (grant.spec.runtime == Runtime::kPython && is_compiled(grant.spec.mode)) {
    grant.dynamic = spec.dynamic;
    if (spec.shape_walk) {
      grant.walk_batches = spec.batch_sizes;
      std::sort(grant.walk_batches.begin(), grant.walk_batches.end());
    }
  }
  return Status::Ok();
}

Result<bool> Store::withdraw_lease(std::int64_t agent_id, const LeaseRef& lease) {
  return group_.run([&] { return withdraw_locked(agent_id, lease); });
}

Result<bool> Store::withdraw_locked(std::int64_t agent_id, const LeaseRef& lease) {
  // Expressions on the right see the row before the update: `attempt` is the withdrawn one.
  BF_RETURN_IF_ERROR(
      db_->run("UPDATE jobs SET status = 'queued', attempt = attempt - 1, lease_id = NULL, lease_agent_id = NULL,"
               " lease_slot = NULL, lease_expires_at = NULL, lease_request_id = NULL, lease_acked = 1,"
               " started_at = CASE WHEN attempt <= 1 THEN NULL ELSE started_at END, updated_at = ?"
               " WHERE id = ? AND lease_id = ? AND lease_agent_id = ? AND status = 'leased' AND lease_acked = 0",
               clock_.now_ms(), lease.job_id, lease.lease_id, agent_id));
  if (db_->changes() == 0) return false;
  BF_RETURN_IF_ERROR(db_->run("DELETE FROM attempts WHERE job_id = ? AND lease_id = ?", lease.job_id, lease.lease_id));
  work_appeared_ = true;
  return true;
}

Result<LeaseAnswer> Store::lease(std::int64_t agent_id, const std::string& slot,
                                 const std::optional<std::string>& request_id) {
  return group_.run([&]() -> Result<LeaseAnswer> {
    BF_ASSIGN_OR_RETURN(AgentInfo agent, agent_info_locked(agent_id));
    scheduler::SlotOffer offer{agent_id, slot, {}, agent.descriptor.torch_builds};
    bool slot_known = false;
    for (const auto& s : agent.descriptor.slots) {
      if (s.id == slot) {
        offer.gpu_class = s.gpu_class;
        slot_known = true;
      }
    }
    if (!slot_known) {
      return Error::not_found("agent " + std::to_string(agent_id) + " has no slot \"" + slot + "\"; re-enrol");
    }
    BF_RETURN_IF_ERROR(db_->run("UPDATE agents SET last_seen_at = ? WHERE id = ?", clock_.now_ms(), agent_id));

    BF_ASSIGN_OR_RETURN(std::optional<LeaseGrant> again, settle_slot_locked(agent, slot, request_id));
    if (again) return LeaseAnswer{std::move(again), agent.draining};
    if (agent.draining) return LeaseAnswer{std::nullopt, true};
    // Unsupported cells were judged when this agent enrolled and when each run was submitted.
    BF_ASSIGN_OR_RETURN(std::optional<std::int64_t> picked, pick_candidate_locked(offer));
    if (!picked) return LeaseAnswer{std::nullopt, false};
    BF_ASSIGN_OR_RETURN(LeaseGrant grant, grant_locked(agent_id, slot, *picked, request_id));
    return LeaseAnswer{std::move(grant), false};
  });
}

Result<std::optional<LeaseGrant>> Store::settle_slot_locked(const AgentInfo& agent, const std::string& slot,
                                                            const std::optional<std::string>& request_id) {
  // One job per slot. What the slot holds and has not acknowledged may never have reached it
  // (a dropped connection, a retried or concurrent poll): it gets the same lease again. What
  // it acknowledged it has given up on (e.g. agent restart), unless this is a retry of the very
  // poll that got it.
  const TimestampMs now = clock_.now_ms();
  for (const auto& held : agent.leases) {
    if (held.slot != slot) continue;
    int attempt = 0, max_attempts = 0;
    bool expired = false, acked = false, same_request = false;
    std::string lease_id;
    {
      BF_ASSIGN_OR_RETURN(
          auto row,
          db_->query_one(
              "SELECT attempt, max_attempts, lease_expires_at, lease_acked, lease_request_id, lease_id FROM jobs"
              " WHERE id = ?",
              held.job_id));
      if (!row.found()) continue;
      attempt = static_cast<int>(row->int64(0));
      max_attempts = static_cast<int>(row->int64(1));
      expired = row->opt_int64(2).value_or(0) <= now;
      acked = row->int64(3) != 0;
      same_request = request_id && row->opt_text(4) == *request_id;
      lease_id = row->text(5);
    }
    if (expired) {
      BF_RETURN_IF_ERROR(requeue_or_fail(held.job_id, attempt, max_attempts, held.run_id, "expired"));
    } else if (agent.draining && !acked) {
      BF_ASSIGN_OR_RETURN(const bool withdrawn, withdraw_locked(agent.id, LeaseRef{held.job_id, lease_id}));
      (void)withdrawn;
    } else if (!acked || same_request) {
      BF_ASSIGN_OR_RETURN(LeaseGrant again, redeliver_locked(held.job_id));
      return std::optional<LeaseGrant>(std::move(again));
    } else {
      BF_RETURN_IF_ERROR(requeue_or_fail(held.job_id, attempt, max_attempts, held.run_id, "released"));
    }
  }
  return std::optional<LeaseGrant>();
}

Result<LeaseGrant> Store::grant_locked(std::int64_t agent_id, const std::string& slot, std::int64_t job_id,
                                       const std::optional<std::string>& request_id) {
  const TimestampMs now = clock_.now_ms();
  LeaseGrant grant;
  grant.job_id = job_id;
  grant.lease_id = auth::generate_lease_id();
  grant.expires_at = scheduler::lease_expiry(now, options_.lease_ttl_ms);
  std::string group;
  {
    BF_ASSIGN_OR_RETURN(
        auto taken,
        db_->query_one("UPDATE jobs SET status = 'leased', attempt = attempt + 1, lease_id = ?, lease_agent_id = ?, "
                       "lease_slot = ?,"
                       " lease_expires_at = ?, started_at = COALESCE(started_at, ?), updated_at = ?, lease_acked = 0,"
                       " lease_request_id = ? WHERE id = ? AND status = 'queued'"
                       " RETURNING attempt, run_id, group_key, " +
                           job_spec_columns("jobs"),
                       grant.lease_id, agent_id, slot, grant.expires_at, now, now, request_id, job_id));
    if (!taken.found()) return Error::internal("job " + std::to_string(job_id) + " was not queued when leased");
    grant.attempt = static_cast<int>(taken->int64(0));
    grant.run_id = taken->int64(1);
    group = taken->text(2);
    grant.spec = job_spec_at(*taken, 3);
    // Drain the RETURNING statement so the UPDATE completes before the next statement.
    BF_ASSIGN_OR_RETURN(bool more, taken->step());
    (void)more;
  }
  BF_RETURN_IF_ERROR(
      db_->run("INSERT INTO attempts (job_id, attempt, lease_id, agent_id, slot, leased_at) VALUES (?, ?, ?, ?, ?, ?)",
               grant.job_id, grant.attempt, grant.lease_id, agent_id, slot, now));
  // The slot that starts a group (a model, build, GPU class, runtime and batch) runs its other
  // modes too, so they compare on one device.
  BF_RETURN_IF_ERROR(
      db_->run("UPDATE jobs INDEXED BY jobs_group SET owner_agent_id = ?, owner_slot = ?"
               " WHERE group_key = ? AND owner_agent_id IS NULL",
               agent_id, slot, group));
  BF_RETURN_IF_ERROR(complete_grant_locked(grant));
  return grant;
}

Result<Renewal> Store::renew_locked(std::int64_t agent_id, const LeaseRef& lease, bool mark_running) {
  BF_ASSIGN_OR_RETURN(std::optional<HeldLease> held, held_lease_locked(agent_id, lease));
  if (!held || held->state != LeaseState::kActive) return Renewal{held ? held->state : LeaseState::kLost, 0};
  const TimestampMs now = clock_.now_ms();
  if (held->expires_at <= now) {
    // Expired but not yet swept: it is stale all the same (docs/design.md §7), so expire it here.
    BF_RETURN_IF_ERROR(requeue_or_fail(lease.job_id, held->attempt, held->max_attempts, held->run_id, "expired"));
    return Renewal{LeaseState::kLost, 0};
  }
  const TimestampMs expires = scheduler::lease_expiry(now, options_.lease_ttl_ms);
  BF_RETURN_IF_ERROR(
      db_->run("UPDATE jobs SET lease_expires_at = ?, updated_at = ?, lease_acked = 1,"
               " status = CASE WHEN ? THEN 'running' ELSE status END WHERE id = ?",
               expires, now, mark_running ? 1 : 0, lease.job_id));
  return Renewal{LeaseState::kActive, expires};
}

Result<Renewal> Store::renew(std::int64_t agent_id, const LeaseRef& lease) {
  return group_.run([&]() -> Result<Renewal> {
    BF_RETURN_IF_ERROR(db_->run("UPDATE agents SET last_seen_at = ? WHERE id = ?", clock_.now_ms(), agent_id));
    return renew_locked(agent_id, lease, /*mark_running=*/true);
  });
}

Result<std::vector<Renewal>> Store::heartbeat(std::int64_t agent_id, const std::vector<LeaseRef>& leases) {
  return group_.run([&]() -> Result<std::vector<Renewal>> {
    BF_RETURN_IF_ERROR(db_->run("UPDATE agents SET last_seen_at = ? WHERE id = ?", clock_.now_ms(), agent_id));
    if (db_->changes() == 0) return Error::not_found("agent " + std::to_string(agent_id) + " does not exist");
    std::vector<Renewal> out;
    for (const auto& l : leases) {
      BF_ASSIGN_OR_RETURN(Renewal r, renew_locked(agent_id, l, /*mark_running=*/false));
      out.push_back(r);
    }
    return out;
  });
}

Result<LeaseState> Store::release(std::int64_t agent_id, const LeaseRef& lease) {
  return group_.run([&]() -> Result<LeaseState> {
    BF_ASSIGN_OR_RETURN(std::optional<HeldLease> held, held_lease_locked(agent_id, lease));
    if (!held) return LeaseState::kLost;
    if (held->state != LeaseState::kActive) return held->state;
    BF_RETURN_IF_ERROR(requeue_or_fail(lease.job_id, held->attempt, held->max_attempts, held->run_id, "released"));
    return LeaseState::kActive;
  });
}

Result<std::int64_t> Store::expire_leases() {
  return group_.run([&]() -> Result<std::int64_t> {
    struct Expired {
      std::int64_t job_id, run_id;
      int attempt, max_attempts;
    };
    std::vector<Expired> expired;
    {
      BF_ASSIGN_OR_RETURN(
          auto s,
          db_->query(
              "SELECT id, run_id, attempt, max_attempts FROM jobs INDEXED BY jobs_leases WHERE lease_id IS NOT NULL"
              " AND status IN ('leased','running') AND lease_expires_at <= ?",
              clock_.now_ms()));
      while (true) {
        BF_ASSIGN_OR_RETURN(bool row, s->step());
        if (!row) break;
        expired.push_back({s->int64(0), s->int64(1), static_cast<int>(s->int64(2)), static_cast<int>(s->int64(3))});
      }
    }
    for (const auto& e : expired) {
      BF_RETURN_IF_ERROR(requeue_or_fail(e.job_id, e.attempt, e.max_attempts, e.run_id, "expired"));
    }
    return static_cast<std::int64_t>(expired.size());
  });
}

}  // namespace benchfleet::store
