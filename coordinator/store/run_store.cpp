// RunStore: runs and their jobs.
#include "coordinator/store/run_store.h"

#include <algorithm>
#include <span>

#include "common/codecs.h"
#include "common/matrix.h"
#include "coordinator/rules/scheduler.h"
#include "coordinator/store/agent_store.h"
#include "coordinator/store/page.h"
#include "coordinator/store/rows.h"
#include "coordinator/store/store_core.h"
#include "coordinator/store/unsupported_jobs.h"

namespace benchfleet::store {

Result<RunCreated> RunStore::create_run(const MatrixSpec& spec, const std::vector<JobSpec>& jobs) {
  if (jobs.size() <= kSubmitChunk) {
    return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<RunCreated> { return create_run_locked(spec, jobs); });
  }
  // A big run goes in as several operations of kSubmitChunk jobs, so the agents' requests run
  // between them. Its first jobs may be leased before its last are stored; until the last chunk
  // it is never marked finished (StoreCore::submitting_runs), and a cancel stops what is left.
  const std::span<const JobSpec> all(jobs);
  std::int64_t run_id = 0;
  const Status first = core_.run([&]() BF_REQUIRES(core_.lock()) -> Status {
    BF_ASSIGN_OR_RETURN(run_id, insert_run_locked(spec, jobs.size(), std::nullopt, std::nullopt));
    BF_RETURN_IF_ERROR(insert_jobs_locked(run_id, spec, all.first(kSubmitChunk)));
    core_.submitting_runs().insert(run_id);
    return Status::Ok();
  });
  if (!first.ok()) {
    // Nothing of it is stored (its operation or its commit failed), so its id may be given again.
    (void)core_.run([&]() BF_REQUIRES(core_.lock()) -> Status {
      core_.submitting_runs().erase(run_id);
      return Status::Ok();
    });
    return first.error();
  }
  Status stored = Status::Ok();
  for (std::size_t at = kSubmitChunk; stored.ok() && at < jobs.size(); at += kSubmitChunk) {
    core_.yield_to_waiting();  // the agents' requests waiting now go between two chunks
    stored = core_.run([&]() BF_REQUIRES(core_.lock()) -> Status {
      return insert_jobs_locked(run_id, spec, all.subspan(at, std::min(kSubmitChunk, jobs.size() - at)));
    });
  }
  // The cells no enrolled slot can run are marked as the jobs went in: kSubmitChunk a time, the
  // agents' requests between (40,000 unsupported cells in one operation held heartbeats 2 s).
  for (bool more = stored.ok(); more;) {
    core_.yield_to_waiting();
    auto marked = core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<bool> {
      return mark_unsupported_for_run(core_, spec, kSubmitChunk);
    });
    if (!marked.ok()) {
      stored = marked.error();
      break;
    }
    more = *marked;
  }
  core_.yield_to_waiting();
  auto finished = core_.run([&]() BF_REQUIRES(core_.lock()) -> Status {
    core_.submitting_runs().erase(run_id);
    if (!stored.ok()) return close_partial_run_locked(run_id);
    return core_.update_run_finished(run_id);
  });
  BF_RETURN_IF_ERROR(stored);
  BF_RETURN_IF_ERROR(finished);
  return RunCreated{run_id, static_cast<std::int64_t>(jobs.size())};
}

Result<RunCreated> RunStore::create_run_locked(const MatrixSpec& spec, const std::vector<JobSpec>& jobs,
                                               std::optional<std::int64_t> schedule_id,
                                               std::optional<TimestampMs> due_at) {
  core_.assert_held();  // called from other stores' operations too
  BF_ASSIGN_OR_RETURN(const std::int64_t run_id, insert_run_locked(spec, jobs.size(), schedule_id, due_at));
  BF_RETURN_IF_ERROR(insert_jobs_locked(run_id, spec, jobs));
  BF_RETURN_IF_ERROR(mark_unsupported_for_run(core_, spec));
  return RunCreated{run_id, static_cast<std::int64_t>(jobs.size())};
}

