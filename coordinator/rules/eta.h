// How long an active run has left, re-estimated at every look: from how long its finished jobs
// of the same (build, runtime, mode) took (a compiled mode's include its compile), the time its
// running jobs have already spent, and how many run at once. Pure.
//
//   std::vector<rules::ModeTimes> times = ...;      // RunStore::mode_times
//   std::optional<double> left = rules::seconds_left(times);
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/types.h"

namespace benchfleet::rules {

// The jobs of one (build, runtime, mode) of a run.
struct ModeTimes {
  std::string build;
  Runtime runtime = Runtime::kLibtorch;
  Mode mode = Mode::kEager;
  int queued = 0;
  int timed = 0;        // finished jobs with a start and an end
  double timed_ms = 0;  // their durations summed, start (first lease) to end
  // Leased or running jobs: the time since each started.
  std::vector<double> running_elapsed_ms;
};

// What a job of `of` is expected to take, in ms: the mean of its own (build, runtime, mode)'s
// finished jobs; else of those of its runtime that are compiled as it is (or not); else of any
// that are compiled as it is; else of all finished jobs. nullopt before any job finished.
std::optional<double> expected_ms(const std::vector<ModeTimes>& times, const ModeTimes& of);

// Seconds until every queued and running job has finished, nullopt before any job finished (no
// basis yet). The work left is, per running job, its expected time less what it spent (a job
// past its expected time is taken to run half as long again as it has: a long first compile
// keeps the estimate moving rather than frozen at zero), and, per queued job, its expected time;
// it is shared by the jobs running now (at least one).
std::optional<double> seconds_left(const std::vector<ModeTimes>& times);

}  // namespace benchfleet::rules
