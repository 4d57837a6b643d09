// A run's report in a few figures per compiled (build, runtime, mode), for following a schedule's
// runs over time (nightly builds): geomean speedup against eager, pass rate, compile time and
// memory ratio, over all of the run's tables (GPU classes, batch sizes, dtypes). Pure.
//
//   std::vector<rules::ModeSummary> s = rules::summarize(build_report(input));
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "coordinator/rules/report.h"

namespace benchfleet::rules {

struct ModeSummary {
  std::string key;  // "<build>/<runtime>/<mode>"
  std::string build;
  Runtime runtime = Runtime::kLibtorch;
  Mode mode = Mode::kDefault;
  std::vector<std::string> torch_versions;  // what its latency columns' results recorded
  // The geomean of the speedups the tables' geomeans covered (the same exclusions: wrong,
  // eager nondeterministic, flagged when the report excludes them); nullopt when none.
  std::optional<double> geomean_speedup;
  int speedup_covered = 0;
  int speedup_total = 0;  // rows of the tables with a speedup column for it
  // The pass rates' counts summed (report.h PassRate); pass_rate = passed / attempted.
  int passed = 0, attempted = 0, oom = 0, errors = 0, wrong = 0, unsupported = 0;
  std::optional<double> pass_rate;
  std::optional<double> compile_ms_median;     // of its ok compile cells
  std::optional<double> memory_ratio_geomean;  // of its ok memory ratio cells (eager peak / its peak)
};

// One per compiled mode's latency column key across the report's tables, in first-seen order.
// Modes the matrix measured without eager have no speedup or memory ratio (nullopt).
std::vector<ModeSummary> summarize(const rules::Report& report);

}  // namespace benchfleet::rules
