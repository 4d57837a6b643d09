// ScheduleStore: schedules, recurring matrices whose runs the coordinator creates when due.
// Thread-safe: every method is one operation of the store's group commit (store_core.h).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/types.h"
#include "coordinator/store/history_types.h"
#include "coordinator/store/store_core.h"

namespace benchfleet::store {

class RunStore;
class ScheduleStore {
 public:
  // `runs` creates the runs of due schedules.
  ScheduleStore(StoreCore& core, RunStore& runs) : core_(core), runs_(runs) {}
  ScheduleStore(const ScheduleStore&) = delete;
  ScheduleStore& operator=(const ScheduleStore&) = delete;

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

 private:
  Result<ScheduleInfo> schedule_info_locked(std::int64_t schedule_id) BF_REQUIRES(core_.lock());

  StoreCore& core_;
  RunStore& runs_;
};

}  // namespace benchfleet::store
