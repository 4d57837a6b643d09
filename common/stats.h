// Latency statistics for one benchmark attempt (docs/design.md §11). Pure functions, no I/O.
// Inputs are expected to be finite; NaN or infinite samples give unspecified (but defined,
// non-crashing) results.
#pragma once

#include <cstdint>
#include <span>

#include "common/types.h"

namespace benchfleet {

// Arithmetic mean. NaN for empty input.
double mean(std::span<const double> values);

// Sample standard deviation (n - 1 denominator). 0 for fewer than two values.
double sample_stddev(std::span<const double> values);

// The q-quantile of `sorted` with linear interpolation between closest ranks
// (numpy.percentile's default "linear" method): h = (n - 1) * q,
// result = x[floor(h)] + (h - floor(h)) * (x[floor(h) + 1] - x[floor(h)]).
// REQUIRES: `sorted` is in ascending order; q in [0, 1] (clamped otherwise).
// NaN for empty input.
double percentile_sorted(std::span<const double> sorted, double q);

// Median (the 0.5 quantile as above: mean of the two middle values for even n).
// Input need not be sorted. NaN for empty input.
double median(std::span<const double> values);

struct Interval {
  double low = 0;
  double high = 0;

  bool operator==(const Interval&) const = default;
};

// Percentile-bootstrap confidence interval of the median: `resamples` resamples with
// replacement, each of size n, and the (1 - confidence) / 2 and (1 + confidence) / 2
// quantiles of their medians. The interval always contains the sample median (it is widened
// to it if the bootstrap quantiles miss it) and lies within [min, max] of the samples.
// Deterministic for a given seed on every platform: std::mt19937_64 is fully specified and
// indices are drawn as rng() % n (the modulo bias is below 2^-40 for any realistic n).
// confidence is clamped to [0, 1]. Degenerate cases: {x, x} for n == 1 or resamples <= 0
// (x = the median); {NaN, NaN} for empty input.
Interval bootstrap_median_ci(std::span<const double> samples, double confidence = 0.95, int resamples = 2000,
                             std::uint64_t seed = 42);

// Two-sided 95% quantile of Student's t with `df` degrees of freedom (12.706 at 1, 1.960 in the
// limit): exact to three decimals from a table up to 30, a Cornish-Fisher expansion beyond.
// REQUIRES: df >= 1 (returns NaN otherwise).
double student_t_975(int df);

// 95% confidence interval of the mean from what Statistics keeps: mean +/- t(n - 1) x stddev /
// sqrt(n), stddev being the sample standard deviation. {mean, mean} for n == 1; {NaN, NaN} for
// n < 1. The reports show it beside the mean, as the bootstrap CI of the median is shown beside
// the median, so that a view's number, its interval and its verdicts come from one statistic.
Interval mean_ci_95(double mean, double stddev, int n);

// Fills every field of Statistics from per-iteration latencies in milliseconds:
// cv = stddev / mean (0 when the mean is 0), CI is the 95% bootstrap CI of the median,
// iterations = n. The result satisfies min <= ci_low <= median <= ci_high <= max.
// REQUIRES: non-empty samples; for empty input returns a zero Statistics (iterations == 0).
Statistics compute_statistics(std::span<const double> samples_ms, std::uint64_t seed = 42, int resamples = 2000);

// Geometric mean, exp(mean(log x)), used to summarise speedups across models.
// REQUIRES: every value > 0 and finite; otherwise (or for empty input) returns NaN so a bad
// input cannot pass for a real speedup.
double geomean(std::span<const double> positive_values);

}  // namespace benchfleet