Result<std::int64_t> RunStore::insert_run_locked(const MatrixSpec& spec, std::size_t job_count,
                                                 std::optional<std::int64_t> schedule_id,
                                                 std::optional<TimestampMs> due_at) {
  BF_ASSIGN_OR_RETURN(auto run, core_.db().prepare("INSERT INTO runs (name, spec, priority, job_count, created_at,"
                                                   " schedule_id, schedule_due_at) VALUES (?, ?, ?, ?, ?, ?, ?)"));
  BF_RETURN_IF_ERROR(run->bind(1, spec.name)
                         .bind(2, nlohmann::json(spec).dump())
                         .bind(3, spec.priority)
                         .bind(4, static_cast<std::int64_t>(job_count))
                         .bind(5, core_.clock().now_ms())
                         .bind(6, schedule_id)
                         .bind(7, due_at)
                         .run());
  return core_.db().last_insert_rowid();
}

Status RunStore::insert_jobs_locked(std::int64_t run_id, const MatrixSpec& spec, std::span<const JobSpec> jobs) {
  const TimestampMs now = core_.clock().now_ms();
  // A run cancelled while its later chunks were still to come: those are stored cancelled.
  BF_ASSIGN_OR_RETURN(auto cancelled,
                      core_.db().query_one("SELECT 1 FROM runs WHERE id = ? AND cancelled_at IS NOT NULL", run_id));
  const bool queued = !cancelled.found();
  BF_ASSIGN_OR_RETURN(
      auto job,
      core_.db().prepare(
          "INSERT INTO jobs (run_id, model, batch, mode, torch_build, gpu_class, runtime, repetition, group_key,"
          " status, priority, max_attempts, updated_at, dtype, finished_at)"
          " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  for (const auto& j : jobs) {
    BF_RETURN_IF_ERROR(job->bind(1, run_id)
                           .bind(2, j.model)
                           .bind(3, j.batch)
                           .bind(4, to_string(j.mode))
                           .bind(5, j.torch_build)
                           .bind(6, j.gpu)
                           .bind(7, to_string(j.runtime))
                           .bind(8, j.repetition)
                           .bind(9, group_key(run_id, j))
                           .bind(10, queued ? "queued" : "cancelled")
                           .bind(11, spec.priority)
                           .bind(12, core_.options().max_attempts)
                           .bind(13, now)
                           .bind(14, to_string(j.dtype))
                           .bind(15, queued ? std::nullopt : std::optional<TimestampMs>(now))
                           .run());
  }
  if (queued) core_.work_appeared();
  return Status::Ok();
}

Status RunStore::close_partial_run_locked(std::int64_t run_id) {
  // What was stored stays, as a cancelled run of that many jobs: its submitter was told it failed.
  const TimestampMs now = core_.clock().now_ms();
  BF_RETURN_IF_ERROR(
      core_.db().run("UPDATE jobs SET status = 'cancelled', finished_at = ?1, updated_at = ?1"
                     " WHERE run_id = ?2 AND status = 'queued'",
                     now, run_id));
  return core_.db().run(
      "UPDATE runs SET job_count = (SELECT COUNT(*) FROM jobs WHERE run_id = ?1),"
      " cancelled_at = COALESCE(cancelled_at, ?2), finished_at = COALESCE(finished_at, ?2)"
      " WHERE id = ?1",
      run_id, now);
}

Status RunStore::close_partial_runs_locked() {
  core_.assert_held();  // called from other stores' operations too
  // Unfinished runs with fewer jobs than they were given: a restart cut their submit short.
  std::vector<std::int64_t> partial;
  BF_ASSIGN_OR_RETURN(auto s, core_.db().prepare("SELECT r.id FROM runs r WHERE r.finished_at IS NULL AND r.job_count >"
                                                 " (SELECT COUNT(*) FROM jobs j WHERE j.run_id = r.id)"));
  while (true) {
    BF_ASSIGN_OR_RETURN(bool row, s->step());
    if (!row) break;
    partial.push_back(s->int64(0));
  }
  for (const std::int64_t id : partial) BF_RETURN_IF_ERROR(close_partial_run_locked(id));
  return Status::Ok();
}

Result<std::map<JobStatus, std::int64_t>> RunStore::job_counts_locked(std::int64_t run_id) {
  std::map<JobStatus, std::int64_t> counts;
  BF_ASSIGN_OR_RETURN(auto s, core_.db().prepare("SELECT status, COUNT(*) FROM jobs WHERE run_id = ? GROUP BY status"));
  s->bind(1, run_id);
  while (true) {
    BF_ASSIGN_OR_RETURN(bool row, s->step());
    if (!row) break;
    counts[job_status_at(*s, 0)] = s->int64(1);
  }
  return counts;
}

Result<RunInfo> RunStore::run_info_locked(std::int64_t run_id) {
  core_.assert_held();  // called from other stores' operations too
  RunInfo info;
  {
    BF_ASSIGN_OR_RETURN(
        auto s,
        core_.db().query_one(
            "SELECT id, name, spec, job_count, created_at, cancelled_at, finished_at FROM runs WHERE id = ?", run_id));
    if (!s.found()) return Error::not_found("run " + std::to_string(run_id) + " does not exist");
    info.id = s->int64(0);
    info.name = s->text(1);
    auto spec_json = nlohmann::json::parse(s->text(2), nullptr, false);
    // The name is the column's: a run stored before names were restricted keeps its
    // matrix readable.
    if (spec_json.is_object()) spec_json["name"] = "run";
    if (auto spec = decode<MatrixSpec>(spec_json); spec.ok()) {
      info.spec = std::move(*spec);
      info.spec.name = info.name;
    }
    info.job_count = s->int64(3);
    info.created_at = s->int64(4);
    info.cancelled_at = s->opt_int64(5);
    info.finished_at = s->opt_int64(6);
  }

  BF_ASSIGN_OR_RETURN(info.jobs_by_status, job_counts_locked(run_id));
  BF_ASSIGN_OR_RETURN(auto r,
                      core_.db().prepare("SELECT status, COUNT(*) FROM results WHERE run_id = ? GROUP BY status"));
  r->bind(1, run_id);
  while (true) {
    BF_ASSIGN_OR_RETURN(bool row, r->step());
    if (!row) break;
    info.results_by_status[result_status_at(*r, 0)] = r->int64(1);
  }
  info.state = std::string(rules::to_string(rules::run_state(info.jobs_by_status, info.cancelled_at.has_value())));
  return info;
}

Result<RunInfo> RunStore::get_run(std::int64_t run_id) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<RunInfo> { return run_info_locked(run_id); });
}

