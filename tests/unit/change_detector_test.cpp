// The change detector (coordinator/rules/change_detector.h): the Mann-Whitney U test against
// values worked out by hand, and the detector on synthetic series (steps, noise, outliers).
#include "coordinator/rules/change_detector.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <numbers>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace benchfleet::rules {
namespace {

// ---- Mann-Whitney U ---------------------------------------------------------------------------

// Reference values: U counts the pairs (a_i, b_j) with a_i > b_j plus half the ties; z =
// sign(U - mu) * max(|U - mu| - 0.5, 0) / sigma with mu = n1 n2 / 2 and sigma^2 = n1 n2 / 12 *
// ((n + 1) - sum(t^3 - t) / (n (n - 1))); p = erfc(|z| / sqrt(2)). Worked by hand below and
// evaluated with Python's math module (scipy.stats.mannwhitneyu(method="asymptotic") computes
// the same statistic).
TEST(MannWhitney, SeparatedSamples) {
  // U = 0, mu = 4.5, sigma^2 = 9 / 12 * 7 = 5.25, z = -4 / 2.2913.
  const MannWhitney r = mann_whitney_u(std::vector<double>{1, 2, 3}, std::vector<double>{4, 5, 6});
  EXPECT_DOUBLE_EQ(r.u, 0);
  EXPECT_NEAR(r.z, -1.7457431218879391, 1e-12);
  EXPECT_NEAR(r.p_value, 0.0808555983700523, 1e-12);
}

TEST(MannWhitney, WithTies) {
  // Ranks of 1 2 2 | 2 3 | 3 3 4 5: the 2s share rank 3, the 3s rank 6; R_a = 1 + 3 + 3 + 6 = 13,
  // U = 13 - 10 = 3; ties: 2 * (27 - 3) = 48; sigma^2 = 20 / 12 * (10 - 48 / 72).
  const MannWhitney r = mann_whitney_u(std::vector<double>{1, 2, 2, 3}, std::vector<double>{2, 3, 3, 4, 5});
  EXPECT_DOUBLE_EQ(r.u, 3);
  EXPECT_NEAR(r.z, -1.6480507967206073, 1e-12);
  EXPECT_NEAR(r.p_value, 0.09934224785346527, 1e-12);
}

TEST(MannWhitney, UnsortedInputAndSymmetry) {
  const std::vector<double> a = {1.5, 2.5, 9, 4, 7};
  const std::vector<double> b = {3, 8, 6, 5, 10, 11, 12};
  // Pairs a > b: 9 beats 3, 8, 6, 5; 4 beats 3; 7 beats 3, 6, 5: U = 8.
  const MannWhitney ab = mann_whitney_u(a, b);
  EXPECT_DOUBLE_EQ(ab.u, 8);
  EXPECT_NEAR(ab.z, -1.4615962972940701, 1e-12);
  EXPECT_NEAR(ab.p_value, 0.14385186965485364, 1e-12);
  const MannWhitney ba = mann_whitney_u(b, a);
  EXPECT_DOUBLE_EQ(ba.u, 35 - 8);
  EXPECT_NEAR(ba.z, -ab.z, 1e-12);
  EXPECT_NEAR(ba.p_value, ab.p_value, 1e-12);
}

TEST(MannWhitney, EmptyOrAllEqualGivesNoEvidence) {
  const std::vector<double> some = {1, 2, 3};
  const std::vector<double> none;
  EXPECT_EQ(mann_whitney_u(some, none).p_value, 1);
  EXPECT_EQ(mann_whitney_u(none, some).p_value, 1);
  EXPECT_EQ(mann_whitney_u(none, none).p_value, 1);
  const MannWhitney same = mann_whitney_u(std::vector<double>{5, 5, 5}, std::vector<double>{5, 5});
  EXPECT_EQ(same.p_value, 1);
  EXPECT_EQ(same.z, 0);
  // Non-finite values are left out: this is {1, 2, 3} against {4, 5, 6}.
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const MannWhitney finite =
      mann_whitney_u(std::vector<double>{1, kNaN, 2, 3}, std::vector<double>{4, kInf, 5, 6, -kInf});
  EXPECT_NEAR(finite.p_value, 0.0808555983700523, 1e-12);
}

TEST(MannWhitney, UCountsPairsOnLargeSamplesWithTies) {
  std::mt19937_64 rng(7);
  std::vector<double> a(300), b(450);
  for (double& v : a) v = static_cast<double>(rng() % 40);
  for (double& v : b) v = static_cast<double>(rng() % 45);
  double pairs = 0;
  for (double x : a) {
    for (double y : b) pairs += x > y ? 1.0 : (x == y ? 0.5 : 0.0);
  }
  EXPECT_DOUBLE_EQ(mann_whitney_u(a, b).u, pairs);
}

double uniform01(std::mt19937_64& rng) { return (static_cast<double>(rng() >> 11) + 0.5) * 0x1.0p-53; }

// Box-Muller on mt19937_64 (fully specified, unlike std::normal_distribution).
double standard_normal(std::mt19937_64& rng) {
  return std::sqrt(-2 * std::log(uniform01(rng))) * std::cos(2 * std::numbers::pi * uniform01(rng));
}

TEST(MannWhitney, PValuesAreCalibratedUnderTheNull) {
  // Two samples of 30 from one distribution: p < 0.05 in about 5% of 4,000 trials (binomial
  // sd 14; the continuity correction makes the test a little conservative).
  std::mt19937_64 rng(11);
  int rejected = 0;
  std::vector<double> a(30), b(30);
  for (int trial = 0; trial < 4000; ++trial) {
    for (double& v : a) v = standard_normal(rng);
    for (double& v : b) v = standard_normal(rng);
    if (mann_whitney_u(a, b).p_value < 0.05) ++rejected;
  }
  EXPECT_GT(rejected, 140);
  EXPECT_LT(rejected, 250);
}

// ---- the detector on synthetic series ---------------------------------------------------------

struct SeriesMaker {
  std::mt19937_64 rng;
  double cv = 0.03;      // per-sample noise
  double jitter = 0.01;  // run-to-run level noise
  int samples = 50;

