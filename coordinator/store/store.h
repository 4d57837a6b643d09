// The coordinator's durable state in SQLite: runs, jobs, attempts/leases, results, agents.
// Thread-safe: every method runs alone on one connection, inside a transaction shared with the
// methods that run while it waits to commit (GroupCommit). A method returns only once what it
// wrote and read is committed (synchronous=FULL), so a caller may acknowledge it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/agent_protocol.h"
#include "common/clock.h"
#include "common/result.h"
#include "common/types.h"
#include "coordinator/rules/change_detector.h"
#include "coordinator/rules/report.h"
#include "coordinator/rules/scheduler.h"
#include "coordinator/store/agent_types.h"
#include "coordinator/store/group_commit.h"
#include "coordinator/store/history_types.h"
#include "coordinator/store/page.h"
#include "coordinator/store/run_types.h"
#include "coordinator/store/sqlite.h"

namespace benchfleet::store {

struct StoreOptions {
  std::string path;  // SQLite file; created if missing
  int busy_timeout_ms = 5000;
  int max_attempts = 3;                   // leases a job gets before it fails
  TimestampMs lease_ttl_ms = 60'000;      // a lease lives this long unless renewed
  TimestampMs restart_grace_ms = 60'000;  // live leases get this long after open()
  GroupCommitOptions group_commit;
};

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

  const StoreOptions& options() const { return options_; }

  // Called after the commit whenever queued work may have appeared (a run was created, or a
  // lease expired, was released or found stale and its job went back to the queue) or what a
  // waiting lease request should answer changed (an agent was set draining); also after a
  // failed commit. It runs with the store's lock held, so it must be quick and must not call
  // the store.
  // Set before serving.
  void on_work_available(std::function<void()> listener) { work_listener_ = std::move(listener); }

  // ---- runs --------------------------------------------------------------------------------
  // Stores the run and all its jobs in one transaction. Jobs an enrolled slot of their GPU class
  // declares unsupported (it has their build and runtime, not their mode) get that verdict in
  // it; jobs no enrolled slot has the build or runtime of stay queued until an agent that has
  // them enrols, and are then run or judged.
  Result<RunCreated> create_run(const MatrixSpec& spec, const std::vector<JobSpec>& jobs);
  Result<RunInfo> get_run(std::int64_t run_id);
  // Newest first; `before_id` pages backwards.
  Result<std::vector<RunInfo>> list_runs(int limit, std::optional<std::int64_t> before_id);
  // Queued and leased jobs become cancelled; lease holders learn it at their next renewal.
  Result<CancelOutcome> cancel_run(std::int64_t run_id);
  // Results without their samples unless `with_samples` (each may hold 10^6: ask for a few).
  // Bodies are parsed after the store lock is released, so a big read never stalls agents.
  Result<Page<ResultRow>> list_results(std::int64_t run_id, const ResultFilter& filter,
                                       std::optional<std::int64_t> after_id, int limit, bool with_samples = false);
  // One result with its samples.
  Result<ResultRow> get_result(std::int64_t result_id);
  // The run's jobs with id > `after_id`, ascending, at most `limit` (one indexed query).
  // kNotFound when the run does not exist.
  Result<Page<JobRow>> list_jobs(std::int64_t run_id, std::optional<std::int64_t> after_id, int limit);
  // One entry per job of the run, with its result when there is one (for reports), including
  // the torch version the result recorded (results.torch_version, from its fingerprint).
  Result<std::vector<report::CellResult>> report_cells(std::int64_t run_id);

  // ---- agents ------------------------------------------------------------------------------
  // Creates the agent, or updates the one with the same name (it keeps its id), and replaces
  // its credentials. Queued jobs whose build and runtime one of its slots has but not their mode
  // become `unsupported` now (scheduler::unsupported_reason). Returns the agent id.
  Result<std::int64_t> enroll_agent(const AgentDescriptor& descriptor, const AgentCredentials& credentials);
  Result<AgentCredentials> agent_credentials(std::int64_t agent_id);
  Result<std::vector<AgentInfo>> list_agents();
  Result<AgentInfo> get_agent(std::int64_t agent_id);
  // The operator's drain.
  Status set_draining(std::int64_t agent_id, bool draining);
  // The agent's own drain, as its heartbeats report it. An agent is draining (gets no leases)
  // when either is set; enrolment clears both.
  Status set_self_draining(std::int64_t agent_id, bool draining);

