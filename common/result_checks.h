// Consistency rules for a result an agent posts (docs/design.md §5), on top of what
// decode<JobResult> checks (types, required members). Kept apart from the decoder because
// stored results are decoded too: a row written before a rule existed must stay readable.
//   JobResult r = decode<JobResult>(body["result"]).value();
//   if (auto err = check_posted_result(r, "result")) return *err;  // 400 naming the field
#pragma once

#include <optional>
#include <string>

#include "common/result.h"
#include "common/types.h"

namespace benchfleet {

// Longest latency, first call or phase a result may report: the longest job timeout (7 days).
inline constexpr double kMaxResultMs = 7.0 * 86400 * 1000;

// Returns the first violation, its field a JSON path under `path` ("result.stats.p99_ms"):
//  - status is one a worker or agent can reach: never oom_implied (the scheduler's verdict);
//  - stats, samples_ms and stop_reason only on ok (required there) and invalid (optional);
//  - every sample, first_call_ms, export_s and load_s finite, >= 0 and at most kMaxResultMs;
//    at most max_iterations() samples (common/shared_rules.h);
//  - stats equal what compute_statistics gives for samples_ms (mean, median, p90, p99, min,
//    max, stddev, cv, iterations; relative tolerance 1e-9): a mismatch is refused, never
//    silently replaced, so a broken worker is noticed. The bootstrap CI is not recomputed
//    (2000 resamples of up to 10^6 samples is too slow for ingest); it must lie within
//    [min, max] and contain the median;
//  - oom info only on oom, signal (1..128) only on crash, memory figures >= 0;
//  - accuracy only on ok and invalid (the codec checks its figures' ranges), its tolerance at
//    least kErrorMultiplier x its eager_error; pass and wrong only where the rule judges (eager_error
//    at most kMaxEagerError), pass only with compiled_error <= tolerance (and no cosine below
//    kMinCosine), wrong only with one of the rule's failures (an error above the tolerance, a low
//    cosine, an exact-match output, NaN/Inf);
//  - error, and the keys and string values of environment and telemetry, are text people read
//    (common/display_text.h): no control, invisible or bidirectional characters (error may
//    hold newlines and tabs).
// Pure; O(n log n) in the number of samples.
std::optional<Error> check_posted_result(const JobResult& result, const std::string& path);

// The rules that need the job (its mode, dtype, device) and the run's measurement spec, applied by
// the coordinator as it stores a result (the first violation, its field under `path`):
//  - accuracy only on a compiled mode (an eager job has nothing to judge), and a judged verdict's
//    tolerance the rule's for the job's dtype and device (kErrorMultiplier x eager_error +
//    error_floor), or 0 for an exact-match output;
//  - samples_ms at most max_iterations whatever the status, and the stop_reason what that count can
//    show: fixed_count only on a fixed count (min == max) and with exactly that many samples
//    (so 2 samples of a run fixed at 300 are refused, and so is fixed_count on a job whose count
//    is not fixed: neither stopping rule makes that claim); max_iterations with exactly max_iterations;
//    ci_target only on a count that is not fixed and with at least min_iterations (the rule
//    checks the CI only then); max_time with any count (the time bound may stop a slow model
//    before its minimum).
// Whether the CI really met its target is flagged, not refused (ci_not_met, common/noise_flags.h):
// the rule's CI and the final one come from different bootstrap draws.
struct ResultJob {
  Mode mode = Mode::kEager;
  Dtype dtype = Dtype::kFloat32;
  bool on_cuda = false;  // the job's GPU class is not the CPU
  MeasurementSpec measurement;
};
std::optional<Error> check_result_for_job(const JobResult& result, const ResultJob& job, const std::string& path);

// Makes the text check_posted_result checks displayable, escaping what its rule refuses: the
// agent applies it to what a job wrote (a compiler's coloured diagnostics in a stderr tail, a
// model's odd version string) so the result is posted instead of refused.
void escape_result_text(JobResult& result);

}  // namespace benchfleet