  explicit SeriesMaker(std::uint64_t seed) : rng(seed) {}

  RunSamples run(double level_ms) {
    const double run_level = level_ms * (1 + jitter * standard_normal(rng));
    RunSamples r;
    for (int k = 0; k < samples; ++k) r.samples_ms.push_back(run_level * (1 + cv * standard_normal(rng)));
    return r;
  }
  void add(std::vector<RunSamples>& runs, double level_ms, int count) {
    for (int k = 0; k < count; ++k) runs.push_back(run(level_ms));
  }
};

TEST(ChangeDetector, FindsATenPercentStepAtItsFirstRun) {
  SeriesMaker make(1);
  std::vector<RunSamples> runs;
  make.add(runs, 10.0, 10);
  make.add(runs, 11.0, 6);
  const std::vector<Change> changes = find_changes(runs, DetectorOptions{});
  ASSERT_EQ(changes.size(), 1u);
  const Change& c = changes[0];
  EXPECT_EQ(c.first_index, 10u);
  EXPECT_EQ(c.direction, ChangeDirection::kRegression);
  EXPECT_NEAR(c.ratio, 1.10, 0.03);
  EXPECT_NEAR(c.before_median_ms, 10.0, 0.15);
  EXPECT_NEAR(c.after_median_ms, 11.0, 0.3);
  EXPECT_DOUBLE_EQ(c.ratio, c.after_median_ms / c.before_median_ms);
  EXPECT_LT(c.p_value, DetectorOptions{}.alpha);
  EXPECT_EQ(c.baseline_runs, 5);
  EXPECT_EQ(c.confirm_runs, 2);

  // As the store sees it, one run at a time: the first step run alone decides nothing; the
  // second confirms the change at the first.
  const std::span<const RunSamples> all(runs);
  EXPECT_FALSE(change_at_tail(all.first(11), DetectorOptions{}).has_value());
  const std::optional<Change> at_tail = change_at_tail(all.first(12), DetectorOptions{});
  ASSERT_TRUE(at_tail.has_value());
  EXPECT_EQ(at_tail->first_index, 10u);
  EXPECT_DOUBLE_EQ(at_tail->ratio, c.ratio);
}

// The history service's walk over a level read from the store (runs of point ids, medians and
// samples as stored JSON): the same change as find_changes, named by the points it starts at and
// follows; runs before `first` are runs the detector has judged before.
TEST(ChangeDetector, TheWalkOverStoredRunsFindsTheChangeAtItsPoints) {
  SeriesMaker make(1);
  std::vector<RunSamples> runs;
  make.add(runs, 10.0, 10);
  make.add(runs, 11.0, 6);
  std::vector<LevelRun> level;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto id = static_cast<std::int64_t>(100 + 2 * i);
    level.push_back({{id, id + 1}, {runs[i].median_ms}, {nlohmann::json(runs[i].samples_ms).dump()}});
  }
  std::vector<const LevelRun*> view;
  for (const LevelRun& r : level) view.push_back(&r);
  const auto stop = static_cast<std::ptrdiff_t>(view.size());
  const std::vector<FoundChange> found = walk_level(view, 0, stop, DetectorOptions{});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].first_bad, 120) << "run 10's first point";
  EXPECT_EQ(found[0].last_good, 119) << "run 9's last point";
  EXPECT_DOUBLE_EQ(found[0].change.ratio, find_changes(runs, DetectorOptions{})[0].ratio);
  // Runs before `first` were judged before: from run 11 on, run 11 confirms run 10's step.
  const std::vector<FoundChange> later = walk_level(view, 11, stop, DetectorOptions{});
  ASSERT_FALSE(later.empty());
  EXPECT_EQ(later[0].first_bad, 120);
  // A run whose samples were not read is never a suspect: nothing is found without them.
  for (LevelRun& r : level) r.samples_text.clear();
  EXPECT_TRUE(walk_level(view, 0, stop, DetectorOptions{}).empty());
}

