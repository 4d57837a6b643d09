// LeaseStore: granting a lease (lease: settle what the slot holds, pick a candidate, grant it),
// handing it over again, withdrawing it, renewing it (renew, heartbeat), giving it back (release)
// and expiring it. Which job a slot runs next: the SQL tiers here (pick_candidate_locked), the
// ranking in rules/scheduler.h; results are stored by ResultStore (result_store.cpp).
#include "coordinator/store/lease_store.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/codecs.h"
#include "coordinator/rules/scheduler.h"
#include "coordinator/rules/tokens.h"
#include "coordinator/store/rows.h"
#include "coordinator/store/store_core.h"

namespace benchfleet::store {
namespace {

constexpr int kOwnedCandidates = 64;

// "build|runtime|mode" for every combination the agent can run; matched in SQL via json_each.
std::string capability_set(const std::vector<TorchBuildDescriptor>& builds) {
  nlohmann::json combos = nlohmann::json::array();
  for (const auto& b : builds) {
    for (const auto& rt : b.runtimes) {
      for (Mode m : rt.modes) {
        std::string combo = b.name;
        combo += '|';
        combo += to_string(rt.runtime);
        combo += '|';
        combo += to_string(m);
        combos.push_back(std::move(combo));
      }
    }
  }
  return combos.dump();
}

}  // namespace

Result<LeaseGrant> LeaseStore::redeliver_locked(std::int64_t job_id) {
  LeaseGrant grant;
  grant.expires_at = rules::lease_expiry(core_.clock().now_ms(), core_.options().lease_ttl_ms);
  {
    BF_ASSIGN_OR_RETURN(auto row,
                        core_.db().query_one(
                            "UPDATE jobs SET lease_expires_at = ?, updated_at = ? WHERE id = ? AND lease_id IS NOT NULL"
                            " RETURNING id, run_id, attempt, lease_id, " +
                                job_spec_columns("jobs"),
                            grant.expires_at, core_.clock().now_ms(), job_id));
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

Status LeaseStore::complete_grant_locked(LeaseGrant& grant) {
  BF_ASSIGN_OR_RETURN(MatrixSpec spec, core_.run_spec_locked(grant.run_id));
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

Result<bool> LeaseStore::withdraw_lease(std::int64_t agent_id, const LeaseRef& lease) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) { return withdraw_locked(agent_id, lease); });
}

Result<bool> LeaseStore::withdraw_locked(std::int64_t agent_id, const LeaseRef& lease) {
  // Expressions on the right see the row before the update: `attempt` is the withdrawn one.
  BF_RETURN_IF_ERROR(
      core_.db().run("UPDATE jobs SET status = 'queued', attempt = attempt - 1, lease_id = NULL, lease_agent_id = NULL,"
                     " lease_slot = NULL, lease_expires_at = NULL, lease_request_id = NULL, lease_acked = 1,"
                     " started_at = CASE WHEN attempt <= 1 THEN NULL ELSE started_at END, updated_at = ?"
                     " WHERE id = ? AND lease_id = ? AND lease_agent_id = ? AND status = 'leased' AND lease_acked = 0",
                     core_.clock().now_ms(), lease.job_id, lease.lease_id, agent_id));
  if (core_.db().changes() == 0) return false;
  BF_RETURN_IF_ERROR(
      core_.db().run("DELETE FROM attempts WHERE job_id = ? AND lease_id = ?", lease.job_id, lease.lease_id));
  core_.work_appeared();
  return true;
}

Result<LeaseAnswer> LeaseStore::lease(std::int64_t agent_id, const std::string& slot,
                                      const std::optional<std::string>& request_id) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<LeaseAnswer> {
    BF_ASSIGN_OR_RETURN(AgentInfo agent, core_.agent_info_locked(agent_id));
    rules::SlotOffer offer{agent_id, slot, {}, agent.descriptor.torch_builds};
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
    BF_RETURN_IF_ERROR(
        core_.db().run("UPDATE agents SET last_seen_at = ? WHERE id = ?", core_.clock().now_ms(), agent_id));

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

Result<std::optional<LeaseGrant>> LeaseStore::settle_slot_locked(const AgentInfo& agent, const std::string& slot,
                                                                 const std::optional<std::string>& request_id) {
  // One job per slot. What the slot holds and has not acknowledged may never have reached it
  // (a dropped connection, a retried or concurrent poll): it gets the same lease again. What
  // it acknowledged it has given up on (e.g. agent restart), unless this is a retry of the very
  // poll that got it.
  const TimestampMs now = core_.clock().now_ms();
  for (const auto& held : agent.leases) {
    if (held.slot != slot) continue;
    int attempt = 0, max_attempts = 0;
    bool expired = false, acked = false, same_request = false;
    std::string lease_id;
    {
      BF_ASSIGN_OR_RETURN(
          auto row,
          core_.db().query_one(
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
      BF_RETURN_IF_ERROR(core_.requeue_or_fail(held.job_id, attempt, max_attempts, held.run_id, "expired"));
    } else if (agent.draining && !acked) {
      BF_ASSIGN_OR_RETURN(const bool withdrawn, withdraw_locked(agent.id, LeaseRef{held.job_id, lease_id}));
      (void)withdrawn;
    } else if (!acked || same_request) {
      BF_ASSIGN_OR_RETURN(LeaseGrant again, redeliver_locked(held.job_id));
      return std::optional<LeaseGrant>(std::move(again));
    } else {
      BF_RETURN_IF_ERROR(core_.requeue_or_fail(held.job_id, attempt, max_attempts, held.run_id, "released"));
    }
  }
  return std::optional<LeaseGrant>();
}

Result<LeaseGrant> LeaseStore::grant_locked(std::int64_t agent_id, const std::string& slot, std::int64_t job_id,
                                            const std::optional<std::string>& request_id) {
  const TimestampMs now = core_.clock().now_ms();
  LeaseGrant grant;
  grant.job_id = job_id;
  grant.lease_id = rules::generate_lease_id();
  grant.expires_at = rules::lease_expiry(now, core_.options().lease_ttl_ms);
  std::string group;
  {
    BF_ASSIGN_OR_RETURN(
        auto taken, core_.db().query_one(
                        "UPDATE jobs SET status = 'leased', attempt = attempt + 1, lease_id = ?, lease_agent_id = ?, "
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
  BF_RETURN_IF_ERROR(core_.db().run(
      "INSERT INTO attempts (job_id, attempt, lease_id, agent_id, slot, leased_at) VALUES (?, ?, ?, ?, ?, ?)",
      grant.job_id, grant.attempt, grant.lease_id, agent_id, slot, now));
  // The slot that starts a group (a model, build, GPU class, runtime and batch) runs its other
  // modes too, so they compare on one device.
  BF_RETURN_IF_ERROR(
      core_.db().run("UPDATE jobs INDEXED BY jobs_group SET owner_agent_id = ?, owner_slot = ?"
                     " WHERE group_key = ? AND owner_agent_id IS NULL",
                     agent_id, slot, group));
  BF_RETURN_IF_ERROR(complete_grant_locked(grant));
  return grant;
}

Result<Renewal> LeaseStore::renew_locked(std::int64_t agent_id, const LeaseRef& lease, bool mark_running,
                                         TimestampMs arrived_at) {
  BF_ASSIGN_OR_RETURN(std::optional<StoreCore::HeldLease> held, core_.held_lease_locked(agent_id, lease));
  if (!held || held->state != LeaseState::kActive) return Renewal{held ? held->state : LeaseState::kLost, 0};
  const TimestampMs now = core_.clock().now_ms();
  // Judged as of the request's arrival: the coordinator's own queue never costs a lease.
  if (held->expires_at <= (arrived_at > 0 ? std::min(arrived_at, now) : now)) {
    // Expired but not yet swept: it is stale all the same (docs/design.md §7), so expire it here.
    BF_RETURN_IF_ERROR(core_.requeue_or_fail(lease.job_id, held->attempt, held->max_attempts, held->run_id, "expired"));
    return Renewal{LeaseState::kLost, 0};
  }
  const TimestampMs expires = rules::lease_expiry(now, core_.options().lease_ttl_ms);
  BF_RETURN_IF_ERROR(
      core_.db().run("UPDATE jobs SET lease_expires_at = ?, updated_at = ?, lease_acked = 1,"
                     " status = CASE WHEN ? THEN 'running' ELSE status END WHERE id = ?",
                     expires, now, mark_running ? 1 : 0, lease.job_id));
  return Renewal{LeaseState::kActive, expires};
}

Result<Renewal> LeaseStore::renew(std::int64_t agent_id, const LeaseRef& lease, TimestampMs arrived_at) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<Renewal> {
    BF_RETURN_IF_ERROR(
        core_.db().run("UPDATE agents SET last_seen_at = ? WHERE id = ?", core_.clock().now_ms(), agent_id));
    return renew_locked(agent_id, lease, /*mark_running=*/true, arrived_at);
  });
}

Result<std::vector<Renewal>> LeaseStore::heartbeat(std::int64_t agent_id, const std::vector<LeaseRef>& leases,
                                                   TimestampMs arrived_at) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<std::vector<Renewal>> {
    BF_RETURN_IF_ERROR(
        core_.db().run("UPDATE agents SET last_seen_at = ? WHERE id = ?", core_.clock().now_ms(), agent_id));
    if (core_.db().changes() == 0) return Error::not_found("agent " + std::to_string(agent_id) + " does not exist");
    std::vector<Renewal> out;
    for (const auto& l : leases) {
      BF_ASSIGN_OR_RETURN(Renewal r, renew_locked(agent_id, l, /*mark_running=*/false, arrived_at));
      out.push_back(r);
    }
    return out;
  });
}

Result<LeaseState> LeaseStore::release(std::int64_t agent_id, const LeaseRef& lease) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<LeaseState> {
    BF_ASSIGN_OR_RETURN(std::optional<StoreCore::HeldLease> held, core_.held_lease_locked(agent_id, lease));
    if (!held) return LeaseState::kLost;
    if (held->state != LeaseState::kActive) return held->state;
    BF_RETURN_IF_ERROR(
        core_.requeue_or_fail(lease.job_id, held->attempt, held->max_attempts, held->run_id, "released"));
    return LeaseState::kActive;
  });
}

LeaseStore::Arrivals::Ticket::Ticket(Arrivals& a, TimestampMs at) : arrivals_(a), at_(at) {
  MutexLock lock(arrivals_.mu_);
  arrivals_.at_.insert(at);
}

LeaseStore::Arrivals::Ticket::~Ticket() {
  MutexLock lock(arrivals_.mu_);
  arrivals_.at_.erase(arrivals_.at_.find(at_));
}

std::optional<TimestampMs> LeaseStore::Arrivals::oldest() const {
  MutexLock lock(mu_);
  if (at_.empty()) return std::nullopt;
  return *at_.begin();
}

Result<std::int64_t> LeaseStore::expire_leases() {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<std::int64_t> {
    // Read under the store's lock: a request that arrived before this point and is still being
    // handled holds the cutoff back to its arrival.
    TimestampMs cutoff = core_.clock().now_ms();
    if (const auto oldest = arrivals_.oldest()) cutoff = std::min(cutoff, *oldest - 1);
    struct Expired {
      std::int64_t job_id, run_id;
      int attempt, max_attempts;
    };
    std::vector<Expired> expired;
    {
      BF_ASSIGN_OR_RETURN(
          auto s,
          core_.db().query(
              "SELECT id, run_id, attempt, max_attempts FROM jobs INDEXED BY jobs_leases WHERE lease_id IS NOT NULL"
              " AND status IN ('leased','running') AND lease_expires_at <= ?",
              cutoff));
      while (true) {
        BF_ASSIGN_OR_RETURN(bool row, s->step());
        if (!row) break;
        expired.push_back({s->int64(0), s->int64(1), static_cast<int>(s->int64(2)), static_cast<int>(s->int64(3))});
      }
    }
    for (const auto& e : expired) {
      BF_RETURN_IF_ERROR(core_.requeue_or_fail(e.job_id, e.attempt, e.max_attempts, e.run_id, "expired"));
    }
    return static_cast<std::int64_t>(expired.size());
  });
}

