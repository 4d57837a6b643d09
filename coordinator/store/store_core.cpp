// StoreCore: the steps of a job's life more than one narrow store takes.
#include "coordinator/store/store_core.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "common/codecs.h"
#include "coordinator/rules/scheduler.h"
#include "coordinator/store/rows.h"

namespace benchfleet::store {

StoreCore::StoreCore(StoreOptions store_options, const Clock& store_clock, std::unique_ptr<Database> database)
    : options_(std::move(store_options)),
      clock_(store_clock),
      db_(std::move(database)),
      group_(*db_, options_.group_commit, [this](bool committed) BF_REQUIRES(group_) { on_group_decided(committed); }) {
}

void StoreCore::on_group_decided(bool committed) {
  if (!committed) {
    // The group's writes are gone: what was cached from them must go too.
    run_specs_.clear();
    descriptors_.clear();
    series_ids_.clear();
    MutexLock lock(credentials_mu_);
    credentials_.clear();
  }
  // Polls wait for work only after reading the queue, so they must hear of work that appeared
  // (or, after a failure, may have: they look again) only once it is durable.
  if (work_appeared_ && work_listener_) work_listener_();
  work_appeared_ = false;
}

void StoreCore::assert_held() {
  if (group_.held_by_this_thread()) return;
  // Straight to stderr: the process ends before a logger would flush.
  std::fputs("benchfleet: a step of the store ran outside an operation of its group commit\n", stderr);
  std::abort();
}

std::optional<AgentCredentials> StoreCore::cached_credentials(std::int64_t agent_id) {
  MutexLock lock(credentials_mu_);
  if (auto it = credentials_.find(agent_id); it != credentials_.end()) return it->second;
  return std::nullopt;
}

void StoreCore::cache_credentials(std::int64_t agent_id, const AgentCredentials& credentials) {
  MutexLock lock(credentials_mu_);
  credentials_.insert_or_assign(agent_id, credentials);
}

void StoreCore::forget_agent(std::int64_t agent_id) {
  descriptors_.erase(agent_id);
  MutexLock lock(credentials_mu_);
  credentials_.erase(agent_id);
}

Status StoreCore::end_attempt(std::int64_t job_id, int attempt, std::string_view outcome) {
  return db_->run("UPDATE attempts SET ended_at = ?, outcome = ? WHERE job_id = ? AND attempt = ? AND ended_at IS NULL",
                  clock_.now_ms(), outcome, job_id, attempt);
}

Status StoreCore::update_run_finished(std::int64_t run_id) {
  if (submitting_runs_.contains(run_id)) return Status::Ok();  // its last jobs are still to come
  return db_->run(
      "UPDATE runs SET finished_at = ?1 WHERE id = ?2 AND finished_at IS NULL AND NOT EXISTS "
      "(SELECT 1 FROM jobs WHERE run_id = ?2 AND status IN ('queued','leased','running'))",
      clock_.now_ms(), run_id);
}

Result<std::int64_t> StoreCore::mark_implied_oom(std::int64_t run_id, std::int64_t job_id) {
  // Load what the pure rule needs: the cell's queued jobs and its jobs that ran out of memory,
  // each one seek of jobs_cells. The dtype is part of the cell: a float16
  // OOM says nothing about float32's memory.
  std::string model, mode, build, gpu, runtime, dtype;
  {
    BF_ASSIGN_OR_RETURN(
        auto cell,
        db_->query_one("SELECT model, mode, torch_build, gpu_class, runtime, dtype FROM jobs WHERE id = ?", job_id));
    if (!cell.found()) return std::int64_t{0};
    model = cell->text(0), mode = cell->text(1), build = cell->text(2), gpu = cell->text(3), runtime = cell->text(4);
    dtype = cell->text(5);
  }
  auto bind_cell = [&](Statement& s) {
    s.bind(1, run_id).bind(2, model).bind(3, mode).bind(4, build).bind(5, gpu).bind(6, runtime).bind(7, dtype);
  };
  const std::string same_cell =
      " WHERE j.run_id = ?1 AND j.model = ?2 AND j.mode = ?3 AND j.torch_build = ?4"
      " AND j.gpu_class = ?5 AND j.runtime = ?6 AND j.dtype = ?7";

  std::vector<rules::QueuedJob> queued;
  BF_ASSIGN_OR_RETURN(
      auto q, db_->prepare("SELECT j.id, " + job_spec_columns("j") + " FROM jobs j INDEXED BY jobs_cells" + same_cell +
                           " AND j.status = 'queued'"));
  bind_cell(*q);
  while (true) {
    BF_ASSIGN_OR_RETURN(bool row, q->step());
    if (!row) break;
    queued.push_back({q->int64(0), job_spec_at(*q, 1)});
  }
  if (queued.empty()) return std::int64_t{0};

  std::vector<JobSpec> oomed;
  BF_ASSIGN_OR_RETURN(auto o, db_->prepare("SELECT " + job_spec_columns("j") +
                                           " FROM jobs j INDEXED BY jobs_cells JOIN results r ON r.job_id = j.id" +
                                           same_cell + " AND r.status = 'oom'"));
  bind_cell(*o);
  while (true) {
    BF_ASSIGN_OR_RETURN(bool row, o->step());
    if (!row) break;
    oomed.push_back(job_spec_at(*o, 0));
  }

  const TimestampMs now = clock_.now_ms();
  const auto implied = rules::implied_oom(queued, oomed);
  for (const auto& [job_id, batch] : implied) {
    BF_RETURN_IF_ERROR(db_->run(
        "UPDATE jobs SET status = 'done', finished_at = ?1, updated_at = ?1 WHERE id = ?2 AND status = 'queued'", now,
        job_id));
    JobResult verdict;
    verdict.status = ResultStatus::kOomImplied;
    verdict.error = "batch " + std::to_string(batch) + " of this model, mode, build, GPU class, runtime and dtype (" +
                    dtype + ") ran out of memory";
    const std::string body = nlohmann::json(verdict).dump();
    BF_RETURN_IF_ERROR(
        db_->run("INSERT INTO results (job_id, run_id, attempt, status, error, body, body_sha256, created_at) "
                 "SELECT id, run_id, attempt, 'oom_implied', ?, ?, 'implied', ? FROM jobs WHERE id = ?",
                 *verdict.error, body, now, job_id));
  }
  return static_cast<std::int64_t>(implied.size());
}

Result<MatrixSpec> StoreCore::run_spec_locked(std::int64_t run_id) {
  if (auto it = run_specs_.find(run_id); it != run_specs_.end()) return it->second;
  BF_ASSIGN_OR_RETURN(auto row, db_->query_one("SELECT spec FROM runs WHERE id = ?", run_id));
  if (!row.found()) return Error::not_found("run " + std::to_string(run_id) + " does not exist");
  auto spec = decode<MatrixSpec>(nlohmann::json::parse(row->text(0), nullptr, false));
  if (!spec.ok()) return Error::internal("stored matrix of run " + std::to_string(run_id) + " is unreadable");
  run_specs_.emplace(run_id, *spec);
  return spec;
}

Result<AgentInfo> StoreCore::agent_info_locked(std::int64_t agent_id) {
  AgentInfo info;
  {
    BF_ASSIGN_OR_RETURN(auto s,
                        db_->query_one("SELECT id, descriptor, enrolled_at, last_seen_at, draining OR self_draining,"
                                       " reenrol_approved_at IS NOT NULL FROM agents WHERE id = ?",
                                       agent_id));
    if (!s.found()) return Error::not_found("agent " + std::to_string(agent_id) + " does not exist");
    info.id = s->int64(0);
    // Every lease reads its agent: the decoded descriptor is kept until the agent enrols again.
    if (auto it = descriptors_.find(agent_id); it != descriptors_.end()) {
      info.descriptor = it->second;
    } else if (auto d = decode<AgentDescriptor>(nlohmann::json::parse(s->text(1), nullptr, false)); d.ok()) {
      info.descriptor = std::move(*d);
      descriptors_.emplace(agent_id, info.descriptor);
    }
    info.enrolled_at = s->int64(2);
    info.last_seen_at = s->int64(3);
    info.draining = s->int64(4) != 0;
    info.reenrolment_approved = s->int64(5) != 0;
  }
  BF_ASSIGN_OR_RETURN(
      auto l,
      db_->query("SELECT lease_slot, id, run_id, status, " + job_spec_columns("jobs") +
                     " FROM jobs WHERE lease_agent_id = ? AND lease_id IS NOT NULL AND status IN ('leased','running')"
                     " ORDER BY lease_slot",
                 agent_id));
  while (true) {
    BF_ASSIGN_OR_RETURN(bool row, l->step());
    if (!row) break;
    info.leases.push_back({l->text(0), l->int64(1), l->int64(2), job_spec_at(*l, 4), l->text(3)});
  }
  return info;
}

Result<std::optional<StoreCore::HeldLease>> StoreCore::held_lease_locked(std::int64_t agent_id, const LeaseRef& lease,
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

Status StoreCore::requeue_or_fail(std::int64_t job_id, int attempt, int max_attempts, std::int64_t run_id,
                                  std::string_view outcome) {
  const TimestampMs now = clock_.now_ms();
  BF_RETURN_IF_ERROR(end_attempt(job_id, attempt, outcome));
  const bool fail = rules::on_lease_expired(attempt, max_attempts) == rules::ExpiryAction::kFail;
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

}  // namespace benchfleet::store
