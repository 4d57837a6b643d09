// What a posted result becomes, decided before anything is written: refused (the one check of a
// posted result: its form, then what its job's spec refutes), or the plan the store writes in one
// transaction (ResultStore::record_result): the row's derived columns, the speed fingerprint, the
// result's point in its series, and whether it prunes the run's queue (an OOM implies the larger
// batches of its cell are OOM too; rules/scheduler.h implied_oom picks them). Pure. The form check
// recomputes the statistics from the samples (a bootstrap), so the store makes it before it takes
// its lock; the job's part needs the job, read in the store's operation.
//   Result<PostedBody> body = rules::accept_posted(result);           // 400, naming the field
//   Result<IngestPlan> plan = rules::plan_ingest(result, job, run_spec);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/types.h"

namespace benchfleet::rules {

// The columns a stored result gets besides its body, derived from the posted result, its job and
// its run's noise thresholds.
struct ResultColumns {
  // result.accuracy: its verdict's wire name; the judged error and its bound (both NULL for an
  // unchecked verdict: nothing was compared).
  std::optional<std::string> accuracy;
  std::optional<double> accuracy_error;
  std::optional<double> accuracy_tolerance;
  // Compiled modes only. Python: telemetry.compile_ms (the first call). LibTorch: the
  // AOTInductor export, export_s x 1000.
  std::optional<double> compile_ms;
  // Compiled modes only. Python: telemetry.inductor_cache. LibTorch: "warm" when the artifact
  // came from the agent's cache (telemetry.artifact_cached), else the export's
  // telemetry.export_inductor_cache, else "cold" when the export was timed.
  std::optional<std::string> compile_cache;
  // memory.peak_allocated_bytes (the CUDA allocator's peak), else memory.peak_rss_bytes.
  std::optional<std::int64_t> peak_memory_bytes;
  // telemetry.recompiles, when an integer >= 0.
  std::optional<std::int64_t> recompiles;
  // noise_flags(result, noise, target_ci_rel_width) joined with ',' ("" when none).
  std::string flags;

  bool operator==(const ResultColumns&) const = default;
};

// `target_ci_rel_width`: the run's measurement target (common/noise_flags.h), when known.
ResultColumns result_columns(const JobSpec& job, const JobResult& result, const NoiseSpec& noise,
                             std::optional<double> target_ci_rel_width = std::nullopt);

// The flags column back as a list ("" -> none).
std::vector<std::string> split_flags(const std::string& column);

// Whether a result of `status` is a point of its series: every status but unsupported, invalid
// and oom_implied (verdicts the coordinator inferred: nothing ran, no torch version to place them
// by).
bool has_series_point(ResultStatus status);

// A result's point in its series, but for the ids the store gives it.
struct SeriesPointPlan {
  ResultStatus status = ResultStatus::kOk;
  std::optional<double> median_ms, ci_low_ms, ci_high_ms;
  std::optional<std::string> torch_version, torch_git;
  std::string version_key;  // rules/series_order.h version_sort_key of torch_version: the series order
  std::string flags;
  std::optional<std::string> accuracy;

  bool operator==(const SeriesPointPlan&) const = default;
};

// The whole result as stored: its digest (a retry of the same result is a duplicate, another one a
// mismatch), its body without the samples (listings never read them) and the samples apart.
struct PostedBody {
  std::string digest;   // sha256 hex of the whole result's JSON
  std::string body;     // the JSON without samples_ms
  std::string samples;  // samples_ms as JSON
};
// The result's form checked (common/result_checks.h check_posted_result: what any result may
// claim), and its body as stored; else the error naming the field under `path`.
Result<PostedBody> accept_posted(const JobResult& result, const std::string& path = "result");

struct IngestPlan {
  ResultColumns columns;
  std::string fingerprint;                   // speed_fingerprint(result.environment)
  std::optional<std::string> torch_version;  // the environment's, when it recorded one
  std::optional<SeriesPointPlan> series_point;
  bool implies_oom = false;  // an OOM: the queued jobs of its cell it implies are OOM are pruned

  bool operator==(const IngestPlan&) const = default;
};

// The plan for `result` (accepted by accept_posted) of `job` in a run of `run_spec`, or the error
// naming the field (under `path`) of a claim its job refutes (an accuracy verdict on an eager job,
// a stop reason its count cannot give, ...).
Result<IngestPlan> plan_ingest(const JobResult& result, const JobSpec& job, const MatrixSpec& run_spec,
                               const std::string& path = "result");

}  // namespace benchfleet::rules
