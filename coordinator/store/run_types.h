// What the store holds of runs, their jobs and their results, as its callers read them
// (Store's runs, results and queue methods).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/agent_protocol.h"
#include "common/clock.h"
#include "common/types.h"

namespace benchfleet::store {

struct RunCreated {
  std::int64_t run_id = 0;
  std::int64_t job_count = 0;
};

struct RunInfo {
  std::int64_t id = 0;
  std::string name;
  MatrixSpec spec;
  std::int64_t job_count = 0;
  TimestampMs created_at = 0;
  std::optional<TimestampMs> cancelled_at;
  std::optional<TimestampMs> finished_at;
  std::map<JobStatus, std::int64_t> jobs_by_status;
  std::map<ResultStatus, std::int64_t> results_by_status;
  std::string state;  // rules::RunState name
};

struct CancelOutcome {
  std::int64_t cancelled_jobs = 0;  // queued or leased jobs that became cancelled now
  bool already_cancelled = false;
};

struct ResultFilter {
  std::optional<std::string> model, mode, torch_build, gpu, runtime, status, dtype;
  std::optional<int> batch;
};

struct ResultRow {
  std::int64_t id = 0;
  std::int64_t job_id = 0;
  std::int64_t run_id = 0;
  int attempt = 0;
  JobSpec spec;
  // Without its samples: a read that asks for them gets them in samples_json instead.
  JobResult result;
  // The stored samples (a JSON array of numbers, as the coordinator wrote it at ingest) when the
  // read asked for them: served as they are, never parsed, so a result of 10^6 samples costs its
  // text once and not a parsed copy of it.
  std::optional<std::string> samples_json;
  // A listing with samples left this result's out: they alone are more than a page may hold
  // (ResultStore::kSamplesPageBytes). GET /api/v1/results/{id} streams them.
  bool samples_omitted = false;
  // The noise flags the coordinator gave it when stored (results.flags; common/noise_flags.h).
  std::vector<std::string> flags;
  std::optional<std::string> agent_name;
  std::optional<std::string> slot;
  TimestampMs created_at = 0;
};

// One job of a run as the progress grid shows it.
struct JobRow {
  std::int64_t id = 0;
  JobSpec spec;
  JobStatus status = JobStatus::kQueued;
  int attempt = 0;  // attempts started so far (0 before the first lease)
  // The job's latest result (its highest attempt), if any.
  std::optional<std::int64_t> result_id;
  std::optional<ResultStatus> result_status;
  // Who holds the lease of a leased or running job, posted a done job's verdict, held a failed
  // job's last attempt or a cancelled job's lease when the run was cancelled. None for queued
  // jobs and for verdicts the coordinator inferred (oom_implied, unsupported).
  std::optional<std::string> agent_name;
  std::optional<std::string> slot;
  TimestampMs updated_at = 0;
};

// One (GPU class, torch build) of the queue (RunStore::queue_summary): what an autoscaler reads.
struct QueueCell {
  std::string gpu_class;
  std::string torch_build;
  std::int64_t queued = 0;
  std::int64_t active = 0;  // leased + running
  // The queued jobs by their run's timeout_s, ascending (they sum to `queued`): an autoscaler
  // whose allocations end sooner than a job may run leaves those jobs out of its count.
  std::vector<std::pair<int, std::int64_t>> queued_by_timeout;

  bool operator==(const QueueCell&) const = default;
};

}  // namespace benchfleet::store
