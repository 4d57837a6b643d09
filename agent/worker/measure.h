// One job, start to verdict: load, first call, warm-up, measurement under the stopping rule,
// with every failure turned into a result (never an exception out of run_job).
//  load_s         loading the artifact (TorchScript: torch::jit::load; AOTInductor: extracting
//                 the package and loading its shared library), inputs not included
//  first_call_ms  the first forward pass, whose outputs are checked against the exporter's
//                 metadata (count, shapes, dtypes; a mismatch is an `error`)
// Both are kept in a verdict of a later phase (oom, error). Timed iterations are harvested on
// a HarvestSchedule (timing.h): on CUDA one synchronize per 16 iterations, or per 0.25 s since
// the last harvest when iterations are slower. An out-of-memory is recognised also where
// AOTInductor's runtime reports only "API call failed" (its cause is on std::cerr; on CUDA the
// caching allocator's out-of-memory counter grew during the job) and, under a CPU cap, where
// its model library cannot be mapped.
#pragma once

#include <functional>
#include <string_view>

#include "agent/worker/capabilities.h"
#include "agent/worker/result_output.h"
#include "common/types.h"
#include "common/worker_job.h"

namespace benchfleet::worker {

// Progress callback: phase name, timed iterations so far, seconds in the phase.
using ProgressFn = std::function<void(std::string_view phase, std::size_t iterations, double seconds)>;

// With `native_oom_output` (the worker process passes where its result goes), native code that
// ends the process under a CPU memory cap instead of reporting an out-of-memory (see
// native_oom.h) still leaves a verdict there, and the exit code to match. In-process callers
// leave it null.
JobResult run_job(const WorkerJob& job, const Capabilities& caps, const ProgressFn& progress,
                  const ResultOutput* native_oom_output = nullptr);

}  // namespace benchfleet::worker
