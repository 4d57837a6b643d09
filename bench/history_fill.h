// Fills a coordinator database with a year of nightly history, in process through the Store
// API: a schedule of the seeds' study (12 models x batch 1/4/16 x eager/default/max-autotune x
// a100/v100/t4 x stable/nightly = 648 cells) fires every night on a ManualClock
// (Store::fire_due_schedules); one agent per GPU class leases every job and records a verdict
// (Store::lease, record_result, which adds each result to its series); after each night the
// change detector runs over the new points (services::detect_changes, alerts enqueued) as the
// coordinator's history worker does. Results: ok with `samples` samples of CV ~3% around the
// cell's level, that level jittered 1% from night to night; OOMs where a T4 is too small. Some
// series (1 in 40) step up 8-20% on one night and stay there, a few (1 in 97) get 10% faster;
// the nightly build's torch version is "2.7.0.dev<date>+cu126" with a git hash per night.
// Deterministic for a seed.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/catalog.h"
#include "common/result.h"

namespace benchfleet::bench {

struct HistoryFillOptions {
  std::string db;    // created; must not exist yet
  int nights = 365;  // nightly runs
  int models = 12;   // the first N seed models
  int samples = 50;  // per ok result
  std::uint64_t seed = 1;
};

struct HistoryFillSummary {
  std::int64_t runs = 0;
  std::int64_t results = 0;
  std::int64_t series = 0;
  std::int64_t injected_steps = 0;  // series made to change level (regressions + improvements)
  std::int64_t regressions = 0;     // changes the detector confirmed, direction regression
  std::int64_t improvements = 0;
  // The confirmed changes judged against what was injected: first bad run on the series' step
  // night and in its direction, or anywhere else (a false alarm); steps never confirmed.
  std::int64_t changes_at_step = 0;
  std::int64_t changes_elsewhere = 0;
  std::int64_t steps_missed = 0;
  double fill_seconds = 0;    // leases and results
  double detect_seconds = 0;  // services::detect_changes, all nights
  std::int64_t detect_series_examined = 0;
};

// `progress` (may be empty) is called after each night with the nights done.
Result<HistoryFillSummary> fill_history(const HistoryFillOptions& options, const Catalog& catalog,
                                        const std::function<void(int)>& progress);

}  // namespace benchfleet::bench
