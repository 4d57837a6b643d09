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
//  - accuracy only on ok and invalid (the codec checks its figures' ranges).
// Pure; O(n log n) in the number of samples.
std::optional<Error> check_posted_result(const JobResult& result, const std::string& path);

}  // namespace benchfleet