Result<std::vector<RunInfo>> RunStore::list_runs(int limit, std::optional<std::int64_t> before_id) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<std::vector<RunInfo>> {
    std::vector<std::int64_t> ids;
    BF_ASSIGN_OR_RETURN(auto s, core_.db().prepare("SELECT id FROM runs WHERE id < ? ORDER BY id DESC LIMIT ?"));
    s->bind(1, before_id.value_or(INT64_MAX)).bind(2, limit);
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, s->step());
      if (!row) break;
      ids.push_back(s->int64(0));
    }
    std::vector<RunInfo> runs;
    for (auto id : ids) {
      BF_ASSIGN_OR_RETURN(auto info, run_info_locked(id));
      runs.push_back(std::move(info));
    }
    return runs;
  });
}

Result<CancelOutcome> RunStore::cancel_run(std::int64_t run_id) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<CancelOutcome> {
    BF_ASSIGN_OR_RETURN(auto info, run_info_locked(run_id));
    CancelOutcome out;
    if (info.cancelled_at) {
      out.already_cancelled = true;
      return out;
    }
    if (info.finished_at) return Error::conflict("run " + std::to_string(run_id) + " already finished");
    const TimestampMs now = core_.clock().now_ms();
    // Leased jobs keep their lease id so the holder's next renewal answers "cancelled".
    BF_ASSIGN_OR_RETURN(
        auto attempts,
        core_.db().prepare(
            "UPDATE attempts SET ended_at = ?, outcome = 'cancelled' WHERE ended_at IS NULL AND job_id IN "
            "(SELECT id FROM jobs WHERE run_id = ? AND status IN ('leased','running'))"));
    BF_RETURN_IF_ERROR(attempts->bind(1, now).bind(2, run_id).run());
    BF_ASSIGN_OR_RETURN(auto jobs,
                        core_.db().prepare("UPDATE jobs SET status = 'cancelled', finished_at = ?, updated_at = ? "
                                           "WHERE run_id = ? AND status IN ('queued','leased','running')"));
    BF_RETURN_IF_ERROR(jobs->bind(1, now).bind(2, now).bind(3, run_id).run());
    out.cancelled_jobs = core_.db().changes();
    BF_ASSIGN_OR_RETURN(auto run, core_.db().prepare("UPDATE runs SET cancelled_at = ?, finished_at = ? WHERE id = ?"));
    BF_RETURN_IF_ERROR(run->bind(1, now).bind(2, now).bind(3, run_id).run());
    return out;
  });
}

