#include "common/stats.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <random>
#include <vector>

namespace benchfleet {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Interpolates between two neighbouring order statistics; written so the result stays within
// [lo, hi] (no overflow of lo + hi).
double lerp_between(double lo, double hi, double frac) { return lo + frac * (hi - lo); }

// Median of `buf` in O(n) by partial partitioning; reorders buf. REQUIRES: !buf.empty().
double median_in_place(std::vector<double>& buf) {
  const std::size_t n = buf.size();
  const std::size_t upper = n / 2;
  auto upper_it = buf.begin() + static_cast<std::ptrdiff_t>(upper);
  std::nth_element(buf.begin(), upper_it, buf.end());
  if (n % 2 == 1) return *upper_it;
  // After nth_element everything before upper_it is <= it; the lower middle is their maximum.
  const double lower = *std::max_element(buf.begin(), upper_it);
  return lerp_between(lower, *upper_it, 0.5);
}

}  // namespace

double mean(std::span<const double> values) {
  if (values.empty()) return kNaN;
  double sum = 0;
  for (double v : values) sum += v;
  return sum / static_cast<double>(values.size());
}

double sample_stddev(std::span<const double> values) {
  if (values.size() < 2) return 0;
  const double m = mean(values);
  double sq = 0;
  for (double v : values) sq += (v - m) * (v - m);
  return std::sqrt(sq / static_cast<double>(values.size() - 1));
}

double percentile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return kNaN;
  q = std::clamp(q, 0.0, 1.0);
  const double h = static_cast<double>(sorted.size() - 1) * q;
  const auto lo = static_cast<std::size_t>(std::floor(h));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  return lerp_between(sorted[lo], sorted[hi], h - static_cast<double>(lo));
}

double median(std::span<const double> values) {
  if (values.empty()) return kNaN;
  std::vector<double> buf(values.begin(), values.end());
  return median_in_place(buf);
}

Interval bootstrap_median_ci(std::span<const double> samples, double confidence, int resamples, std::uint64_t seed) {
  if (samples.empty()) return {kNaN, kNaN};
  const double sample_median = median(samples);
  if (samples.size() == 1 || resamples <= 0) return {sample_median, sample_median};
  confidence = std::clamp(confidence, 0.0, 1.0);

  const std::size_t n = samples.size();
  std::mt19937_64 rng(seed);
  std::vector<double> buf(n);
  std::vector<double> medians;
  medians.reserve(static_cast<std::size_t>(resamples));
  for (int r = 0; r < resamples; ++r) {
    for (std::size_t i = 0; i < n; ++i) buf[i] = samples[rng() % n];
    medians.push_back(median_in_place(buf));
  }
  std::sort(medians.begin(), medians.end());
  const double alpha = 1.0 - confidence;
  Interval ci{percentile_sorted(medians, alpha / 2), percentile_sorted(medians, 1.0 - alpha / 2)};
  // A skewed bootstrap distribution can put both quantiles on one side of the sample median;
  // callers rely on the interval containing it (stopping rule, report invariants).
  ci.low = std::min(ci.low, sample_median);
  ci.high = std::max(ci.high, sample_median);
  return ci;
}

Statistics compute_statistics(std::span<const double> samples_ms, std::uint64_t seed, int resamples) {
  Statistics s;
  if (samples_ms.empty()) return s;
  std::vector<double> sorted(samples_ms.begin(), samples_ms.end());
  std::sort(sorted.begin(), sorted.end());

  s.iterations = static_cast<int>(sorted.size());
  s.mean_ms = mean(sorted);
  s.median_ms = percentile_sorted(sorted, 0.5);
  s.p90_ms = percentile_sorted(sorted, 0.90);
  s.p99_ms = percentile_sorted(sorted, 0.99);
  s.min_ms = sorted.front();
  s.max_ms = sorted.back();
  s.stddev_ms = sample_stddev(sorted);
  s.cv = s.mean_ms == 0 ? 0 : s.stddev_ms / s.mean_ms;
  // Resampling the sorted copy makes every field independent of the samples' order.
  const Interval ci = bootstrap_median_ci(sorted, 0.95, resamples, seed);
  s.ci_low_ms = std::clamp(ci.low, s.min_ms, s.median_ms);
  s.ci_high_ms = std::clamp(ci.high, s.median_ms, s.max_ms);
  return s;
}

double student_t_975(int df) {
  // Two-sided 95% points of Student's t for 1..30 degrees of freedom.
  static constexpr double kTable[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                      2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                      2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df < 1) return std::numeric_limits<double>::quiet_NaN();
  if (df <= 30) return kTable[df - 1];
  // Cornish-Fisher expansion of t in powers of 1/df around the normal quantile (error < 1e-4 here).
  const double z = 1.959963984540054;
  const double z3 = z * z * z;
  const double z5 = z3 * z * z;
  const double v = df;
  return z + (z3 + z) / (4 * v) + (5 * z5 + 16 * z3 + 3 * z) / (96 * v * v);
}

Interval mean_ci_95(double mean, double stddev, int n) {
  if (n < 1) return {std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
  if (n == 1) return {mean, mean};
  const double half = student_t_975(n - 1) * stddev / std::sqrt(static_cast<double>(n));
  return {mean - half, mean + half};
}

double geomean(std::span<const double> positive_values) {
  if (positive_values.empty()) return kNaN;
  double log_sum = 0;
  for (double v : positive_values) {
    if (!(v > 0) || !std::isfinite(v)) return kNaN;
    log_sum += std::log(v);
  }
  return std::exp(log_sum / static_cast<double>(positive_values.size()));
}

}  // namespace benchfleet