TEST(ChangeDetector, FindsAnImprovement) {
  SeriesMaker make(2);
  std::vector<RunSamples> runs;
  make.add(runs, 20.0, 8);
  make.add(runs, 18.0, 4);
  const std::vector<Change> changes = find_changes(runs, DetectorOptions{});
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].first_index, 8u);
  EXPECT_EQ(changes[0].direction, ChangeDirection::kImprovement);
  EXPECT_NEAR(changes[0].ratio, 0.90, 0.03);
  EXPECT_NEAR(changes[0].before_median_ms, 20.0, 0.3);
  EXPECT_NEAR(changes[0].after_median_ms, 18.0, 0.5);
}

TEST(ChangeDetector, AStepFollowedByItsNewLevelIsOneChangeAndTheLevelRestarts) {
  SeriesMaker make(3);
  std::vector<RunSamples> runs;
  make.add(runs, 10.0, 8);
  make.add(runs, 11.0, 25);  // a real shift: the runs after it are compared with the new level
  make.add(runs, 9.9, 10);   // and back (a fix): an improvement against the new level
  const std::vector<Change> changes = find_changes(runs, DetectorOptions{});
  ASSERT_EQ(changes.size(), 2u);
  EXPECT_EQ(changes[0].first_index, 8u);
  EXPECT_EQ(changes[0].direction, ChangeDirection::kRegression);
  EXPECT_EQ(changes[1].first_index, 33u);
  EXPECT_EQ(changes[1].direction, ChangeDirection::kImprovement);
  EXPECT_NEAR(changes[1].before_median_ms, 11.0, 0.2);
  EXPECT_NEAR(changes[1].ratio, 0.90, 0.03);
}

TEST(ChangeDetector, NoiseWithoutAStepRaisesNothingInAThousandSeries) {
  // Each series: 20 runs of 50 samples, CV 3% per sample, 1% run-to-run level jitter, no step.
  // The false-alarm rate of the defaults: a run's ratio to its baseline varies by about 1.3%
  // (1% jitter, 0.5% for a 50-sample median, 0.6% for the median of 5 baseline medians), so
  // |ratio - 1| >= 5% is a 3.9-sigma event, ~1e-4 per run; a change needs two consecutive ones
  // in the same direction, ~1e-7 or less per decision (fewer still with the U test). Over the
  // 16,000 decisions here the expected count is ~0.002: any false alarm fails the test. The U
  // test alone (no effect gate) rejects far more often, since the jitter is a real difference
  // between runs: counted below to show what the gate is for.
  SeriesMaker make(20);
  DetectorOptions no_gate;
  no_gate.min_effect = 0;
  int changes = 0;
  int ungated_changes = 0;
  int decisions = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    std::vector<RunSamples> runs;
    make.add(runs, 10.0, 20);
    changes += static_cast<int>(find_changes(runs, DetectorOptions{}).size());
    ungated_changes += static_cast<int>(find_changes(runs, no_gate).size());
    decisions += 20 - 4;
  }
  std::printf("1000 noise series (%d decisions): %d changes; %d without the effect gate\n", decisions, changes,
              ungated_changes);
  EXPECT_EQ(changes, 0);
  EXPECT_GT(ungated_changes, 0);  // the gate, not luck, keeps the count at zero
}