  // ---- leases ------------------------------------------------------------------------------
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
  // Extends a lease (progress) and acknowledges it; marks the job running.
  Result<Renewal> renew(std::int64_t agent_id, const LeaseRef& lease);
  // Heartbeat: records the agent as seen and renews (and acknowledges) each listed lease.
  Result<std::vector<Renewal>> heartbeat(std::int64_t agent_id, const std::vector<LeaseRef>& leases);
  // Stores the verdict of `attempt` for the holder of `lease` (kLost / kCancelled as for renew):
  // one row per attempt (kDuplicate for the same result again, kMismatch for another one), with
  // its noise flags, its series point (see list_series), and the OOM pruning it implies.
  Result<RecordOutcome> record_result(std::int64_t agent_id, const LeaseRef& lease, int attempt,
                                      const JobResult& result);
  // The holder gives a lease back unfinished (an aborting agent): the job is requeued at once
  // (or fails after max attempts). kLost when the lease is not current, kCancelled when its run
  // was cancelled (nothing to do then).
  Result<LeaseState> release(std::int64_t agent_id, const LeaseRef& lease);
  // Requeues (or fails, after max attempts) jobs whose lease expired. Returns how many changed.
  Result<std::int64_t> expire_leases();

  // ---- schedules (store_schedules.cpp) --------------------------------------------------------
  // Stores a schedule; its first due time is cron's first after now. REQUIRES: `cron` parses
  // (history::CronSchedule) and `spec` expands (the handler checked both).
  Result<ScheduleInfo> create_schedule(const MatrixSpec& spec, const std::string& cron, bool enabled);
  Result<std::vector<ScheduleInfo>> list_schedules();
  Result<ScheduleInfo> get_schedule(std::int64_t schedule_id);
  // Pause (false) or resume (true). Resuming skips the due times that passed while paused
  // (counted in `missed`): the next due time is cron's first after now.
  Result<ScheduleInfo> set_schedule_enabled(std::int64_t schedule_id, bool enabled);
  // Deletes the schedule; the runs it created stay (their schedule_id becomes NULL).
  Status delete_schedule(std::int64_t schedule_id);
  // Creates the run of every enabled schedule due at `now` (next_due_at <= now), each in one
  // transaction with the schedule's advance, so a run is created exactly once per due time, also
  // across a crash or restart (runs (schedule_id, schedule_due_at) is unique). When several due
  // times passed (the coordinator was down), one run is created, for the latest; the earlier ones
  // are skipped and counted (`missed`, FiredSchedule::skipped): a nightly study wants tonight's
  // numbers, not a burst of stale ones. `expand` turns the stored matrix into jobs (the
  // catalog may have changed since the schedule was stored); a schedule whose matrix no longer
  // expands is skipped for that due time, with the error logged by the caller (returned in
  // `errors`).
  struct FireOutcome {
    std::vector<FiredSchedule> fired;
    std::vector<std::pair<std::int64_t, Error>> errors;  // schedule id, why it created no run
  };
  Result<FireOutcome> fire_due_schedules(TimestampMs now,
                                         const std::function<Result<std::vector<JobSpec>>(const MatrixSpec&)>& expand);
  // The earliest next_due_at of the enabled schedules (the runner sleeps until then at most).
  Result<std::optional<TimestampMs>> next_schedule_due();

  // ---- series, regressions, alerts (store_history.cpp) ---------------------------------------
  // record_result adds a point to the result's series (creating the series) in its own
  // transaction, for every status but unsupported, invalid and oom_implied (verdicts the
  // coordinator inferred: nothing ran, no torch version to place them by); the detector looks at
  // it later.
  Result<Page<SeriesInfo>> list_series(const SeriesFilter& filter, std::optional<std::int64_t> after_id, int limit);
  // The series with that key, if it has points.
  Result<std::optional<std::int64_t>> find_series(const SeriesKey& key);
  // A series and its points in series order, from the first after `after_point` (a point id),
  // at most `limit`. kNotFound when the series does not exist or `after_point` is not its own.
  Result<SeriesPoints> get_series(std::int64_t series_id, std::optional<std::int64_t> after_point, int limit);
  // Runs the change detector over up to `max_series` series that have points it has not seen:
  // groups the points of the current level by run (a run's repetitions pool their samples),
  // reads the samples of the last baseline + confirm runs (result_samples), and stores a
  // confirmed change (history::change_at_tail) as a regression or improvement, moving the
  // series' level start to it. For each new regression (direction regression) it enqueues a
  // webhook delivery when `enqueue_alerts`. Points of non-ok results are skipped by the detector
  // (they are shown, not tested). Per series: one operation reads, the samples are parsed and
  // tested without the lock, one operation writes if the series is still as read (else its
  // points stay unseen, and `more` is set); at most 16 runs of a series are judged per call
  // (the rest: `more`).
  Result<DetectionPass> detect_changes(const history::DetectorOptions& options, bool enqueue_alerts,
                                       int max_series = 64);
  Result<Page<RegressionInfo>> list_regressions(const RegressionFilter& filter, std::optional<std::int64_t> before_id,
                                                int limit);
  Result<RegressionInfo> get_regression(std::int64_t regression_id);
  // open -> acknowledged -> resolved (open -> resolved too); back to open reopens a resolved one
  // or takes back an acknowledgement (both forget their times); resolved -> acknowledged is
  // kConflict. Setting the state it already has is a no-op; `note`, when given, replaces the
  // note. kNotFound.
  Result<RegressionInfo> set_regression_state(std::int64_t regression_id, RegressionState state,
                                              const std::optional<std::string>& note);
  // Deliveries whose next attempt is due at `now`, oldest first.
  Result<std::vector<AlertDelivery>> due_alerts(TimestampMs now, int limit);
  // The earliest next attempt of an undelivered delivery.
  Result<std::optional<TimestampMs>> next_alert_due();
  Status alert_delivered(std::int64_t delivery_id, TimestampMs at);
  // Records a failed attempt; retried at `retry_at`, or given up when nullopt.
  Status alert_attempt_failed(std::int64_t delivery_id, const std::string& error, std::optional<TimestampMs> retry_at);

