// Runs and their jobs: what was submitted, how far it got, and the queue it makes.
// Thread-safe: every method is one operation of the store's group commit (store_core.h): it
// runs alone on the one connection and returns once what it wrote is committed.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <vector>

#include "common/result.h"
#include "common/types.h"
#include "coordinator/rules/eta.h"
#include "coordinator/store/page.h"
#include "coordinator/store/run_types.h"
#include "coordinator/store/store_core.h"

namespace benchfleet::store {

class RunStore {
 public:
  explicit RunStore(StoreCore& core) : core_(core) {}
  RunStore(const RunStore&) = delete;
  RunStore& operator=(const RunStore&) = delete;

  // Jobs stored per operation of a big submit: about 30 ms of inserts on a 2-core machine, so an
  // agent's request waits about that long behind a submit of 10^5 jobs (bench/big_results).
  static constexpr std::size_t kSubmitChunk = 512;

  // Stores the run and all its jobs: in one transaction up to kSubmitChunk jobs, beyond that in
  // operations of kSubmitChunk jobs each (the first jobs may be leased while the last are
  // stored; a cancel meanwhile stores the rest cancelled). Returns once all are stored. A run
  // whose submit failed, or was cut short by a restart (Store::open), is kept as a cancelled run
  // of the jobs it got. Jobs an enrolled slot of their GPU class declares unsupported (it has
  // their build and runtime, not their mode) get that verdict; jobs no enrolled slot has the
  // build or runtime of stay queued until an agent that has them enrols, and are then run or
  // judged.
  Result<RunCreated> create_run(const MatrixSpec& spec, const std::vector<JobSpec>& jobs);
  // kNotFound when the run does not exist.
  Result<RunInfo> get_run(std::int64_t run_id);
  // Newest first; `before_id` pages backwards.
  Result<std::vector<RunInfo>> list_runs(int limit, std::optional<std::int64_t> before_id);
  // Queued and leased jobs become cancelled; lease holders learn it at their next renewal.
  Result<CancelOutcome> cancel_run(std::int64_t run_id);
  // The run's jobs with id > `after_id`, ascending, at most `limit` (one indexed query).
  // kNotFound when the run does not exist.
  Result<Page<JobRow>> list_jobs(std::int64_t run_id, std::optional<std::int64_t> after_id, int limit);
  // The run's jobs by (build, runtime, mode): how many are queued, the durations of the finished
  // ones, and how long each running one has run, for rules::seconds_left. Two queries over the
  // run's jobs (jobs_run_status); no row per job but the running ones.
  Result<std::vector<rules::ModeTimes>> mode_times(std::int64_t run_id);

  // The queue by (GPU class, torch build): queued jobs, and leased + running ones; a row per
  // pair with either, ordered by GPU class, then build. Done, failed and cancelled jobs are not
  // counted. Each cell's queued jobs are also split by their run's timeout_s. One pass in cell
  // order over the partial index of queued jobs (jobs_queued_cells: its length is the queue, not
  // the history), each run's matrix once, and the active jobs' rows; no sort.
  Result<std::vector<QueueCell>> queue_summary();

  // Inside an operation of this store or another narrow store's (the group's lock held, its
  // transaction open; each asserts it, StoreCore::assert_held).
  // create_run; a schedule's run names it and the due time it stands for
  // (ScheduleStore::fire_due_schedules).
  Result<RunCreated> create_run_locked(const MatrixSpec& spec, const std::vector<JobSpec>& jobs,
                                       std::optional<std::int64_t> schedule_id = std::nullopt,
                                       std::optional<TimestampMs> due_at = std::nullopt);
  // kNotFound when the run does not exist.
  Result<RunInfo> run_info_locked(std::int64_t run_id);
  // Runs a restart cut short in their submit (fewer jobs than job_count): cancelled, keeping
  // the jobs they got. Called once as the store opens.
  Status close_partial_runs_locked();

 private:
  Result<std::int64_t> insert_run_locked(const MatrixSpec& spec, std::size_t job_count,
                                         std::optional<std::int64_t> schedule_id, std::optional<TimestampMs> due_at)
      BF_REQUIRES(core_.lock());
  // Queued, or cancelled when the run was cancelled meanwhile. Sets work_appeared.
  Status insert_jobs_locked(std::int64_t run_id, const MatrixSpec& spec, std::span<const JobSpec> jobs)
      BF_REQUIRES(core_.lock());
  Status close_partial_run_locked(std::int64_t run_id) BF_REQUIRES(core_.lock());
  Result<std::map<JobStatus, std::int64_t>> job_counts_locked(std::int64_t run_id) BF_REQUIRES(core_.lock());

  StoreCore& core_;
};

}  // namespace benchfleet::store
