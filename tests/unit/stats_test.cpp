// Expected values computed independently with CPython's `statistics` module
// (quantiles(method="inclusive") is numpy's "linear" percentile).
#include "common/stats.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

namespace benchfleet {
namespace {

const std::vector<double> kOneToTen = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
const std::vector<double> kUnsorted = {3.5, 1.25, 7.0, 2.0, 9.75, 4.5, 6.0};

// Normal-ish latencies around 10 ms, reproducible.
std::vector<double> synthetic_latencies(std::size_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> out(n);
  for (auto& x : out) {
    double sum = 0;  // Irwin-Hall: sum of 12 uniforms - 6 is close to N(0, 1)
    for (int i = 0; i < 12; ++i) sum += static_cast<double>(rng() >> 11) * 0x1.0p-53;
    x = 10.0 + 0.5 * (sum - 6.0);
  }
  return out;
}

TEST(Stats, MeanAndSampleStddev) {
  const std::vector<double> v = {2, 4, 4, 4, 5, 5, 7, 9};
  EXPECT_DOUBLE_EQ(mean(v), 5.0);
  EXPECT_NEAR(sample_stddev(v), 2.138089935299395, 1e-12);
  EXPECT_NEAR(sample_stddev(kUnsorted), 2.9715916850834576, 1e-12);
  EXPECT_EQ(sample_stddev(std::vector<double>{3.0}), 0.0);
  EXPECT_EQ(sample_stddev(std::vector<double>{}), 0.0);
  EXPECT_TRUE(std::isnan(mean(std::vector<double>{})));
}

TEST(Stats, PercentileInterpolatesLinearlyLikeNumpy) {
  EXPECT_NEAR(percentile_sorted(kOneToTen, 0.9), 9.1, 1e-12);
  EXPECT_NEAR(percentile_sorted(kOneToTen, 0.99), 9.91, 1e-12);
  EXPECT_DOUBLE_EQ(percentile_sorted(kOneToTen, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(percentile_sorted(kOneToTen, 1.0), 10.0);
  EXPECT_DOUBLE_EQ(percentile_sorted(kOneToTen, 0.5), 5.5);

  std::vector<double> sorted = kUnsorted;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_NEAR(percentile_sorted(sorted, 0.90), 8.1, 1e-12);
  EXPECT_NEAR(percentile_sorted(sorted, 0.99), 9.585, 1e-12);
}

TEST(Stats, PercentileClampsQAndHandlesEdges) {
  EXPECT_DOUBLE_EQ(percentile_sorted(kOneToTen, -0.5), 1.0);
  EXPECT_DOUBLE_EQ(percentile_sorted(kOneToTen, 1.5), 10.0);
  EXPECT_DOUBLE_EQ(percentile_sorted(std::vector<double>{4.0}, 0.99), 4.0);
  EXPECT_TRUE(std::isnan(percentile_sorted(std::vector<double>{}, 0.5)));
}

TEST(Stats, MedianOfOddAndEvenUnsortedInput) {
  EXPECT_DOUBLE_EQ(median(kUnsorted), 4.5);
  EXPECT_DOUBLE_EQ(median(std::span<const double>(kUnsorted).first(6)), 4.0);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{10, 1}), 5.5);
  EXPECT_DOUBLE_EQ(median(std::vector<double>{7}), 7.0);
  EXPECT_TRUE(std::isnan(median(std::vector<double>{})));
}

TEST(Stats, StudentTQuantilesFromTheTableAndBeyondIt) {
  EXPECT_DOUBLE_EQ(student_t_975(1), 12.706);
  EXPECT_DOUBLE_EQ(student_t_975(24), 2.064);
  EXPECT_DOUBLE_EQ(student_t_975(30), 2.042);
  EXPECT_NEAR(student_t_975(31), 2.0395, 2e-4);  // R: qt(0.975, 31)
  EXPECT_NEAR(student_t_975(99), 1.9842, 2e-4);
  EXPECT_NEAR(student_t_975(1'000'000), 1.95997, 1e-4);
  EXPECT_TRUE(std::isnan(student_t_975(0)));
  for (int df = 1; df < 200; ++df) EXPECT_GT(student_t_975(df), student_t_975(df + 1)) << df;
}

TEST(Stats, MeanCiIsTheTIntervalOfTheMean) {
  const Interval ci = mean_ci_95(10.0, 2.0, 25);
  EXPECT_NEAR(ci.low, 10.0 - 2.064 * 0.4, 1e-12);
  EXPECT_NEAR(ci.high, 10.0 + 2.064 * 0.4, 1e-12);
  EXPECT_EQ(mean_ci_95(10.0, 2.0, 1), (Interval{10.0, 10.0}));
  EXPECT_TRUE(std::isnan(mean_ci_95(10.0, 2.0, 0).low));
}

TEST(Stats, Geomean) {
  EXPECT_NEAR(geomean(std::vector<double>{1, 2, 4}), 2.0, 1e-12);
  EXPECT_NEAR(geomean(std::vector<double>{1.5, 2.5, 10}), 3.347164750410848, 1e-12);
  EXPECT_TRUE(std::isnan(geomean(std::vector<double>{1, 0, 4})));
  EXPECT_TRUE(std::isnan(geomean(std::vector<double>{1, -2})));
  EXPECT_TRUE(std::isnan(geomean(std::vector<double>{})));
}

TEST(Stats, BootstrapIsDeterministicPerSeed) {
  const auto samples = synthetic_latencies(50, 7);
  const Interval a = bootstrap_median_ci(samples, 0.95, 2000, 1);
  const Interval b = bootstrap_median_ci(samples, 0.95, 2000, 1);
  const Interval c = bootstrap_median_ci(samples, 0.95, 2000, 2);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(Stats, BootstrapContainsMedianAndNarrowsWithMoreSamples) {
  const auto small = synthetic_latencies(20, 3);
  const auto large = synthetic_latencies(1000, 3);
  const Interval ci_small = bootstrap_median_ci(small);
  const Interval ci_large = bootstrap_median_ci(large);
  for (const auto* s : {&small, &large}) {
    const Interval ci = bootstrap_median_ci(*s);
    const double m = median(*s);
    EXPECT_LE(ci.low, m);
    EXPECT_GE(ci.high, m);
    EXPECT_LT(ci.low, ci.high);
  }
  EXPECT_LT(ci_large.high - ci_large.low, ci_small.high - ci_small.low);
}

TEST(Stats, BootstrapDegenerateCases) {
  EXPECT_EQ(bootstrap_median_ci(std::vector<double>(30, 2.5)), (Interval{2.5, 2.5}));
  EXPECT_EQ(bootstrap_median_ci(std::vector<double>{4.0}), (Interval{4.0, 4.0}));
  EXPECT_EQ(bootstrap_median_ci(kUnsorted, 0.95, 0), (Interval{4.5, 4.5}));
  const Interval empty = bootstrap_median_ci(std::vector<double>{});
  EXPECT_TRUE(std::isnan(empty.low));
  EXPECT_TRUE(std::isnan(empty.high));
}

TEST(Stats, BootstrapWidensWithConfidence) {
  const auto samples = synthetic_latencies(100, 11);
  const Interval narrow = bootstrap_median_ci(samples, 0.5);
  const Interval wide = bootstrap_median_ci(samples, 0.99);
  EXPECT_LE(wide.low, narrow.low);
  EXPECT_GE(wide.high, narrow.high);
}

void expect_invariants(const Statistics& s) {
  EXPECT_LE(s.min_ms, s.ci_low_ms);
  EXPECT_LE(s.ci_low_ms, s.median_ms);
  EXPECT_LE(s.median_ms, s.ci_high_ms);
  EXPECT_LE(s.ci_high_ms, s.max_ms);
  EXPECT_LE(s.median_ms, s.p90_ms);
  EXPECT_LE(s.p90_ms, s.p99_ms);
  EXPECT_LE(s.p99_ms, s.max_ms);
}

TEST(Stats, ComputeStatisticsFillsEveryField) {
  const Statistics s = compute_statistics(kUnsorted);
  EXPECT_EQ(s.iterations, 7);
  EXPECT_DOUBLE_EQ(s.min_ms, 1.25);
  EXPECT_DOUBLE_EQ(s.max_ms, 9.75);
  EXPECT_NEAR(s.mean_ms, 4.857142857142857, 1e-12);
  EXPECT_DOUBLE_EQ(s.median_ms, 4.5);
  EXPECT_NEAR(s.p90_ms, 8.1, 1e-12);
  EXPECT_NEAR(s.p99_ms, 9.585, 1e-12);
  EXPECT_NEAR(s.stddev_ms, 2.9715916850834576, 1e-12);
  EXPECT_NEAR(s.cv, 2.9715916850834576 / 4.857142857142857, 1e-12);
  EXPECT_LT(s.ci_low_ms, s.ci_high_ms);
  expect_invariants(s);
}

TEST(Stats, ComputeStatisticsInvariantsHoldAcrossSeedsAndSizes) {
  for (std::size_t n : {2u, 3u, 10u, 300u}) {
    for (std::uint64_t seed : {1u, 42u, 1234u}) {
      SCOPED_TRACE(testing::Message() << "n=" << n << " seed=" << seed);
      const Statistics s = compute_statistics(synthetic_latencies(n, seed), seed);
      EXPECT_EQ(s.iterations, static_cast<int>(n));
      expect_invariants(s);
    }
  }
}

TEST(Stats, ComputeStatisticsIgnoresSampleOrder) {
  std::vector<double> reversed(kUnsorted.rbegin(), kUnsorted.rend());
  EXPECT_EQ(compute_statistics(kUnsorted), compute_statistics(reversed));
}

TEST(Stats, ComputeStatisticsEdgeCases) {
  EXPECT_EQ(compute_statistics(std::vector<double>{}), Statistics{});

  const Statistics one = compute_statistics(std::vector<double>{3.0});
  EXPECT_EQ(one.iterations, 1);
  EXPECT_EQ(one.stddev_ms, 0.0);
  EXPECT_EQ(one.ci_low_ms, 3.0);
  EXPECT_EQ(one.ci_high_ms, 3.0);

  const Statistics zeros = compute_statistics(std::vector<double>(5, 0.0));
  EXPECT_EQ(zeros.cv, 0.0);
  EXPECT_EQ(zeros.ci_low_ms, 0.0);
  EXPECT_EQ(zeros.ci_high_ms, 0.0);
}

}  // namespace
}  // namespace benchfleet