Result<std::optional<std::int64_t>> LeaseStore::pick_candidate_locked(const rules::SlotOffer& offer) {
  // rules::pick_job ranks groups this slot owns, then groups nobody owns, then the rest; each
  // tier is read only when the ones before it gave nothing. The slot's own groups are few (what
  // it started and has not finished): one seek of jobs_queued_owned. The other two tiers read one
  // row per (build, runtime, mode) the slot offers, an ordered seek of jobs_queued_unowned_cells
  // or jobs_queued_cells: the first row of a cell is the best of it, because the
  // SQL's filter is can_run's. Before, each tier read the class's queue in priority order and
  // filtered it row by row: every lease read all the queued jobs ahead that the slot cannot run.
  const std::string columns = "SELECT j.id, j.priority, j.owner_agent_id, j.owner_slot, " + job_spec_columns("j");
  std::vector<rules::Candidate> candidates;
  auto read = [&](Statement& q) -> Status {
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, q.step());
      if (!row) break;
      rules::Candidate c;
      c.job_id = q.int64(0);
      c.priority = static_cast<int>(q.int64(1));
      if (!q.is_null(2)) c.group_owner = rules::SlotRef{q.int64(2), q.text(3)};
      c.spec = job_spec_at(q, 4);
      candidates.push_back(std::move(c));
    }
    q.reset();  // bound again for the next cell
    return Status::Ok();
  };

  BF_ASSIGN_OR_RETURN(
      auto owned,
      core_.db().prepare(
          columns +
          " FROM jobs j INDEXED BY jobs_queued_owned WHERE j.status = 'queued' AND j.owner_agent_id = ?1"
          " AND j.owner_slot = ?2 AND j.gpu_class = ?3 AND (j.torch_build || '|' || j.runtime || '|' || j.mode) IN"
          " (SELECT value FROM json_each(?4)) ORDER BY j.priority DESC, j.id LIMIT " +
          std::to_string(kOwnedCandidates)));
  owned->bind(1, offer.agent_id).bind(2, offer.slot).bind(3, offer.gpu_class).bind(4, capability_set(offer.builds));
  BF_RETURN_IF_ERROR(read(*owned));
  if (auto picked = rules::pick_job(offer, candidates)) return picked;

  const std::string per_cell =
      " WHERE j.status = 'queued' AND j.gpu_class = ?1 AND j.torch_build = ?2"
      " AND j.runtime = ?3 AND j.mode = ?4";
  const std::string best = " ORDER BY j.priority DESC, j.id LIMIT 1";
  const std::string tiers[] = {
      columns + " FROM jobs j INDEXED BY jobs_queued_unowned_cells" + per_cell + " AND j.owner_agent_id IS NULL" + best,
      columns + " FROM jobs j INDEXED BY jobs_queued_cells" + per_cell + best,
  };
  for (const auto& sql : tiers) {
    BF_ASSIGN_OR_RETURN(auto q, core_.db().prepare(sql));
    for (const auto& b : offer.builds) {
      for (const auto& rt : b.runtimes) {
        for (Mode m : rt.modes) {
          q->bind(1, offer.gpu_class).bind(2, b.name).bind(3, to_string(rt.runtime)).bind(4, to_string(m));
          BF_RETURN_IF_ERROR(read(*q));
        }
      }
    }
    if (auto picked = rules::pick_job(offer, candidates)) return picked;
  }
  return std::optional<std::int64_t>{};
}

}  // namespace benchfleet::store
