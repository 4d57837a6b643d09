// Fills a coordinator database with a fleet's worth of realistic results, in process through
// the Store API (enrol one agent per GPU class, create runs, lease every job, record a verdict
// for it). The first run is the seeds' study (the 12 seed models x batch 1/4/16 x 4 modes x
// stable/nightly x GPU classes x repetitions: 5,184 jobs with the defaults); the runs after it
// sweep one model each until the total is reached. Verdicts: ok results with 30-100 samples,
// statistics, memory, telemetry, the environment fingerprint a real worker sends and, for
// compiled modes, an accuracy verdict (3% wrong, 1% eager nondeterministic); OOMs where
// the card is too small (and the oom_implied cells the coordinator infers); a few errors and
// timeouts. Deterministic for a seed. About 1.5 ms per result on tmpfs (the lease and result
// transactions of the real store).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "common/catalog.h"
#include "common/clock.h"
#include "common/result.h"

namespace benchfleet::bench {

struct FillOptions {
  std::string db;                        // created; must not exist yet
  std::int64_t total_results = 100'000;  // about this many, across all runs
  int gpu_classes = 6;                   // first N of a100, v100, t4, h100, l4, a10g
  int repetitions = 3;                   // per cell, in every run
  std::uint64_t seed = 1;
};

struct FillSummary {
  std::int64_t big_run_id = 0;  // the first run: the whole matrix
  std::int64_t big_run_jobs = 0;
  std::int64_t runs = 0;
  std::int64_t results = 0;                                   // verdicts stored, oom_implied included
  std::int64_t ok = 0, oom = 0, oom_implied = 0, errors = 0;  // errors: error + timeout
  double seconds = 0;
};

// `progress` (may be empty) is called now and then with the results stored so far.
Result<FillSummary> fill_database(const FillOptions& options, const Catalog& catalog, const Clock& clock,
                                  const std::function<void(std::int64_t)>& progress);

}  // namespace benchfleet::bench