  Result<Gauges> gauges(TimestampMs seen_within_ms);

  // The queue by (GPU class, torch build): queued jobs, and leased + running ones; a row per
  // pair with either, ordered by GPU class, then build. Done, failed and cancelled jobs are not
  // counted. Each cell's queued jobs are also split by their run's timeout_s. One pass in cell
  // order over the partial index of queued jobs (jobs_queued_cells: its length is the queue, not
  // the history), each run's matrix once, and the active jobs' rows; no sort.
  Result<std::vector<QueueCell>> queue_summary();

  // For tests: `observer` sees the SQL text of every statement the store runs from now on, each
  // time it runs one (see Database::set_prepare_observer); {} stops it. Called with the store's
  // lock held: it must not call the store.
  void observe_statements(std::function<void(const std::string& sql)> observer);
  // For tests: what each statement the store ran did so far (Database::statement_work).
  std::map<std::string, StatementWork> statement_work();

 private:
  Store(StoreOptions options, const Clock& clock, std::unique_ptr<Database> db);

  // Helpers run inside an operation of group_ (its lock held, its transaction open).
  // Marks the queued jobs of `job_id`'s cell (its run's jobs of the same model, mode, build, GPU
  // class, runtime and dtype) that an OOM at a smaller batch implies; returns how many. Pruning relates
  // only jobs of one cell, and runs whenever a cell changes (an OOM stored, a job requeued), so
  // the rest of the run needs no look.
  Result<std::int64_t> mark_implied_oom(std::int64_t run_id, std::int64_t job_id);
  // Queued jobs this slot's builds declare unsupported get that verdict now (scheduler rule):
  // called for each slot class of an agent that enrols (its capabilities may have changed).
  Status mark_unsupported(const scheduler::SlotOffer& offer);
  // The same for a new run's cells, judged by every enrolled slot.
  Status mark_unsupported_for_run_locked(const MatrixSpec& spec);
  // The job `offer` should run next (scheduler::pick_job over the best queued job of each cell
  // the slot can run, tier by tier), or nullopt when none fits.
  Result<std::optional<std::int64_t>> pick_candidate_locked(const scheduler::SlotOffer& offer);
  // Ends a lease that will not produce a result: requeue, or fail after max attempts; then
  // applies OOM pruning and the run's completion. Sets work_appeared_.
  Status requeue_or_fail(std::int64_t job_id, int attempt, int max_attempts, std::int64_t run_id,
                         std::string_view outcome);
  // After each group's commit (GroupCommit's callback): tells the listener if work appeared;
  // after a failed one, forgets what was cached from the lost writes.
  void on_group_decided(bool committed);
  Result<MatrixSpec> run_spec_locked(std::int64_t run_id);
  Status end_attempt(std::int64_t job_id, int attempt, std::string_view outcome);
  Status update_run_finished(std::int64_t run_id);
  // A job's lease as a holder's request finds it, judged by the one rule for such requests:
  // kActive only for the current holder (`agent_id` and the lease id, and `attempt` when
  // given) of a leased or running job; kCancelled for that holder of a cancelled run's job;
  // kLost otherwise. nullopt when the job does not exist.
  struct HeldLease {
    LeaseState state = LeaseState::kLost;
    int attempt = 0;
    int max_attempts = 0;
    std::int64_t run_id = 0;
    TimestampMs expires_at = 0;
    std::string slot;
  };
  Result<std::optional<HeldLease>> held_lease_locked(std::int64_t agent_id, const LeaseRef& lease,
                                                     std::optional<int> attempt = std::nullopt);
  // Store::lease, step one: what `slot` already holds is handed over again (returned),
  // withdrawn (draining), expired or released; see lease().
  Result<std::optional<LeaseGrant>> settle_slot_locked(const AgentInfo& agent, const std::string& slot,
                                                       const std::optional<std::string>& request_id);
  // Store::lease, last step: `job_id` (queued, picked by pick_candidate_locked) leased to `slot`.
  Result<LeaseGrant> grant_locked(std::int64_t agent_id, const std::string& slot, std::int64_t job_id,
                                  const std::optional<std::string>& request_id);
  Result<Renewal> renew_locked(std::int64_t agent_id, const LeaseRef& lease, bool mark_running);
  // The current lease on `job_id` handed over again, its expiry renewed (Store::lease).
  Result<LeaseGrant> redeliver_locked(std::int64_t job_id);
  // withdraw_lease inside a caller's transaction.
  Result<bool> withdraw_locked(std::int64_t agent_id, const LeaseRef& lease);
  // Fills a grant's run-level parts (measurement, memory limit, timeout; for python compiled
  // jobs dynamic and the shape walk's batch sizes) from its run.
  Status complete_grant_locked(LeaseGrant& grant);
  Result<std::map<JobStatus, std::int64_t>> job_counts_locked(std::int64_t run_id);
  Result<RunInfo> run_info_locked(std::int64_t run_id);
  Result<AgentInfo> agent_info_locked(std::int64_t agent_id);
  // create_run inside a caller's operation; a schedule's run names it and the due time it
  // stands for (fire_due_schedules).
  Result<RunCreated> create_run_locked(const MatrixSpec& spec, const std::vector<JobSpec>& jobs,
                                       std::optional<std::int64_t> schedule_id = std::nullopt,
                                       std::optional<TimestampMs> due_at = std::nullopt);
  Result<ScheduleInfo> schedule_info_locked(std::int64_t schedule_id);
  // Whether a result of `status` is a point of its series (see list_series).
  static bool has_series_point(ResultStatus status);
  // A result's point in its series (record_result, in its transaction).
  struct NewPoint {
    JobSpec job;
    std::int64_t result_id = 0;
    std::int64_t run_id = 0;
    ResultStatus status = ResultStatus::kOk;
    std::optional<double> median_ms, ci_low_ms, ci_high_ms;
    std::optional<std::string> torch_version, torch_git;
    TimestampMs recorded_at = 0;
    std::string flags;
    std::optional<std::string> accuracy;
  };
  // Adds `point` to its series (created on its first point; its count and last time bumped): two
  // statements. Returns the series' key and id when series_ids_ does not hold them yet: the
  // caller caches them once its operation succeeded (a failed one rolls the series back).
  Result<std::optional<std::pair<std::string, std::int64_t>>> add_series_point_locked(const NewPoint& point);
  Result<SeriesInfo> series_info_locked(std::int64_t series_id);
  Result<RegressionInfo> regression_info_locked(std::int64_t regression_id);
  // detect_changes for one series, in three steps so that the samples are parsed and tested
  // outside the lock: read (an operation: the level's runs, the samples texts of the runs its
  // windows hold, for up to a few runs per call), walk (no lock: history::change_at_tail run by
  // run), write (an operation: if the series is still as read, its changes, alerts, level start
  // and the points judged seen; else nothing, and the next call walks it again).
  struct DetectionRead;
  struct FoundChange;
  Result<DetectionRead> read_detection_locked(std::int64_t series_id, const history::DetectorOptions& options);
  static std::vector<FoundChange> walk_detection(const DetectionRead& read, const history::DetectorOptions& options);
  // Whether the series was still as read (false: nothing written).
  Result<bool> write_detection_locked(std::int64_t series_id, const DetectionRead& read,
                                      const std::vector<FoundChange>& found, bool enqueue_alerts,
                                      std::vector<RegressionInfo>& changes);
  // For tests (store_history_test.cpp, through StoreTestAccess): called between a series'
  // detection read and its write, without the lock.
  std::function<void(std::int64_t series_id)> between_detection_steps_;
  friend struct StoreTestAccess;

  StoreOptions options_;
  const Clock& clock_;
  std::unique_ptr<Database> db_;
  // Below: used under the group's lock.
  std::map<std::int64_t, MatrixSpec> run_specs_;              // immutable once stored; cached for leases
  std::map<std::int64_t, AgentDescriptor> descriptors_;       // decoded agents.descriptor, by agent id
  std::unordered_map<std::string, std::int64_t> series_ids_;  // series id by key (series_key_text)
  std::function<void()> work_listener_;
  bool work_appeared_ = false;  // set by an operation, consumed when its group commits
  // Agents' credentials, read on every agent request; written under the group's lock too.
  std::mutex credentials_mu_;
  std::map<std::int64_t, AgentCredentials> credentials_;
  // Last, so it is destroyed (committing what is open) while the members above still exist.
  GroupCommit group_;
};

}  // namespace benchfleet::store
