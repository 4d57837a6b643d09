// The coordinator's durable state in SQLite, as narrow stores over one connection:
//   runs()        RunStore         runs and their jobs, the queue      (run_store.h)
//   agents()      AgentStore       agents: enrolment, drain            (agent_store.h)
//   leases()      LeaseStore       leases and dispatch                 (lease_store.h)
//   results()     ResultStore      posted results and what reads them  (result_store.h)
//   schedules()   ScheduleStore    recurring matrices and their runs   (schedule_store.h)
//   series()      SeriesStore      series, points, change detection    (series_store.h)
//   regressions() RegressionStore  regressions and their alerts        (regression_store.h)
//   models()      ModelStore       registered models and artifacts     (model_store.h)
// Thread-safe: every method runs alone on the one connection, inside a transaction shared with
// the methods that run while it waits to commit (GroupCommit). A method returns only once what
// it wrote and read is committed (synchronous=FULL), so a caller may acknowledge it.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/result.h"
#include "common/types.h"
#include "coordinator/store/agent_store.h"
#include "coordinator/store/group_commit.h"
#include "coordinator/store/lease_store.h"
#include "coordinator/store/model_store.h"
#include "coordinator/store/regression_store.h"
#include "coordinator/store/result_store.h"
#include "coordinator/store/run_store.h"
#include "coordinator/store/schedule_store.h"
#include "coordinator/store/series_store.h"
#include "coordinator/store/sqlite.h"
#include "coordinator/store/store_core.h"

namespace benchfleet::store {

struct Gauges {
  std::map<JobStatus, std::int64_t> jobs_by_status;
  std::int64_t active_leases = 0;
  std::int64_t agents = 0;
  std::int64_t agents_seen_recently = 0;  // last seen within the window passed to gauges()
  std::int64_t runs = 0;
  std::int64_t open_regressions = 0;  // direction regression, state open
  std::int64_t acknowledged_regressions = 0;
  std::int64_t alerts_pending = 0;  // webhook deliveries not yet made nor given up
  std::int64_t alerts_failed = 0;   // given up
  GroupCommitStats store;           // operations and commits since the coordinator started
};

class Store {
 public:
  // Opens the database, applies migrations (refusing a newer schema) and gives every live
  // lease the restart grace period.
  static Result<std::unique_ptr<Store>> open(const StoreOptions& options, const Clock& clock);

  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const StoreOptions& options() const { return core_->options(); }

  // Called after the commit whenever queued work may have appeared (a run was created, or a
  // lease expired, was released or found stale and its job went back to the queue) or what a
  // waiting lease request should answer changed (an agent was set draining); also after a
  // failed commit. It runs with the store's lock held, so it must be quick and must not call
  // the store.
  // Set before serving.
  void on_work_available(std::function<void()> listener) { core_->on_work_available(std::move(listener)); }
  // `listener(why)` is called once when the database's file or its -wal was replaced or removed
  // under the store (GroupCommit::on_files_lost): from then on every operation fails with `why`.
  // It runs with the store's lock held: quick, and no store calls. Set before serving.
  void on_files_lost(std::function<void(const Error&)> listener) { core_->on_files_lost(std::move(listener)); }

  RunStore& runs() { return runs_; }
  AgentStore& agents() { return agents_; }
  LeaseStore& leases() { return leases_; }
  ResultStore& results() { return results_; }
  ScheduleStore& schedules() { return schedules_; }
  SeriesStore& series() { return series_; }
  RegressionStore& regressions() { return regressions_; }
  ModelStore& models() { return models_; }

  Result<Gauges> gauges(TimestampMs seen_within_ms);

  // For tests: `observer` sees the SQL text of every statement the store runs from now on, each
  // time it runs one (see Database::set_prepare_observer); {} stops it. Called with the store's
  // lock held: it must not call the store.
  void observe_statements(std::function<void(const std::string& sql)> observer);
  // For tests: what each statement the store ran did so far (Database::statement_work).
  std::map<std::string, StatementWork> statement_work();

 private:
  explicit Store(std::unique_ptr<StoreCore> core);

  // First, so it outlives the narrow stores that refer to it.
  std::unique_ptr<StoreCore> core_;
  AgentStore agents_;
  LeaseStore leases_;
  RunStore runs_;
  ScheduleStore schedules_;
  RegressionStore regressions_;
  SeriesStore series_;
  ResultStore results_;
  ModelStore models_;
};

}  // namespace benchfleet::store
