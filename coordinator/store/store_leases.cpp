// Store: leases (grant, renew, heartbeat, expiry) and results.
#include <optional>
#include <string>
#include <utility>

#include "common/codecs.h"
#include "coordinator/auth.h"
#include "coordinator/scheduler.h"
#include "coordinator/store/rows.h"
#include "coordinator/store/store.h"

namespace benchfleet::store {
namespace {

// The fingerprint's torch version (reports name it in their headers); nullopt when the result
// recorded none, as verdicts given before torch ran do.
std::optional<std::string> recorded_torch_version(const JobResult& result) {
  auto it = result.environment.find("torch_version");
  if (it == result.environment.end() || !it->is_string()) return std::nullopt;
  std::string version = it->get<std::string>();
  if (version.empty()) return std::nullopt;
  return version;
}

}  // namespace

Result<MatrixSpec> Store::run_spec_locked(std::int64_t run_id) {
  if (auto it = run_specs_.find(run_id); it != run_specs_.end()) return it->second;
  BF_ASSIGN_OR_RETURN(auto* s, db_->prepare("SELECT spec FROM runs WHERE id = ?"));
  s->bind(1, run_id);
  BF_ASSIGN_OR_RETURN(bool found, s->step());
  if (!found) {
    s->reset();
    return Error::not_found("run " + std::to_string(run_id) + " does not exist");
  }
  auto spec = decode<MatrixSpec>(nlohmann::json::parse(s->text(0), nullptr, false));
  s->reset();
  if (!spec.ok()) return Error::internal("stored matrix of run " + std::to_string(run_id) + " is unreadable");
  run_specs_.emplace(run_id, *spec);
  return spec;
}

Status Store::requeue_or_fail(std::int64_t job_id, int attempt, int max_attempts, std::int64_t run_id,
                              std::string_view outcome) {
  const TimestampMs now = clock_.now_ms();
  BF_RETURN_IF_ERROR(end_attempt(job_id, attempt, outcome));
  const bool fail = scheduler::on_lease_expired(attempt, max_attempts) == scheduler::ExpiryAction::kFail;
  BF_ASSIGN_OR_RETURN(auto* s, db_->prepare(
      "UPDATE jobs SET status = ?, finished_at = ?, updated_at = ?, lease_id = NULL, lease_agent_id = NULL,"
      " lease_slot = NULL, lease_expires_at = NULL, lease_request_id = NULL WHERE id = ?"));
  s->bind(1, fail ? "failed" : "queued");
  if (fail) {
    s->bind(2, now);
  } else {
    s->bind_null(2);
  }
  BF_RETURN_IF_ERROR(s->bind(3, now).bind(4, job_id).run());
  if (!fail) work_appeared_ = true;
  // A requeued job may be implied by an OOM that arrived meanwhile; a failed one may end the run.
  BF_ASSIGN_OR_RETURN(const std::int64_t implied, mark_implied_oom(run_id, job_id));
  (void)implied;
  return update_run_finished(run_id);
}

Result<LeaseGrant> Store::redeliver_locked(std::int64_t job_id) {
  LeaseGrant grant;
  grant.expires_at = scheduler::lease_expiry(clock_.now_ms(), options_.lease_ttl_ms);
  BF_ASSIGN_OR_RETURN(auto* s, db_->prepare(
      "UPDATE jobs SET lease_expires_at = ?, updated_at = ? WHERE id = ? AND lease_id IS NOT NULL"
      " RETURNING id, run_id, attempt, lease_id, " + job_spec_columns("jobs")));
  s->bind(1, grant.expires_at).bind(2, clock_.now_ms()).bind(3, job_id);
  BF_ASSIGN_OR_RETURN(bool found, s->step());
  if (!found) {
    s->reset();
    return Error::internal("job " + std::to_string(job_id) + " has no lease to hand over again");
  }
  grant.job_id = s->int64(0);
  grant.run_id = s->int64(1);
  grant.attempt = static_cast<int>(s->int64(2));
  grant.lease_id = s->text(3);
  grant.spec = job_spec_at(*s, 4);
  grant.redelivered = true;
  BF_ASSIGN_OR_RETURN(bool more, s->step());  // completes the UPDATE
  (void)more;
  s->reset();
  BF_RETURN_IF_ERROR(complete_grant_locked(grant));
  return grant;
}

Status Store::complete_grant_locked(LeaseGrant& grant) {
  BF_ASSIGN_OR_RETURN(MatrixSpec spec, run_spec_locked(grant.run_id));
  grant.measurement = spec.measurement;
  grant.memory_limit_mb = spec.memory_limit_mb;
  grant.timeout_s = spec.timeout_s;
  return Status::Ok();
}

Result<bool> Store::withdraw_lease(std::int64_t agent_id, const LeaseRef& lease) {
  return group_.run([&]() -> Result<bool> {
    BF_ASSIGN_OR_RETURN(const bool withdrawn, withdraw_locked(agent_id, lease));
    return withdrawn;
  });
}

Result<bool> Store::withdraw_locked(std::int64_t agent_id, const LeaseRef& lease) {
  // Expressions on the right see the row before the update: `attempt` is the withdrawn one.
  BF_ASSIGN_OR_RETURN(auto* s, db_->prepare(
      "UPDATE jobs SET status = 'queued', attempt = attempt - 1, lease_id = NULL, lease_agent_id = NULL,"
      " lease_slot = NULL, lease_expires_at = NULL, lease_request_id = NULL, lease_acked = 1,"
      " started_at = CASE WHEN attempt <= 1 THEN NULL ELSE started_at END, updated_at = ?"
      " WHERE id = ? AND lease_id = ? AND lease_agent_id = ? AND status = 'leased' AND lease_acked = 0"));
  BF_RETURN_IF_ERROR(s->bind(1, clock_.now_ms()).bind(2, lease.job_id).bind(3, lease.lease_id).bind(4, agent_id).run());
  if (db_->changes() == 0) return false;
  BF_ASSIGN_OR_RETURN(auto* gone, db_->prepare("DELETE FROM attempts WHERE job_id = ? AND lease_id = ?"));
  BF_RETURN_IF_ERROR(gone->bind(1, lease.job_id).bind(2, lease.lease_id).run());
  work_appeared_ = true;
  return true;
}

Result<LeaseAnswer> Store::lease(std::int64_t agent_id, const std::string& slot,
                                 const std::optional<std::string>& request_id) {
  return group_.run([&]() -> Result<LeaseAnswer> {
    const TimestampMs now = clock_.now_ms();

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
    BF_ASSIGN_OR_RETURN(auto* seen, db_->prepare("UPDATE agents SET last_seen_at = ? WHERE id = ?"));
    BF_RETURN_IF_ERROR(seen->bind(1, now).bind(2, agent_id).run());

    // One job per slot. What the slot holds and has not acknowledged may never have reached it
    // (a dropped connection, a retried or concurrent poll): it gets the same lease again. What
    // it acknowledged it has given up on (e.g. agent restart), unless this is a retry of the very
    // poll that got it.
    for (const auto& held : agent.leases) {
      if (held.slot != slot) continue;
      BF_ASSIGN_OR_RETURN(auto* h, db_->prepare(
          "SELECT attempt, max_attempts, lease_expires_at, lease_acked, lease_request_id, lease_id FROM jobs"
          " WHERE id = ?"));
      h->bind(1, held.job_id);
      BF_ASSIGN_OR_RETURN(bool found, h->step());
      if (!found) {
        h->reset();
        continue;
      }
      const int attempt = static_cast<int>(h->int64(0));
      const int max_attempts = static_cast<int>(h->int64(1));
      const bool expired = h->opt_int64(2).value_or(0) <= now;
      const bool acked = h->int64(3) != 0;
      const bool same_request = request_id && h->opt_text(4) == *request_id;
      const std::string lease_id = h->text(5);
      h->reset();
      if (expired) {
        BF_RETURN_IF_ERROR(requeue_or_fail(held.job_id, attempt, max_attempts, held.run_id, "expired"));
      } else if (agent.draining && !acked) {
        BF_ASSIGN_OR_RETURN(const bool withdrawn, withdraw_locked(agent_id, LeaseRef{held.job_id, lease_id}));
        (void)withdrawn;
      } else if (!acked || same_request) {
        BF_ASSIGN_OR_RETURN(LeaseGrant again, redeliver_locked(held.job_id));
        return LeaseAnswer{std::move(again), agent.draining};
      } else {
        BF_RETURN_IF_ERROR(requeue_or_fail(held.job_id, attempt, max_attempts, held.run_id, "released"));
      }
    }

    // Unsupported cells were judged when this agent enrolled and when each run was submitted.
    std::optional<std::int64_t> picked;
    if (!agent.draining) {
      BF_ASSIGN_OR_RETURN(picked, pick_candidate_locked(offer));
    }
    if (!picked) {
      return LeaseAnswer{std::nullopt, agent.draining};
    }

    LeaseGrant grant;
    grant.job_id = *picked;
    grant.lease_id = auth::generate_lease_id();
    grant.expires_at = scheduler::lease_expiry(now, options_.lease_ttl_ms);
    BF_ASSIGN_OR_RETURN(auto* take, db_->prepare(
        "UPDATE jobs SET status = 'leased', attempt = attempt + 1, lease_id = ?, lease_agent_id = ?, lease_slot = ?,"
        " lease_expires_at = ?, started_at = COALESCE(started_at, ?), updated_at = ?, lease_acked = 0,"
        " lease_request_id = ? WHERE id = ? AND status = 'queued'"
        " RETURNING attempt, run_id, group_key, " + job_spec_columns("jobs")));
    take->bind(1, grant.lease_id).bind(2, agent_id).bind(3, slot).bind(4, grant.expires_at).bind(5, now);
    take->bind(6, now).bind(7, request_id).bind(8, grant.job_id);
    BF_ASSIGN_OR_RETURN(bool taken, take->step());
    if (!taken) {
      take->reset();
      return Error::internal("job " + std::to_string(grant.job_id) + " was not queued when leased");
    }
    grant.attempt = static_cast<int>(take->int64(0));
    grant.run_id = take->int64(1);
    const std::string group = take->text(2);
    grant.spec = job_spec_at(*take, 3);
    // Drain the RETURNING statement so the UPDATE completes before the next statement.
    BF_ASSIGN_OR_RETURN(bool more, take->step());
    (void)more;
    take->reset();

    BF_ASSIGN_OR_RETURN(auto* attempt, db_->prepare(
        "INSERT INTO attempts (job_id, attempt, lease_id, agent_id, slot, leased_at) VALUES (?, ?, ?, ?, ?, ?)"));
    BF_RETURN_IF_ERROR(attempt->bind(1, grant.job_id).bind(2, grant.attempt).bind(3, grant.lease_id)
                           .bind(4, agent_id).bind(5, slot).bind(6, now).run());
    BF_ASSIGN_OR_RETURN(auto* owner, db_->prepare(
        "UPDATE jobs INDEXED BY jobs_group SET owner_agent_id = ?, owner_slot = ?"
        " WHERE group_key = ? AND owner_agent_id IS NULL"));
    BF_RETURN_IF_ERROR(owner->bind(1, agent_id).bind(2, slot).bind(3, group).run());

    BF_RETURN_IF_ERROR(complete_grant_locked(grant));
    return LeaseAnswer{std::move(grant), false};
  });
}

Result<Renewal> Store::renew_locked(std::int64_t agent_id, const LeaseRef& lease, bool mark_running) {
  BF_ASSIGN_OR_RETURN(auto* s, db_->prepare(
      "SELECT status, lease_id, lease_agent_id, lease_expires_at, attempt, max_attempts, run_id FROM jobs WHERE id = ?"));
  s->bind(1, lease.job_id);
  BF_ASSIGN_OR_RETURN(bool found, s->step());
  if (!found) {
    s->reset();
    return Renewal{LeaseState::kLost, 0};
  }
  const JobStatus status = job_status_at(*s, 0);
  const bool holder = s->opt_text(1) == lease.lease_id && s->opt_int64(2) == agent_id;
  const TimestampMs expires_at = s->opt_int64(3).value_or(0);
  const int attempt = static_cast<int>(s->int64(4));
  const int max_attempts = static_cast<int>(s->int64(5));
  const std::int64_t run_id = s->int64(6);
  s->reset();
  if (!holder) return Renewal{LeaseState::kLost, 0};
  if (status == JobStatus::kCancelled) return Renewal{LeaseState::kCancelled, 0};
  if (status != JobStatus::kLeased && status != JobStatus::kRunning) return Renewal{LeaseState::kLost, 0};

  const TimestampMs now = clock_.now_ms();
  if (expires_at <= now) {
    // Expired but not yet swept: it is stale all the same (docs/design.md §7), so expire it here.
    BF_RETURN_IF_ERROR(requeue_or_fail(lease.job_id, attempt, max_attempts, run_id, "expired"));
    return Renewal{LeaseState::kLost, 0};
  }
  const TimestampMs expires = scheduler::lease_expiry(now, options_.lease_ttl_ms);
  BF_ASSIGN_OR_RETURN(auto* u, db_->prepare(
      "UPDATE jobs SET lease_expires_at = ?, updated_at = ?, lease_acked = 1,"
      " status = CASE WHEN ? THEN 'running' ELSE status END WHERE id = ?"));
  BF_RETURN_IF_ERROR(u->bind(1, expires).bind(2, now).bind(3, mark_running ? 1 : 0).bind(4, lease.job_id).run());
  return Renewal{LeaseState::kActive, expires};
}

Result<Renewal> Store::renew(std::int64_t agent_id, const LeaseRef& lease) {
  return group_.run([&]() -> Result<Renewal> {
    BF_ASSIGN_OR_RETURN(auto* seen, db_->prepare("UPDATE agents SET last_seen_at = ? WHERE id = ?"));
    BF_RETURN_IF_ERROR(seen->bind(1, clock_.now_ms()).bind(2, agent_id).run());
    BF_ASSIGN_OR_RETURN(Renewal r, renew_locked(agent_id, lease, /*mark_running=*/true));
    return r;
  });
}

Result<std::vector<Renewal>> Store::heartbeat(std::int64_t agent_id, const std::vector<LeaseRef>& leases) {
  return group_.run([&]() -> Result<std::vector<Renewal>> {
    BF_ASSIGN_OR_RETURN(auto* seen, db_->prepare("UPDATE agents SET last_seen_at = ? WHERE id = ?"));
    BF_RETURN_IF_ERROR(seen->bind(1, clock_.now_ms()).bind(2, agent_id).run());
    if (db_->changes() == 0) return Error::not_found("agent " + std::to_string(agent_id) + " does not exist");
    std::vector<Renewal> out;
    for (const auto& l : leases) {
      BF_ASSIGN_OR_RETURN(Renewal r, renew_locked(agent_id, l, /*mark_running=*/false));
      out.push_back(r);
    }
    return out;
  });
}

Result<RecordOutcome> Store::record_result(std::int64_t agent_id, const LeaseRef& lease, int attempt,
                                           const JobResult& result) {
  // The digest covers the whole result; the row's body leaves the samples out: they go to
  // result_samples, which listings never read (migration 005).
  nlohmann::json body_json = result;
  const std::string digest = auth::sha256_hex(body_json.dump());
  const std::string samples = body_json["samples_ms"].dump();
  body_json.erase("samples_ms");
  const std::string body = body_json.dump();
  return group_.run([&]() -> Result<RecordOutcome> {
    BF_ASSIGN_OR_RETURN(auto* prior, db_->prepare(
        "SELECT r.id, r.body_sha256, r.agent_id, a.lease_id FROM results r"
        " LEFT JOIN attempts a ON a.job_id = r.job_id AND a.attempt = r.attempt WHERE r.job_id = ? AND r.attempt = ?"));
    prior->bind(1, lease.job_id).bind(2, attempt);
    BF_ASSIGN_OR_RETURN(bool exists, prior->step());
    if (exists) {
      // Only the holder of that attempt's lease learns about the stored result (a retry after a
      // lost acknowledgement); anyone else is told its lease is not current.
      const bool same_holder = prior->opt_int64(2) == agent_id && prior->opt_text(3) == lease.lease_id;
      RecordOutcome out{!same_holder                   ? RecordKind::kLost
                        : prior->text(1) == digest     ? RecordKind::kDuplicate
                                                       : RecordKind::kMismatch,
                        same_holder ? prior->int64(0) : 0, 0};
      prior->reset();
      return out;
    }
    prior->reset();

    BF_ASSIGN_OR_RETURN(auto* job, db_->prepare(
        "SELECT status, lease_id, lease_agent_id, attempt, run_id, lease_slot, lease_expires_at, max_attempts"
        " FROM jobs WHERE id = ?"));
    job->bind(1, lease.job_id);
    BF_ASSIGN_OR_RETURN(bool found, job->step());
    if (!found) {
      job->reset();
      return RecordOutcome{RecordKind::kNotFound, 0, 0};
    }
    const JobStatus status = job_status_at(*job, 0);
    const bool holder = job->opt_text(1) == lease.lease_id && job->opt_int64(2) == agent_id && job->int64(3) == attempt;
    const std::int64_t run_id = job->int64(4);
    const std::string slot = job->text(5);
    const TimestampMs expires_at = job->opt_int64(6).value_or(0);
    const int max_attempts = static_cast<int>(job->int64(7));
    job->reset();
    if (!holder) return RecordOutcome{RecordKind::kLost, 0, 0};
    if (status == JobStatus::kCancelled) return RecordOutcome{RecordKind::kCancelled, 0, 0};
    if (status != JobStatus::kLeased && status != JobStatus::kRunning) return RecordOutcome{RecordKind::kLost, 0, 0};

    const TimestampMs now = clock_.now_ms();
    if (expires_at <= now) {
      BF_RETURN_IF_ERROR(requeue_or_fail(lease.job_id, attempt, max_attempts, run_id, "expired"));
      return RecordOutcome{RecordKind::kLost, 0, 0};
    }
    BF_ASSIGN_OR_RETURN(auto* ins, db_->prepare(
        "INSERT INTO results (job_id, run_id, attempt, status, mean_ms, median_ms, p90_ms, p99_ms, min_ms, max_ms,"
        " stddev_ms, cv, ci_low_ms, ci_high_ms, iterations, first_call_ms, stop_reason, export_s, oom_phase, oom_bytes,"
        " error, signal, body, body_sha256, agent_id, slot, created_at, torch_version)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22,"
        " ?23, ?24, ?25, ?26, ?27, ?28)"));
    ins->bind(1, lease.job_id).bind(2, run_id).bind(3, attempt).bind(4, to_string(result.status));
    if (result.stats) {
      const auto& st = *result.stats;
      ins->bind(5, st.mean_ms).bind(6, st.median_ms).bind(7, st.p90_ms).bind(8, st.p99_ms).bind(9, st.min_ms);
      ins->bind(10, st.max_ms).bind(11, st.stddev_ms).bind(12, st.cv).bind(13, st.ci_low_ms).bind(14, st.ci_high_ms);
      ins->bind(15, st.iterations);
    }
    ins->bind(16, result.first_call_ms);
    if (result.stop_reason) ins->bind(17, to_string(*result.stop_reason));
    ins->bind(18, result.export_s);
    if (result.oom) {
      ins->bind(19, to_string(result.oom->phase)).bind(20, result.oom->bytes_requested);
    }
    ins->bind(21, result.error).bind(22, result.signal).bind(23, body).bind(24, digest).bind(25, agent_id);
    ins->bind(26, slot).bind(27, now).bind(28, recorded_torch_version(result));
    BF_RETURN_IF_ERROR(ins->run());
    RecordOutcome out{RecordKind::kStored, db_->last_insert_rowid(), 0};
    if (!result.samples_ms.empty()) {
      BF_ASSIGN_OR_RETURN(auto* ins_samples,
                          db_->prepare("INSERT INTO result_samples (result_id, samples_ms) VALUES (?, ?)"));
      BF_RETURN_IF_ERROR(ins_samples->bind(1, out.result_id).bind(2, samples).run());
    }

    BF_ASSIGN_OR_RETURN(auto* done, db_->prepare(
        "UPDATE jobs SET status = 'done', finished_at = ?, updated_at = ?, lease_id = NULL, lease_expires_at = NULL"
        " WHERE id = ?"));
    BF_RETURN_IF_ERROR(done->bind(1, now).bind(2, now).bind(3, lease.job_id).run());
    BF_RETURN_IF_ERROR(end_attempt(lease.job_id, attempt, "result"));
    if (result.status == ResultStatus::kOom) {
      BF_ASSIGN_OR_RETURN(out.implied_oom, mark_implied_oom(run_id, lease.job_id));
    }
    BF_RETURN_IF_ERROR(update_run_finished(run_id));
    return out;
  });
}

Result<LeaseState> Store::release(std::int64_t agent_id, const LeaseRef& lease) {
  return group_.run([&]() -> Result<LeaseState> {
    BF_ASSIGN_OR_RETURN(auto* s, db_->prepare(
        "SELECT status, lease_id, lease_agent_id, attempt, max_attempts, run_id FROM jobs WHERE id = ?"));
    s->bind(1, lease.job_id);
    BF_ASSIGN_OR_RETURN(bool found, s->step());
    if (!found) {
      s->reset();
      return LeaseState::kLost;
    }
    const JobStatus status = job_status_at(*s, 0);
    const bool holder = s->opt_text(1) == lease.lease_id && s->opt_int64(2) == agent_id;
    const int attempt = static_cast<int>(s->int64(3));
    const int max_attempts = static_cast<int>(s->int64(4));
    const std::int64_t run_id = s->int64(5);
    s->reset();
    if (!holder) return LeaseState::kLost;
    if (status == JobStatus::kCancelled) return LeaseState::kCancelled;
    if (status != JobStatus::kLeased && status != JobStatus::kRunning) return LeaseState::kLost;
    BF_RETURN_IF_ERROR(requeue_or_fail(lease.job_id, attempt, max_attempts, run_id, "released"));
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
    BF_ASSIGN_OR_RETURN(auto* s, db_->prepare(
        "SELECT id, run_id, attempt, max_attempts FROM jobs INDEXED BY jobs_leases WHERE lease_id IS NOT NULL"
        " AND status IN ('leased','running') AND lease_expires_at <= ?"));
    s->bind(1, clock_.now_ms());
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, s->step());
      if (!row) break;
      expired.push_back({s->int64(0), s->int64(1), static_cast<int>(s->int64(2)), static_cast<int>(s->int64(3))});
    }
    s->reset();
    for (const auto& e : expired) {
      BF_RETURN_IF_ERROR(requeue_or_fail(e.job_id, e.attempt, e.max_attempts, e.run_id, "expired"));
    }
    return static_cast<std::int64_t>(expired.size());
  });
}

}  // namespace benchfleet::store
