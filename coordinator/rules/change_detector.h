// Change points in a series of benchmark runs, decided on the runs' raw latency samples. Pure.
//
// The method (docs/usage.md, "Nightly history and regression detection"): each new run is compared with the baseline,
// the last `baseline_runs` runs of the series' current level, by a two-sided Mann-Whitney U test on the samples (the
// new run's against the baseline runs' pooled), and by the effect size, the ratio of its median to the baseline's (the
// median of the baseline runs' medians). Baseline runs whose median is at least min_effect away from the median of the
// baseline runs' medians are left out of both (outlier runs that were never confirmed would otherwise pull the level
// and the pooled samples their way). A run is
// *suspect* when p < alpha and |ratio - 1| >= min_effect, and the test's direction (U above or
// below its mean) agrees with the ratio's. A change is *confirmed* only when `confirm_runs`
// consecutive runs are suspect in the same direction against the same baseline (the runs just
// before the first of them); its first run starts a new level, so the runs after a real shift
// are compared with the new level and raise nothing more. A single outlier run never confirms a
// change, and a run that is not suspect breaks the sequence. With fewer than
// `min_baseline_runs` baseline runs (in the level, or left after the outliers) there is no
// decision.
//
// Defaults: min_effect 5%, alpha 0.001, confirm_runs 2, baseline_runs 5, min_baseline_runs 3.
// The U test alone is calibrated for samples that share one distribution (p < alpha about
// alpha of the time), but runs of a benchmark differ by more than their samples do (the machine,
// the build, the clocks), so on real series the test alone would flag a fraction of unchanged
// runs; the 5% effect gate and the confirmation are what keep alerts rare: with 3% noise per
// sample and 1% run-to-run jitter, no false alarm in 1,000 simulated 20-run series
// (tests/unit/change_detector_test.cpp).
//
// What it follows: the test on raw repeated measurements is Chromium's Pinpoint (catapult,
// dashboard/pinpoint/models/compare), which compares two sets of samples with the Mann-Whitney
// U test (and Kolmogorov-Smirnov); the minimum effect is the percentage threshold of PyTorch's
// nightly dashboards (the HUD alerts below 0.95x, TorchBench's nightly regression detector at
// 7%); waiting for points after a candidate change before alerting is Mozilla Perfherder's
// "fore window" (it t-tests a back window against a fore window of later points), here
// `confirm_runs` consecutive runs.
//
// Options outside their range are clamped: min_effect >= 0, alpha in [0, 1], confirm_runs >= 1,
// min_baseline_runs >= 1, baseline_runs >= min_baseline_runs. Non-finite samples are ignored.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace benchfleet::rules {

struct DetectorOptions {
  double min_effect = 0.05;   // smallest |after/before - 1| that counts
  double alpha = 0.001;       // the U test's two-sided significance level
  int confirm_runs = 2;       // consecutive suspect runs that confirm a change
  int baseline_runs = 5;      // runs of the current level compared against (the most recent)
  int min_baseline_runs = 3;  // fewer: no decision yet

  bool operator==(const DetectorOptions&) const = default;
};

// One run's measurement of the series: its latency samples (ms), and their median (the stored
// statistic; the detector recomputes it from the samples when they are given, and uses
// median_ms only for a run without samples). A run without samples is never suspect (nothing
// to test) but its median counts in a baseline.
struct RunSamples {
  std::vector<double> samples_ms;
  double median_ms = 0;
};

struct MannWhitney {
  double u = 0;        // U of the first sample
  double z = 0;        // normal approximation with tie and continuity correction
  double p_value = 1;  // two-sided
};

// Two-sided Mann-Whitney U test (normal approximation, tie-corrected). p = 1 when either side
// is empty.
MannWhitney mann_whitney_u(std::span<const double> a, std::span<const double> b);

enum class ChangeDirection { kRegression, kImprovement };  // slower, faster
// "regression" or "improvement".
std::string_view to_string(ChangeDirection direction);
std::optional<ChangeDirection> parse_change_direction(std::string_view s);

struct Change {
  std::size_t first_index = 0;  // index (into the runs given) of the first run of the new level
  ChangeDirection direction = ChangeDirection::kRegression;
  double before_median_ms = 0;  // the baseline runs' median of medians
  double after_median_ms = 0;   // the confirming runs' median of medians
  double ratio = 1;             // after / before
  double p_value = 1;           // the largest of the confirming runs' p-values
  int baseline_runs = 0;        // the baseline runs compared against (outlier runs left out)
  int confirm_runs = 0;
};

// Is there a change ending at the last run? `level` holds the runs of the series' current level
// in order (its first run the level's start). Looks only at the last `confirm_runs` runs (the
// candidates) against the up to `baseline_runs` runs before them; nullopt when there are not
// enough runs or they do not all agree.
std::optional<Change> change_at_tail(std::span<const RunSamples> level, const DetectorOptions& options);

// Every change in a whole series, as the store finds them adding one run at a time: after each
// confirmed change the level restarts at its first run.
std::vector<Change> find_changes(std::span<const RunSamples> runs, const DetectorOptions& options);

// One run of a series' current level as the history service reads it from the store: its ok
// points (its repetitions) with their medians, and its results' samples as stored (JSON arrays;
// read only for the runs a window of the walk holds, empty for the others).
struct LevelRun {
  std::vector<std::int64_t> point_ids;
  std::vector<double> medians;
  std::vector<std::string> samples_text;
};

// A change the walk confirmed, the point it starts at and the last point before it.
struct FoundChange {
  Change change;
  std::int64_t first_bad = 0;
  std::optional<std::int64_t> last_good;
};

// The detector's walk over a level's runs as if the runs [first, stop) came one at a time: each
// is the tail once, against the runs of the level before it (change_at_tail over the last
// baseline_runs + confirm_runs runs); a confirmed change starts the level at its first run.
std::vector<FoundChange> walk_level(std::span<const LevelRun* const> runs, std::ptrdiff_t first, std::ptrdiff_t stop,
                                    const DetectorOptions& options);

}  // namespace benchfleet::rules
