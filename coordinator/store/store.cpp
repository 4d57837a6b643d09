#include "coordinator/store/store.h"

#include "common/codecs.h"
#include "coordinator/rules/scheduler.h"
#include "coordinator/store/migrations.h"
#include "coordinator/store/rows.h"

namespace benchfleet::store {

Store::Store(StoreOptions options, const Clock& clock, std::unique_ptr<Database> db)
    : options_(std::move(options)),
      clock_(clock),
      db_(std::move(db)),
      group_(*db_, options_.group_commit, [this](bool committed) { on_group_decided(committed); }) {}

Result<std::unique_ptr<Store>> Store::open(const StoreOptions& options, const Clock& clock) {
  BF_ASSIGN_OR_RETURN(auto db, Database::open(options.path, options.busy_timeout_ms));
  auto version = migrate(*db, embedded_migrations());
  if (!version.ok()) {
    return Error{version.error().code, options.path + ": " + version.error().message, {}};
  }
  std::unique_ptr<Store> store(new Store(options, clock, std::move(db)));

  // Restart grace: leases that would expire while agents reconnect get time to be renewed.
  Transaction tx(*store->db_);
  BF_RETURN_IF_ERROR(tx.begin_status());
  const TimestampMs now = clock.now_ms();
  BF_ASSIGN_OR_RETURN(
      auto select,
      store->db_->prepare(
          "SELECT id, lease_expires_at FROM jobs WHERE lease_id IS NOT NULL AND status IN ('leased','running')"));
  std::vector<std::pair<std::int64_t, TimestampMs>> updates;
  while (true) {
    BF_ASSIGN_OR_RETURN(bool row, select->step());
    if (!row) break;
    const TimestampMs extended = scheduler::expiry_after_restart(select->int64(1), now, options.restart_grace_ms);
    if (extended != select->int64(1)) updates.emplace_back(select->int64(0), extended);
  }
  for (const auto& [job_id, expires] : updates) {
    BF_RETURN_IF_ERROR(store->db_->run("UPDATE jobs SET lease_expires_at = ? WHERE id = ?", expires, job_id));
  }
  BF_RETURN_IF_ERROR(tx.commit());
  return store;
}

void Store::observe_statements(std::function<void(const std::string& sql)> observer) {
  (void)group_.run([&]() -> Status {
    db_->set_prepare_observer(std::move(observer));
    return Status::Ok();
  });
}

std::map<std::string, StatementWork> Store::statement_work() {
  auto work = group_.run([&]() -> Result<std::map<std::string, StatementWork>> { return db_->statement_work(); });
  return work.ok() ? std::move(*work) : std::map<std::string, StatementWork>{};
}

void Store::on_group_decided(bool committed) {
  if (!committed) {
    // The group's writes are gone: what was cached from them must go too.
    run_specs_.clear();
    descriptors_.clear();
    series_ids_.clear();
    std::lock_guard lock(credentials_mu_);
    credentials_.clear();
  }
  // Polls wait for work only after reading the queue, so they must hear of work that appeared
  // (or, after a failure, may have: they look again) only once it is durable.
  if (work_appeared_ && work_listener_) work_listener_();
  work_appeared_ = false;
}

Result<Gauges> Store::gauges(TimestampMs seen_within_ms) {
  return group_.run([&]() -> Result<Gauges> {
    Gauges g;
    BF_ASSIGN_OR_RETURN(auto s, db_->prepare("SELECT status, COUNT(*) FROM jobs GROUP BY status"));
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, s->step());
      if (!row) break;
      g.jobs_by_status[job_status_at(*s, 0)] = s->int64(1);
    }
    BF_ASSIGN_OR_RETURN(
        auto counts,
        db_->query_one(
            "SELECT (SELECT COUNT(*) FROM jobs WHERE lease_id IS NOT NULL AND status IN ('leased','running')),"
            "       (SELECT COUNT(*) FROM agents),"
            "       (SELECT COUNT(*) FROM agents WHERE last_seen_at >= ?),"
            "       (SELECT COUNT(*) FROM runs),"
            "       (SELECT COUNT(*) FROM regressions WHERE state = 'open' AND direction = 'regression'),"
            "       (SELECT COUNT(*) FROM regressions WHERE state = 'acknowledged' AND direction = 'regression'),"
            "       (SELECT COUNT(*) FROM alert_deliveries WHERE delivered_at IS NULL AND failed_at IS NULL),"
            "       (SELECT COUNT(*) FROM alert_deliveries WHERE failed_at IS NOT NULL)",
            clock_.now_ms() - seen_within_ms));
    if (counts.found()) {
      g.active_leases = counts->int64(0);
      g.agents = counts->int64(1);
      g.agents_seen_recently = counts->int64(2);
      g.runs = counts->int64(3);
      g.open_regressions = counts->int64(4);
      g.acknowledged_regressions = counts->int64(5);
      g.alerts_pending = counts->int64(6);
      g.alerts_failed = counts->int64(7);
    }
    g.store = group_.stats();
    return g;
  });
}

Status Store::end_attempt(std::int64_t job_id, int attempt, std::string_view outcome) {
  return db_->run("UPDATE attempts SET ended_at = ?, outcome = ? WHERE job_id = ? AND attempt = ? AND ended_at IS NULL",
                  clock_.now_ms(), outcome, job_id, attempt);
}

Status Store::update_run_finished(std::int64_t run_id) {
  return db_->run(
      "UPDATE runs SET finished_at = ?1 WHERE id = ?2 AND finished_at IS NULL AND NOT EXISTS "
      "(SELECT 1 FROM jobs WHERE run_id = ?2 AND status IN ('queued','leased','running'))",
      clock_.now_ms(), run_id);
}

Result<std::int64_t> Store::mark_implied_oom(std::int64_t run_id, std::int64_t job_id) {
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

  std::vector<scheduler::QueuedJob> queued;
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
  const auto implied = scheduler::implied_oom(queued, oomed);
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

}  // namespace benchfleet::store
