// The history: schedules (recurring matrices and the runs they create), series of results
// across runs, the regressions the change detector finds in them, and the alert deliveries
// they owe. Thread-safe: every method is one operation of the store's group commit
// (store_core.h), but detect_changes, which is several (see there).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/types.h"
#include "coordinator/rules/change_detector.h"
#include "coordinator/store/history_types.h"
#include "coordinator/store/page.h"

namespace benchfleet::store {

class RunStore;
class StoreCore;

class HistoryStore {
 public:
  // `runs` creates the runs of due schedules.
  HistoryStore(StoreCore& core, RunStore& runs) : core_(core), runs_(runs) {}
  HistoryStore(const HistoryStore&) = delete;
  HistoryStore& operator=(const HistoryStore&) = delete;

  // ---- schedules (history_schedules.cpp) ----------------------------------------------------
  // Stores a schedule; its first due time is cron's first after now. REQUIRES: `cron` parses
  // (rules::CronSchedule) and `spec` expands (the handler checked both).
  Result<ScheduleInfo> create_schedule(const MatrixSpec& spec, const std::string& cron, bool enabled);
  Result<std::vector<ScheduleInfo>> list_schedules();
  Result<ScheduleInfo> get_schedule(std::int64_t schedule_id);
  // The schedule (as get_schedule) and the ids of its latest `limit` runs, newest due time first
  // (runs_schedule_due). kNotFound when the schedule does not exist.
  Result<std::pair<ScheduleInfo, std::vector<std::int64_t>>> schedule_runs(std::int64_t schedule_id, int limit);
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

  // ---- series (history_series.cpp) ----------------------------------------------------------
  // ResultStore::record_result adds a point to the result's series (creating the series) in its
  // transaction, for every status but unsupported, invalid and oom_implied (verdicts the
  // coordinator inferred: nothing ran, no torch version to place them by); the detector looks at
  // it later. By id, from the first after `after_id`, at most `limit`.
  Result<Page<SeriesInfo>> list_series(const SeriesFilter& filter, std::optional<std::int64_t> after_id, int limit);
  // The series with that key, if it has points.
  Result<std::optional<std::int64_t>> find_series(const SeriesKey& key);
  // A series and its points in series order, from the first after `after_point` (a point id),
  // at most `limit`. kNotFound when the series does not exist or `after_point` is not its own.
  Result<SeriesPoints> get_series(std::int64_t series_id, std::optional<std::int64_t> after_point, int limit);
  // Runs the change detector over up to `max_series` series that have points it has not seen:
  // groups the points of the current level by run (a run's repetitions pool their samples),
  // reads the samples of the last baseline + confirm runs (result_samples), and stores a
  // confirmed change (rules::change_at_tail) as a regression or improvement, moving the
  // series' level start to it. For each new regression (direction regression) it enqueues a
  // webhook delivery when `enqueue_alerts`. Points of non-ok results are skipped by the detector
  // (they are shown, not tested). Per series: one operation reads, the samples are parsed and
  // tested without the lock, one operation writes if the series is still as read (else its
  // points stay unseen, and `more` is set); at most 16 runs of a series are judged per call
  // (the rest: `more`).
  Result<DetectionPass> detect_changes(const rules::DetectorOptions& options, bool enqueue_alerts, int max_series = 64);

  // ---- regressions and alerts (history_regressions.cpp) -------------------------------------
  // Newest first, from the first before `before_id`, at most `limit`.
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

  // ---- inside a caller's operation (ResultStore::record_result) ------------------------------
  // Whether a result of `status` is a point of its series (see list_series).
  static bool has_series_point(ResultStatus status);
  // A result's point in its series.
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
  // statements. Returns the series' key and id when the core's series_ids does not hold them
  // yet: the caller caches them once its operation succeeded (a failed one rolls the series
  // back).
  Result<std::optional<std::pair<std::string, std::int64_t>>> add_series_point_locked(const NewPoint& point);

 private:
  Result<ScheduleInfo> schedule_info_locked(std::int64_t schedule_id);
  Result<SeriesInfo> series_info_locked(std::int64_t series_id);
  Result<RegressionInfo> regression_info_locked(std::int64_t regression_id);
  // detect_changes for one series, in three steps so that the samples are parsed and tested
  // outside the lock: read (an operation: the level's runs, the samples texts of the runs its
  // windows hold, for up to a few runs per call), walk (no lock: rules::change_at_tail run by
  // run), write (an operation: if the series is still as read, its changes, alerts, level start
  // and the points judged seen; else nothing, and the next call walks it again).
  struct DetectionRead;
  struct FoundChange;
  Result<DetectionRead> read_detection_locked(std::int64_t series_id, const rules::DetectorOptions& options);
  static std::vector<FoundChange> walk_detection(const DetectionRead& read, const rules::DetectorOptions& options);
  // Whether the series was still as read (false: nothing written).
  Result<bool> write_detection_locked(std::int64_t series_id, const DetectionRead& read,
                                      const std::vector<FoundChange>& found, bool enqueue_alerts,
                                      std::vector<RegressionInfo>& changes);
  // For tests (store_history_test.cpp, through StoreTestAccess): called between a series'
  // detection read and its write, without the lock.
  std::function<void(std::int64_t series_id)> between_detection_steps_;
  friend struct StoreTestAccess;

  StoreCore& core_;
  RunStore& runs_;
};

}  // namespace benchfleet::store