TEST(ChangeDetector, ASingleOutlierRunIsNotAChange) {
  SeriesMaker make(4);
  std::vector<RunSamples> runs;
  make.add(runs, 10.0, 10);
  make.add(runs, 12.0, 1);  // +20%, clearly suspect on its own
  make.add(runs, 10.0, 9);
  EXPECT_TRUE(find_changes(runs, DetectorOptions{}).empty());
}

TEST(ChangeDetector, TwoSeparatedOutliersAreNotAChange) {
  SeriesMaker make(5);
  std::vector<RunSamples> runs;
  make.add(runs, 10.0, 8);
  make.add(runs, 12.0, 1);
  make.add(runs, 10.0, 1);
  make.add(runs, 12.0, 1);
  make.add(runs, 10.0, 8);
  EXPECT_TRUE(find_changes(runs, DetectorOptions{}).empty());
}

TEST(ChangeDetector, OutlierRunsInTheBaselineDoNotMoveItsLevel) {
  // Two separated +20% runs among the five baseline runs: the median of all five medians would
  // be the highest normal run (10.3), and two ordinary runs at 9.75 would then look 5.3% faster.
  // Left out, the level is 9.9 and 9.75 is within 1.5% of it.
  SeriesMaker make(13);
  make.jitter = 0;
  std::vector<RunSamples> runs;
  for (double level : {10.3, 9.9, 12.0, 9.9, 12.0, 9.75, 9.75}) make.add(runs, level, 1);
  EXPECT_FALSE(change_at_tail(runs, DetectorOptions{}).has_value());
  // With min_effect 0 nothing is left out: the level is 10.3, and the pooled outliers make the
  // U test call 9.75 faster.
  DetectorOptions no_gate;
  no_gate.min_effect = 0;
  const std::optional<Change> ungated = change_at_tail(runs, no_gate);
  ASSERT_TRUE(ungated.has_value());
  EXPECT_EQ(ungated->direction, ChangeDirection::kImprovement);
  EXPECT_NEAR(ungated->before_median_ms, 10.3, 0.1);
  EXPECT_EQ(ungated->baseline_runs, 5);
}

TEST(ChangeDetector, OutliersInOppositeDirectionsAreNotAChange) {
  SeriesMaker make(6);
  std::vector<RunSamples> runs;
  make.add(runs, 10.0, 8);
  make.add(runs, 12.0, 1);
  make.add(runs, 8.0, 1);
  make.add(runs, 10.0, 4);
  EXPECT_TRUE(find_changes(runs, DetectorOptions{}).empty());
}

TEST(ChangeDetector, AStepBelowTheMinimumEffectIsNotAChange) {
  // No run-to-run jitter: the U test is sure of the 3% (p far below alpha); only the effect
  // gate keeps it out, and a 1.5% gate lets it in.
  SeriesMaker make(7);
  make.jitter = 0;
  std::vector<RunSamples> runs;
  make.add(runs, 10.0, 8);
  make.add(runs, 10.3, 8);
  EXPECT_TRUE(find_changes(runs, DetectorOptions{}).empty());
  DetectorOptions lower_gate;
  lower_gate.min_effect = 0.015;
  const std::vector<Change> changes = find_changes(runs, lower_gate);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].first_index, 8u);
  EXPECT_NEAR(changes[0].ratio, 1.03, 0.01);
}

