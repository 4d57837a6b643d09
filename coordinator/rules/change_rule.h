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
// A comparison judges many cells at once: at 95% per cell, one A/A cell in twenty reads as a
// change. So the cells judged by repetitions are held together to a 5% false-discovery rate
// (Benjamini-Hochberg on their Welch p-values): in an A/A, a 5% chance that any cell reads as a
// change; where many cells did change, at most 5% of those called a change are expected noise.
//   auto v = judge_change({a_ms, a_ci, a_reps}, {b_ms, b_ci, b_reps}, noise_floor("cpu"));
//   control_false_discoveries(verdicts_of_every_cell);
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
  // noise "repetitions": the two-sided p-value of Welch's t test on the logs (no change).
  std::optional<double> p;
  // "within the cpu run-to-run noise floor (80%) of a cell without repetitions", ...
  std::string why;
};

// The stated run-to-run noise floor of a device kind: "cpu" for the CPU, anything else a GPU
// ("cuda"'s floor). From common/rules/run_to_run_noise.json.
double noise_floor(std::string_view device_kind);
// "cpu" for a matrix's CPU class ("cpu", any case), else "cuda".
std::string device_kind_of(std::string_view gpu_class);

ChangeVerdict judge_change(const ChangeSide& a, const ChangeSide& b, double floor);

// The false-discovery rate the cells of one comparison are held to.
inline constexpr double kFalseDiscoveryRate = 0.05;

// Benjamini-Hochberg over the verdicts that carry a p-value: one called a change whose p is above
// the step-up threshold becomes "same", and its why says so. Verdicts without a p (the floor's)
// are left as they are.
void control_false_discoveries(const std::vector<ChangeVerdict*>& verdicts, double rate = kFalseDiscoveryRate);

}  // namespace benchfleet::rules