Result<Page<JobRow>> RunStore::list_jobs(std::int64_t run_id, std::optional<std::int64_t> after_id, int limit) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<Page<JobRow>> {
    // jobs_run (run_id, id) gives the order; the latest result comes from results' (job_id,
    // attempt) key, the attempt by its primary key.
    BF_ASSIGN_OR_RETURN(
        auto s,
        core_.db().prepare(
            "SELECT j.id, " + job_spec_columns("j") +
            ", j.status, j.attempt, j.updated_at, r.id, r.status, a.name, t.slot"
            " FROM jobs j INDEXED BY jobs_run"
            " LEFT JOIN results r ON r.id = (SELECT id FROM results WHERE job_id = j.id ORDER BY attempt DESC LIMIT 1)"
            " LEFT JOIN attempts t ON t.job_id = j.id AND t.attempt = j.attempt AND"
            " (j.status IN ('leased', 'running', 'failed') OR (j.status = 'done' AND t.outcome = 'result')"
            "  OR (j.status = 'cancelled' AND t.outcome = 'cancelled'))"
            " LEFT JOIN agents a ON a.id = t.agent_id"
            " WHERE j.run_id = ?1 AND j.id > ?2 ORDER BY j.id LIMIT ?3"));
    s->bind(1, run_id).bind(2, after_id.value_or(0)).bind(3, limit + 1);
    std::vector<JobRow> rows;
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, s->step());
      if (!row) break;
      JobRow job;
      job.id = s->int64(0);
      job.spec = job_spec_at(*s, 1);
      constexpr int c = 1 + kJobSpecColumns;  // the columns after the spec
      job.status = job_status_at(*s, c);
      job.attempt = static_cast<int>(s->int64(c + 1));
      job.updated_at = s->int64(c + 2);
      job.result_id = s->opt_int64(c + 3);
      if (job.result_id) job.result_status = result_status_at(*s, c + 4);
      job.agent_name = s->opt_text(c + 5);
      if (job.agent_name) job.slot = s->opt_text(c + 6);
      rows.push_back(std::move(job));
    }
    Page<JobRow> page = keyset_page(std::move(rows), limit, [](const JobRow& j) { return j.id; });
    if (page.items.empty()) {
      BF_ASSIGN_OR_RETURN(auto exists, core_.db().query_one("SELECT 1 FROM runs WHERE id = ?", run_id));
      if (!exists.found()) return Error::not_found("run " + std::to_string(run_id) + " does not exist");
    }
    return page;
  });
}

}  // namespace benchfleet::store
