// One job, start to verdict: load, first call, warm-up, measurement under the stopping rule,
// with every failure turned into a result (never an exception out of run_job).
#pragma once

#include <functional>
#include <string_view>

#include "agent/worker/capabilities.h"
#include "common/types.h"
#include "common/worker_job.h"

namespace benchfleet::worker {

// Progress callback: phase name, timed iterations so far, seconds in the phase.
using ProgressFn = std::function<void(std::string_view phase, std::size_t iterations, double seconds)>;

JobResult run_job(const WorkerJob& job, const Capabilities& caps, const ProgressFn& progress);

}  // namespace benchfleet::worker