TEST(ChangeDetector, TooFewBaselineRunsDecideNothing) {
  SeriesMaker make(8);
  std::vector<RunSamples> runs;
  make.add(runs, 10.0, 2);
  make.add(runs, 11.0, 2);
  EXPECT_FALSE(change_at_tail(runs, DetectorOptions{}).has_value());  // 2 baseline runs < 3
  DetectorOptions two;
  two.min_baseline_runs = 2;
  const std::optional<Change> change = change_at_tail(runs, two);
  ASSERT_TRUE(change.has_value());
  EXPECT_EQ(change->first_index, 2u);
  EXPECT_EQ(change->baseline_runs, 2);
  EXPECT_FALSE(change_at_tail(std::span<const RunSamples>(), DetectorOptions{}).has_value());
}

TEST(ChangeDetector, BaselineIsTheMostRecentRunsOfTheLevel) {
  SeriesMaker make(9);
  std::vector<RunSamples> runs;
  make.add(runs, 10.0, 4);
  make.add(runs, 30.0, 3);  // far away, but older than the last 3 baseline runs
  make.add(runs, 10.0, 3);
  make.add(runs, 11.0, 2);
  DetectorOptions three;
  three.baseline_runs = 3;
  const std::optional<Change> change = change_at_tail(runs, three);
  ASSERT_TRUE(change.has_value());
  EXPECT_EQ(change->first_index, 10u);
  EXPECT_EQ(change->baseline_runs, 3);
  EXPECT_NEAR(change->before_median_ms, 10.0, 0.2);
}

TEST(ChangeDetector, ConfirmRunsIsRespected) {
  SeriesMaker make(10);
  std::vector<RunSamples> runs;
  make.add(runs, 10.0, 8);
  make.add(runs, 11.0, 2);  // two suspect runs, then back
  make.add(runs, 10.0, 6);
  DetectorOptions three;
  three.confirm_runs = 3;
  EXPECT_TRUE(find_changes(runs, three).empty());
  // With the default two, those two runs are a change (and the return an improvement).
  EXPECT_EQ(find_changes(runs, DetectorOptions{}).size(), 2u);

  std::vector<RunSamples> step;
  make.add(step, 10.0, 8);
  make.add(step, 11.0, 3);
  const std::vector<Change> changes = find_changes(step, three);
  ASSERT_EQ(changes.size(), 1u);
  EXPECT_EQ(changes[0].first_index, 8u);
  EXPECT_EQ(changes[0].confirm_runs, 3);
  const std::span<const RunSamples> all(step);
  EXPECT_FALSE(change_at_tail(all.first(10), three).has_value());
  EXPECT_TRUE(change_at_tail(all.first(11), three).has_value());
}

TEST(ChangeDetector, RunsWithoutSamplesAreNeverSuspect) {
  SeriesMaker make(11);
  std::vector<RunSamples> runs;
  make.add(runs, 10.0, 6);
  runs.push_back(RunSamples{{}, 11.0});
  runs.push_back(RunSamples{{}, 11.0});
  EXPECT_FALSE(change_at_tail(runs, DetectorOptions{}).has_value());
  // A baseline run without samples still counts with its stored median.
  std::vector<RunSamples> mixed;
  for (int k = 0; k < 5; ++k) mixed.push_back(RunSamples{{}, 10.0});
  make.add(mixed, 10.0, 1);
  make.add(mixed, 12.0, 2);
  const std::optional<Change> change = change_at_tail(mixed, DetectorOptions{});
  ASSERT_TRUE(change.has_value());
  EXPECT_DOUBLE_EQ(change->before_median_ms, 10.0);
}

TEST(ChangeDetector, OutOfRangeOptionsAreClamped) {
  SeriesMaker make(12);
  std::vector<RunSamples> runs;
  make.add(runs, 10.0, 6);
  make.add(runs, 11.0, 1);
  DetectorOptions odd;
  odd.confirm_runs = 0;        // as 1
  odd.min_baseline_runs = -3;  // as 1
  odd.baseline_runs = 0;       // as min_baseline_runs
  const std::optional<Change> change = change_at_tail(runs, odd);
  ASSERT_TRUE(change.has_value());
  EXPECT_EQ(change->confirm_runs, 1);
  EXPECT_EQ(change->first_index, 6u);
  EXPECT_EQ(change->baseline_runs, 1);
}

}  // namespace
}  // namespace benchfleet::rules
