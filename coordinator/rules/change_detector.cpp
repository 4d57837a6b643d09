#include "coordinator/rules/change_detector.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/stats.h"

namespace benchfleet::rules {
namespace {

std::vector<double> finite_sorted(std::span<const double> values) {
  std::vector<double> out;
  out.reserve(values.size());
  for (double v : values) {
    if (std::isfinite(v)) out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The options with every value in its meaningful range (see DetectorOptions).
DetectorOptions normalized(const DetectorOptions& options) {
  DetectorOptions o = options;
  o.min_effect = std::isfinite(o.min_effect) ? std::max(o.min_effect, 0.0) : 0.0;
  o.alpha = std::isfinite(o.alpha) ? std::clamp(o.alpha, 0.0, 1.0) : 0.0;
  o.confirm_runs = std::max(o.confirm_runs, 1);
  o.min_baseline_runs = std::max(o.min_baseline_runs, 1);
  o.baseline_runs = std::max(o.baseline_runs, o.min_baseline_runs);
  return o;
}

// The run's median: of its finite samples when it has any, else the stored one.
double run_median(const RunSamples& run) {
  std::vector<double> finite;
  finite.reserve(run.samples_ms.size());
  for (double v : run.samples_ms) {
    if (std::isfinite(v)) finite.push_back(v);
  }
  return finite.empty() ? run.median_ms : median(finite);
}

double median_of(std::span<const double> values) { return values.empty() ? std::nan("") : median(values); }

}  // namespace

MannWhitney mann_whitney_u(std::span<const double> a, std::span<const double> b) {
  const std::vector<double> x = finite_sorted(a);
  const std::vector<double> y = finite_sorted(b);
  MannWhitney result;
  if (x.empty() || y.empty()) return result;
  const auto nx = static_cast<double>(x.size());
  const auto ny = static_cast<double>(y.size());
  const double n = nx + ny;

  // Walk both sorted sides together; each group of equal values takes the average of the ranks
  // it spans. rank_sum_x: the ranks of x's values; ties: sum of t^3 - t over the groups.
  double rank_sum_x = 0;
  double ties = 0;
  double ranked = 0;  // values ranked so far
  std::size_t i = 0, j = 0;
  while (i < x.size() || j < y.size()) {
    const double v = j == y.size() || (i < x.size() && x[i] <= y[j]) ? x[i] : y[j];
    std::size_t cx = 0, cy = 0;
    for (; i < x.size() && x[i] == v; ++i) ++cx;
    for (; j < y.size() && y[j] == v; ++j) ++cy;
    const auto t = static_cast<double>(cx + cy);
    rank_sum_x += static_cast<double>(cx) * (ranked + (t + 1) / 2);
    ties += t * t * t - t;
    ranked += t;
  }
  result.u = rank_sum_x - nx * (nx + 1) / 2;

  const double mean_u = nx * ny / 2;
  const double var_u = nx * ny / 12 * ((n + 1) - ties / (n * (n - 1)));
  if (!(var_u > 0)) return result;  // every value the same: no evidence either way
  const double d = result.u - mean_u;
  const double corrected = std::max(std::abs(d) - 0.5, 0.0);  // continuity correction
  result.z = std::copysign(corrected / std::sqrt(var_u), d);
  result.p_value = std::min(1.0, std::erfc(std::abs(result.z) / std::sqrt(2.0)));
  return result;
}

std::optional<Change> change_at_tail(std::span<const RunSamples> level, const DetectorOptions& options) {
  const DetectorOptions o = normalized(options);
  const auto confirm = static_cast<std::size_t>(o.confirm_runs);
  if (level.size() < confirm + static_cast<std::size_t>(o.min_baseline_runs)) return std::nullopt;
  const std::size_t first_candidate = level.size() - confirm;
  const std::size_t baseline_count = std::min(static_cast<std::size_t>(o.baseline_runs), first_candidate);
  const std::span<const RunSamples> baseline = level.subspan(first_candidate - baseline_count, baseline_count);
  const std::span<const RunSamples> candidates = level.subspan(first_candidate);

  // The baseline's level: the median of its runs' medians, after leaving out the runs at least
  // min_effect away from the median of all of them (outlier runs that were never confirmed,
  // which would otherwise pull the level and the pooled samples their way).
  std::vector<double> window_medians;
  for (const RunSamples& run : baseline) window_medians.push_back(run_median(run));
  const double center = median_of(window_medians);
  if (!std::isfinite(center) || center <= 0) return std::nullopt;
  std::vector<double> pooled;
  std::vector<double> baseline_medians;
  for (std::size_t k = 0; k < baseline.size(); ++k) {
    if (o.min_effect > 0 && !(std::abs(window_medians[k] / center - 1) < o.min_effect)) continue;
    pooled.insert(pooled.end(), baseline[k].samples_ms.begin(), baseline[k].samples_ms.end());
    baseline_medians.push_back(window_medians[k]);
  }
  if (baseline_medians.size() < static_cast<std::size_t>(o.min_baseline_runs)) return std::nullopt;
  const int baseline_used = static_cast<int>(baseline_medians.size());
  const double before = median_of(baseline_medians);
  if (!std::isfinite(before) || before <= 0) return std::nullopt;

  std::optional<ChangeDirection> direction;
  double largest_p = 0;
  std::vector<double> candidate_medians;
  for (const RunSamples& run : candidates) {
    const double after = run_median(run);
    if (!std::isfinite(after)) return std::nullopt;
    const double ratio = after / before;
    const MannWhitney test = mann_whitney_u(run.samples_ms, pooled);
    // Suspect: significant, large enough, and the test and the medians agree on the direction.
    if (!(test.p_value < o.alpha) || std::abs(ratio - 1) < o.min_effect || (test.z > 0) != (ratio > 1)) {
      return std::nullopt;
    }
    const ChangeDirection d = ratio > 1 ? ChangeDirection::kRegression : ChangeDirection::kImprovement;
    if (direction && *direction != d) return std::nullopt;
    direction = d;
    largest_p = std::max(largest_p, test.p_value);
    candidate_medians.push_back(after);
  }

  Change change;
  change.first_index = first_candidate;
  change.direction = *direction;
  change.before_median_ms = before;
  change.after_median_ms = median_of(candidate_medians);
  change.ratio = change.after_median_ms / before;
  change.p_value = largest_p;
  change.baseline_runs = baseline_used;
  change.confirm_runs = static_cast<int>(confirm);
  return change;
}

std::vector<Change> find_changes(std::span<const RunSamples> runs, const DetectorOptions& options) {
  std::vector<Change> changes;
  std::size_t level_start = 0;
  for (std::size_t end = level_start + 1; end <= runs.size(); ++end) {
    std::optional<Change> change = change_at_tail(runs.subspan(level_start, end - level_start), options);
    if (!change) continue;
    change->first_index += level_start;
    level_start = change->first_index;
    changes.push_back(*change);
  }
  return changes;
}

std::string_view to_string(ChangeDirection direction) {
  return direction == ChangeDirection::kRegression ? "regression" : "improvement";
}

std::optional<ChangeDirection> parse_change_direction(std::string_view s) {
  if (s == "regression") return ChangeDirection::kRegression;
  if (s == "improvement") return ChangeDirection::kImprovement;
  return std::nullopt;
}

namespace {

double median_of(std::vector<double> values) {
  if (values.empty()) return 0;
  const auto mid = values.begin() + static_cast<std::ptrdiff_t>(values.size() / 2);
  std::nth_element(values.begin(), mid, values.end());
  if (values.size() % 2 == 1) return *mid;
  const double upper = *mid;
  return (*std::max_element(values.begin(), mid) + upper) / 2;
}

// A run's samples, parsed from its results' samples texts.
RunSamples parse_run(const LevelRun& run) {
  RunSamples out;
  out.median_ms = median_of(run.medians);
  for (const std::string& text : run.samples_text) {
    const auto samples = nlohmann::json::parse(text, nullptr, false);
    if (!samples.is_array()) continue;
    for (const auto& v : samples) {
      if (v.is_number()) out.samples_ms.push_back(v.get<double>());
    }
  }
  return out;
}

}  // namespace

std::vector<FoundChange> walk_level(std::span<const LevelRun* const> runs, std::ptrdiff_t first, std::ptrdiff_t stop,
                                    const DetectorOptions& options) {
  std::vector<FoundChange> found;
  const std::ptrdiff_t window = options.baseline_runs + options.confirm_runs;
  std::ptrdiff_t level_begin = 0;
  std::map<std::ptrdiff_t, RunSamples> parsed;  // the runs of the current window
  for (std::ptrdiff_t k = first; k < stop; ++k) {
    const std::ptrdiff_t begin = std::max(level_begin, k + 1 - window);
    parsed.erase(parsed.begin(), parsed.lower_bound(begin));
    std::vector<RunSamples> level;
    for (std::ptrdiff_t i = begin; i <= k; ++i) {
      auto it = parsed.find(i);
      if (it == parsed.end()) it = parsed.emplace(i, parse_run(*runs[static_cast<std::size_t>(i)])).first;
      level.push_back(it->second);
    }
    const auto change = change_at_tail(level, options);
    if (!change) continue;
    const std::ptrdiff_t at = begin + static_cast<std::ptrdiff_t>(change->first_index);
    FoundChange f{*change, runs[static_cast<std::size_t>(at)]->point_ids.front(), std::nullopt};
    if (at > 0) f.last_good = runs[static_cast<std::size_t>(at - 1)]->point_ids.back();
    found.push_back(f);
    level_begin = at;
  }
  return found;
}

}  // namespace benchfleet::rules
