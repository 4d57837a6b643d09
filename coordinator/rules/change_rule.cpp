// The change rule: within-run CIs, then run-to-run noise from repetitions or a stated floor.
#include "coordinator/rules/change_rule.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>

#include <boost/math/distributions/students_t.hpp>

#include "common/number_format.h"
#include "common/shared_rules.h"

namespace benchfleet::rules {
namespace {

std::string percent(double fraction) { return format_fixed(fraction * 100, 0) + "%"; }

std::string ratio_text(double r) { return format_fixed(r, 2); }

struct LogSummary {
  double mean = 0;
  double variance = 0;  // sample variance (n - 1)
  std::size_t n = 0;
};

LogSummary log_summary(const std::vector<double>& values) {
  LogSummary s;
  s.n = values.size();
  for (double v : values) s.mean += std::log(v);
  s.mean /= static_cast<double>(s.n);
  for (double v : values) s.variance += (std::log(v) - s.mean) * (std::log(v) - s.mean);
  s.variance /= static_cast<double>(s.n - 1);
  return s;
}

// Two-sided p of Welch's t for a difference `d` with standard error `se` on `df` degrees of freedom.
double welch_p(double d, double se, double df) {
  if (!(se > 0)) return d == 0 ? 1 : 0;
  const boost::math::students_t t(std::max(df, 1.0));
  return std::min(1.0, 2 * boost::math::cdf(boost::math::complement(t, std::abs(d) / se)));
}

std::string p_text(double p) { return p < 0.001 ? "p < 0.001" : "p = " + format_fixed(p, 3); }

bool all_positive(const std::vector<double>& values) {
  return std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v) && v > 0; });
}

}  // namespace

double noise_floor(std::string_view device_kind) {
  // Read once: every speedup cell of every report asks.
  static const double cpu = shared_rule("run_to_run_noise.json").at("floor").at("cpu").get<double>();
  static const double cuda = shared_rule("run_to_run_noise.json").at("floor").at("cuda").get<double>();
  return device_kind == "cpu" ? cpu : cuda;
}

std::string device_kind_of(std::string_view gpu_class) {
  std::string lower(gpu_class);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower == "cpu" ? "cpu" : "cuda";
}

ChangeVerdict judge_change(const ChangeSide& a, const ChangeSide& b, double floor) {
  ChangeVerdict v;
  v.floor = floor;
  if (!(a.value_ms > 0) || !(b.value_ms > 0) || !a.ci || !b.ci) {
    v.verdict = "unknown";
    v.noise = "floor";
    v.why = "a side without a value or a confidence interval";
    return v;
  }
  v.ratio = a.value_ms / b.value_ms;
  const std::string direction = v.ratio > 1 ? "faster" : "slower";
  const bool repeated = a.per_process_ms.size() >= 2 && b.per_process_ms.size() >= 2 &&
                        all_positive(a.per_process_ms) && all_positive(b.per_process_ms);
  bool beyond_noise = false;
  if (repeated) {
    // Welch's t interval of mean(log A_i) - mean(log B_j): each repetition a fresh process, so
    // their spread is the run-to-run noise itself.
    v.noise = "repetitions";
    const LogSummary la = log_summary(a.per_process_ms), lb = log_summary(b.per_process_ms);
    const double va = la.variance / static_cast<double>(la.n), vb = lb.variance / static_cast<double>(lb.n);
    const double se = std::sqrt(va + vb);
    double df = 1;
    if (se > 0) {
      const double denom = va * va / static_cast<double>(la.n - 1) + vb * vb / static_cast<double>(lb.n - 1);
      df = denom > 0 ? (va + vb) * (va + vb) / denom : static_cast<double>(la.n + lb.n - 2);
    }
    const double half = student_t_975(std::max(1, static_cast<int>(std::floor(df)))) * se;
    const double d = la.mean - lb.mean;
    v.ratio_ci = Interval{std::exp(d - half), std::exp(d + half)};
    v.p = welch_p(d, se, df);
    beyond_noise = v.ratio_ci->low > 1 || v.ratio_ci->high < 1;
    v.why = "A/B " + ratio_text(v.ratio) + ", 95% interval over " + std::to_string(la.n) + " and " +
            std::to_string(lb.n) + " repetitions " + ratio_text(v.ratio_ci->low) + "-" + ratio_text(v.ratio_ci->high) +
            " (" + p_text(*v.p) + ")" +
            (beyond_noise ? ": beyond the run-to-run noise" : ": within the run-to-run noise");
  } else {
    v.noise = "floor";
    const double change = std::max(v.ratio, 1 / v.ratio) - 1;
    beyond_noise = change > floor;
    v.why = std::string(beyond_noise ? "beyond" : "within") + " the run-to-run noise floor (" + percent(floor) +
            ") of a cell without repetitions on both sides";
  }
  // With repetitions their spread already holds each process's own sampling noise (and the
  // report's CI of such a cell is widened across them): their interval alone decides.
  const bool cis_apart = repeated || a.ci->high < b.ci->low || b.ci->high < a.ci->low;
  if (!cis_apart) v.why = "the within-run confidence intervals overlap";
  v.verdict = cis_apart && beyond_noise ? direction : "same";
  return v;
}

void control_false_discoveries(const std::vector<ChangeVerdict*>& verdicts, double rate) {
  std::vector<ChangeVerdict*> tested;
  for (ChangeVerdict* v : verdicts) {
    if (v && v->p) tested.push_back(v);
  }
  if (tested.size() < 2) return;  // one test: its own 95% interval is the whole rule
  std::stable_sort(tested.begin(), tested.end(),
                   [](const ChangeVerdict* x, const ChangeVerdict* y) { return *x->p < *y->p; });
  const double m = static_cast<double>(tested.size());
  // Step-up: the largest k with p_(k) <= k/m * rate; the k smallest are discoveries.
  std::size_t discoveries = 0;
  for (std::size_t k = tested.size(); k >= 1; --k) {
    if (*tested[k - 1]->p <= static_cast<double>(k) / m * rate) {
      discoveries = k;
      break;
    }
  }
  const double threshold = static_cast<double>(std::max<std::size_t>(discoveries, 1)) / m * rate;
  for (std::size_t i = discoveries; i < tested.size(); ++i) {
    ChangeVerdict& v = *tested[i];
    if (v.verdict != "faster" && v.verdict != "slower") continue;
    v.verdict = "same";
    const std::string beyond = ": beyond the run-to-run noise";
    if (const auto at = v.why.rfind(beyond); at != std::string::npos) v.why.erase(at);
    v.why += ": within the run-to-run noise, as one of " + std::to_string(tested.size()) +
             " cells judged by repetitions (a " + percent(rate) +
             " false-discovery rate asks p <= " + format_fixed(threshold, 4) + " here)";
  }
}

}  // namespace benchfleet::rules
