// StoreCore: the steps of a job's life more than one narrow store takes.
#include "coordinator/store/store_core.h"

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/codecs.h"
#include "coordinator/rules/scheduler.h"
#include "coordinator/store/rows.h"

namespace benchfleet::store {

StoreCore::StoreCore(StoreOptions store_options, const Clock& store_clock, std::unique_ptr<Database> database)
    : options(std::move(store_options)),
      clock(store_clock),
      db(std::move(database)),
      group(*db, options.group_commit, [this](bool committed) { on_group_decided(committed); }) {}

void StoreCore::on_group_decided(bool committed) {
  if (!committed) {
    // The group's writes are gone: what was cached from them must go too.
    run_specs.clear();
    descriptors.clear();
    series_ids.clear();
    std::lock_guard lock(credentials_mu);
    credentials.clear();
  }
  // Polls wait for work only after reading the queue, so they must hear of work that appeared
  // (or, after a failure, may have: they look again) only once it is durable.
  if (work_appeared && work_listener) work_listener();
  work_appeared = false;
}

Status StoreCore::end_attempt(std::int64_t job_id, int attempt, std::string_view outcome) {
  return db->run("UPDATE attempts SET ended_at = ?, outcome = ? WHERE job_id = ? AND attempt = ? AND ended_at IS NULL",
                 clock.now_ms(), outcome, job_id, attempt);
}

Status StoreCore::update_run_finished(std::int64_t run_id) {
  if (submitting_runs.contains(run_id)) return Status::Ok();  // its last jobs are still to come
  return db->run(
      "UPDATE runs SET finished_at = ?1 WHERE id = ?2 AND finished_at IS NULL AND NOT EXISTS "
      "(SELECT 1 FROM jobs WHERE run_id = ?2 AND status IN ('queued','leased','running'))",
      clock.now_ms(), run_id);
}

Result<std::int64_t> StoreCore::mark_implied_oom(std::int64_t run_id, std::int64_t job_id) {
  // Load what the pure rule needs: the cell's queued jobs and its jobs that ran out of memory,
  // each one seek of jobs_cells. The dtype is part of the cell: a float16
  // OOM says nothing about float32's memory.
  std::string model, mode, build, gpu, runtime, dtype;
  {
    BF_ASSIGN_OR_RETURN(
        auto cell,
        db->query_one("SELECT model, mode, torch_build, gpu_class, runtime, dtype FROM jobs WHERE id = ?", job_id));
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
      auto q, db->prepare("SELECT j.id, " + job_spec_columns("j") + " FROM jobs j INDEXED BY jobs_cells" + same_cell +
                          " AND j.status = 'queued'"));
  bind_cell(*q);
  while (true) {
    BF_ASSIGN_OR_RETURN(bool row, q->step());
    if (!row) break;
    queued.push_back({q->int64(0), job_spec_at(*q, 1)});
  }
  if (queued.empty()) return std::int64_t{0};

  std::vector<JobSpec> oomed;
  BF_ASSIGN_OR_RETURN(auto o, db->prepare("SELECT " + job_spec_columns("j") +
                                          " FROM jobs j INDEXED BY jobs_cells JOIN results r ON r.job_id = j.id" +
                                          same_cell + " AND r.status = 'oom'"));
  bind_cell(*o);
  while (true) {
    BF_ASSIGN_OR_RETURN(bool row, o->step());
    if (!row) break;
    oomed.push_back(job_spec_at(*o, 0));
  }

  const TimestampMs now = clock.now_ms();
  const auto implied = rules::implied_oom(queued, oomed);
  for (const auto& [job_id, batch] : implied) {
    BF_RETURN_IF_ERROR(db->run(
        "UPDATE jobs SET status = 'done', finished_at = ?1, updated_at = ?1 WHERE id = ?2 AND status = 'queued'", now,
        job_id));
    JobResult verdict;
    verdict.status = ResultStatus::kOomImplied;
    verdict.error = "batch " + std::to_string(batch) + " of this model, mode, build, GPU class, runtime and dtype (" +
                    dtype + ") ran out of memory";
    const std::string body = nlohmann::json(verdict).dump();
    BF_RETURN_IF_ERROR(
        db->run("INSERT INTO results (job_id, run_id, attempt, status, error, body, body_sha256, created_at) "
                "SELECT id, run_id, attempt, 'oom_implied', ?, ?, 'implied', ? FROM jobs WHERE id = ?",
                *verdict.error, body, now, job_id));
  }
  return static_cast<std::int64_t>(implied.size());
}

Result<MatrixSpec> StoreCore::run_spec_locked(std::int64_t run_id) {
  if (auto it = run_specs.find(run_id); it != run_specs.end()) return it->second;
  BF_ASSIGN_OR_RETURN(auto row, db->query_one("SELECT spec FROM runs WHERE id = ?", run_id));
  if (!row.found()) return Error::not_found("run " + std::to_string(run_id) + " does not exist");
  auto spec = decode<MatrixSpec>(nlohmann::json::parse(row->text(0), nullptr, false));
  if (!spec.ok()) return Error::internal("stored matrix of run " + std::to_string(run_id) + " is unreadable");
  run_specs.emplace(run_id, *spec);
  return spec;
}

Result<std::optional<StoreCore::HeldLease>> StoreCore::held_lease_locked(std::int64_t agent_id, const LeaseRef& lease,
                                                                         std::optional<int> attempt) {
  BF_ASSIGN_OR_RETURN(
      auto row,
      db->query_one(
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
  const TimestampMs now = clock.now_ms();
  BF_RETURN_IF_ERROR(end_attempt(job_id, attempt, outcome));
  const bool fail = rules::on_lease_expired(attempt, max_attempts) == rules::ExpiryAction::kFail;
  BF_RETURN_IF_ERROR(
      db->run("UPDATE jobs SET status = ?, finished_at = ?, updated_at = ?, lease_id = NULL, lease_agent_id = NULL,"
              " lease_slot = NULL, lease_expires_at = NULL, lease_request_id = NULL WHERE id = ?",
              fail ? "failed" : "queued", fail ? std::optional<TimestampMs>(now) : std::nullopt, now, job_id));
  if (!fail) work_appeared = true;
  // A requeued job may be implied by an OOM that arrived meanwhile; a failed one may end the run.
  BF_ASSIGN_OR_RETURN(const std::int64_t implied, mark_implied_oom(run_id, job_id));
  (void)implied;
  return update_run_finished(run_id);
}

}  // namespace benchfleet::store
