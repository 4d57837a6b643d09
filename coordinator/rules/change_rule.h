// Whether B differs from A beyond what fresh processes of one job on one machine move: the one
// rule behind compare's verdicts, its --fail-if-slower gate, the dashboard's and the report's
// colours (speedups are two processes too).
//
// A cell's within-run CI only says how well one process's statistic is known; two fresh
// processes of the same job differ by far more (a 2-core VM: 33 to 45 ms, each +/-1%). So a change
// is significant only when it is beyond the run-to-run noise:
//   - both sides with two or more ok repetitions (each a fresh process): the 95% interval of the
//     ratio from a Welch t interval on the log of each repetition's statistic must exclude 1
//     (noise "repetitions"; their spread holds each process's sampling noise too);
//   - otherwise: the within-run CIs apart, and max/min - 1 above the device kind's stated floor
//     (noise "floor", common/rules/run_to_run_noise.json).
//   auto v = judge_change({a_ms, a_ci, a_reps}, {b_ms, b_ci, b_reps}, noise_floor("cpu"));
// Pure.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/stats.h"

namespace benchfleet::rules {

struct ChangeSide {
  double value_ms = 0;                 // the statistic (mean over the ok repetitions)
  std::optional<Interval> ci;          // its within-run 95% CI
  std::vector<double> per_process_ms;  // the statistic of each ok repetition (a fresh process each)
};

struct ChangeVerdict {
  std::string verdict;  // "same", "faster", "slower" (B against A), "unknown" (a side without a CI)
  double ratio = 0;     // A / B: above 1, B is faster
  std::string noise;    // "repetitions" or "floor"
  // noise "floor": the floor used (0.8 = 80%). noise "repetitions": the 95% interval of A / B.
  double floor = 0;
  std::optional<Interval> ratio_ci;
  // "within the cpu run-to-run noise floor (80%) of a cell without repetitions", ...
  std::string why;
};

// The stated run-to-run noise floor of a device kind: "cpu" for the CPU, anything else a GPU
// ("cuda"'s floor). From common/rules/run_to_run_noise.json.
double noise_floor(std::string_view device_kind);
// "cpu" for a matrix's CPU class ("cpu", any case), else "cuda".
std::string device_kind_of(std::string_view gpu_class);

ChangeVerdict judge_change(const ChangeSide& a, const ChangeSide& b, double floor);

}  // namespace benchfleet::rules
