// Progress of a run as the CLI shows it: a bar with done/total, counts per status and an ETA on
// a terminal; plain lines otherwise. Pure functions of the Run JSON and the clock readings.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace benchfleet::cli {

// Exit codes of the CLI (documented in --help and docs/usage.md).
inline constexpr int kExitOk = 0;
inline constexpr int kExitError = 1;      // the request failed, a file is invalid, ...
inline constexpr int kExitUsage = 2;      // bad command line
inline constexpr int kExitRunFailed = 3;  // the run ended with failed jobs or error/crash/timeout/invalid verdicts
inline constexpr int kExitRunCancelled = 4;
// compare --fail-if-slower / --min-cells: fewer cells were compared than asked, so the gate
// cannot pass (a misspelt build, runs of other batch sizes, cells that failed on one side).
inline constexpr int kExitIncomplete = 5;
inline constexpr int kExitInterrupted = 130;

// What the progress display needs from GET /api/v1/runs/{id}.
struct RunProgress {
  std::int64_t id = 0;
  std::string name;
  std::string state;  // queued, running, done, cancelled
  std::int64_t job_count = 0;
  std::int64_t finished_jobs = 0;
  std::map<std::string, std::int64_t> jobs;     // per job status
  std::map<std::string, std::int64_t> results;  // per verdict

  bool ended() const { return state == "done" || state == "cancelled"; }
  bool operator==(const RunProgress&) const = default;
};
Result<RunProgress> progress_from_json(const nlohmann::json& run);
// The coordinator's estimate of the seconds a run has left (its `eta_s`, re-estimated at each
// request from the run's job times: rules/eta.h, the one estimate the CLI and the dashboard
// show); nullopt when it has none yet.
std::optional<double> coordinator_eta_s(const nlohmann::json& run);

// "45s", "3m05s", "2h07m".
std::string format_duration(double seconds);

// Non-zero verdict and job counts in a fixed order: "ok 10 · oom 2 · error 1 · running 1"
// (running counts leased jobs too).
std::string status_counts(const RunProgress& p, const std::string& separator = " · ");

// One terminal line, at most `width` columns:
//   "run 7 [##########----------] 12/36  33%  ok 10 · oom 1 · running 1  ETA 1m20s"
std::string render_bar(const RunProgress& p, std::optional<double> eta_s, int width);
// "run 7 running: 12/36 jobs finished (ok 10, oom 1, running 1); ETA 1m20s"
std::string render_plain(const RunProgress& p, std::optional<double> eta_s);
// "run 7 done after 2m13s: 36/36 jobs (ok 30 · oom 3 · ...)"; no time when elapsed_s is 0.
std::string render_summary(const RunProgress& p, double elapsed_s);

// The CLI's exit code for a run that ended: kExitOk, kExitRunFailed or kExitRunCancelled.
int exit_code_for(const RunProgress& p);

}  // namespace benchfleet::cli
