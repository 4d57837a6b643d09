// Store: the database opened and migrated, and the narrow stores over it.
#include "coordinator/store/store.h"

#include "common/codecs.h"
#include "coordinator/rules/scheduler.h"
#include "coordinator/store/migrations.h"
#include "coordinator/store/rows.h"

namespace benchfleet::store {

Store::Store(std::unique_ptr<StoreCore> core)
    : core_(std::move(core)),
      agents_(*core_),
      leases_(*core_),
      runs_(*core_),
      schedules_(*core_, runs_),
      regressions_(*core_),
      series_(*core_, regressions_),
      results_(*core_, runs_, series_),
      models_(*core_) {}

Result<std::unique_ptr<Store>> Store::open(const StoreOptions& options, const Clock& clock) {
  const auto damaged = [&](const std::string& why) {
    return Error{ErrorCode::kInvalidArgument,
                 options.path + " fails SQLite's checks (" + why.substr(0, 300) +
                     "): the store is damaged. Restore a backup (benchfleet-coordinator restore --db " + options.path +
                     " --from BACKUP) and start again",
                 {}};
  };
  auto opened = Database::open(options.path, options.busy_timeout_ms);
  if (!opened.ok()) {
    const std::string& why = opened.error().message;
    if (why.find("malformed") != std::string::npos || why.find("not a database") != std::string::npos) {
      return damaged(why);
    }
    return opened.error();
  }
  auto db = std::move(*opened);
  // A damaged store is refused before anything is written to it (quick_check: every page and
  // record well formed, without the index cross-check of integrity_check; seconds on gigabytes).
  if (options.path != ":memory:") {
    auto check = db->query_one("PRAGMA quick_check");
    const std::string verdict = !check.ok() ? check.error().message : check->found() ? (*check)->text(0) : "no answer";
    if (verdict != "ok") return damaged("quick_check: " + verdict);
  }
  auto version = migrate(*db, embedded_migrations());
  if (!version.ok()) {
    return Error{version.error().code, options.path + ": " + version.error().message, {}};
  }
  std::unique_ptr<Store> store(new Store(std::make_unique<StoreCore>(options, clock, std::move(db))));

  // Restart grace: leases that would expire while agents reconnect get time to be renewed.
  StoreCore& core = *store->core_;
  BF_RETURN_IF_ERROR(core.run([&]() BF_REQUIRES(core.lock()) -> Status {
    const TimestampMs now = clock.now_ms();
    BF_ASSIGN_OR_RETURN(
        auto select,
        core.db().prepare(
            "SELECT id, lease_expires_at FROM jobs WHERE lease_id IS NOT NULL AND status IN ('leased','running')"));
    std::vector<std::pair<std::int64_t, TimestampMs>> updates;
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, select->step());
      if (!row) break;
      const TimestampMs extended = rules::expiry_after_restart(select->int64(1), now, options.restart_grace_ms);
      if (extended != select->int64(1)) updates.emplace_back(select->int64(0), extended);
    }
    for (const auto& [job_id, expires] : updates) {
      BF_RETURN_IF_ERROR(core.db().run("UPDATE jobs SET lease_expires_at = ? WHERE id = ?", expires, job_id));
    }
    return store->runs().close_partial_runs_locked();
  }));
  return store;
}

void Store::observe_statements(std::function<void(const std::string& sql)> observer) {
  (void)core_->run([&]() BF_REQUIRES(core_->lock()) -> Status {
    core_->db().set_prepare_observer(std::move(observer));
    return Status::Ok();
  });
}

std::map<std::string, StatementWork> Store::statement_work() {
  auto work = core_->run([&]() BF_REQUIRES(core_->lock()) -> Result<std::map<std::string, StatementWork>> {
    return core_->db().statement_work();
  });
  return work.ok() ? std::move(*work) : std::map<std::string, StatementWork>{};
}

Result<Gauges> Store::gauges(TimestampMs seen_within_ms) {
  return core_->run([&]() BF_REQUIRES(core_->lock()) -> Result<Gauges> {
    Gauges g;
    BF_ASSIGN_OR_RETURN(auto s, core_->db().prepare("SELECT status, COUNT(*) FROM jobs GROUP BY status"));
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, s->step());
      if (!row) break;
      g.jobs_by_status[job_status_at(*s, 0)] = s->int64(1);
    }
    BF_ASSIGN_OR_RETURN(
        auto counts,
        core_->db().query_one(
            "SELECT (SELECT COUNT(*) FROM jobs WHERE lease_id IS NOT NULL AND status IN ('leased','running')),"
            "       (SELECT COUNT(*) FROM agents),"
            "       (SELECT COUNT(*) FROM agents WHERE last_seen_at >= ?),"
            "       (SELECT COUNT(*) FROM runs),"
            "       (SELECT COUNT(*) FROM regressions WHERE state = 'open' AND direction = 'regression'),"
            "       (SELECT COUNT(*) FROM regressions WHERE state = 'acknowledged' AND direction = 'regression'),"
            "       (SELECT COUNT(*) FROM alert_deliveries WHERE delivered_at IS NULL AND failed_at IS NULL),"
            "       (SELECT COUNT(*) FROM alert_deliveries WHERE failed_at IS NOT NULL)",
            core_->clock().now_ms() - seen_within_ms));
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
    g.store = core_->stats();
    return g;
  });
}

}  // namespace benchfleet::store
