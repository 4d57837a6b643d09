#include "common/accuracy.h"

#include <cmath>

namespace benchfleet {

double error_floor(Dtype dtype, bool on_cuda) {
  switch (dtype) {
    case Dtype::kFloat32:
      return 1e-4;
    case Dtype::kFloat16:
      return 1e-2;
    case Dtype::kBfloat16:
      return 4e-2;
    case Dtype::kAmp:
      return on_cuda ? 1e-2 : 4e-2;
  }
  return 1e-4;
}

AccuracyInfo judge_accuracy(Dtype dtype, bool on_cuda, bool eager_deterministic,
                            const std::vector<OutputComparison>& outputs) {
  AccuracyInfo info;
  if (!eager_deterministic) {
    info.verdict = AccuracyVerdict::kEagerNondeterministic;
    info.detail = "two eager runs on the same inputs gave different outputs";
    return info;
  }
  if (outputs.empty()) {
    info.verdict = AccuracyVerdict::kUnchecked;
    info.detail = "no outputs to compare";
    return info;
  }
  const bool reduced = dtype != Dtype::kFloat32;
  const double floor = error_floor(dtype, on_cuda);
  info.verdict = AccuracyVerdict::kPass;
  double worst_ratio = -1;
  std::string degenerate;  // the first output eager itself cannot approximate
  bool judged = false;
  for (const auto& out : outputs) {
    if (out.floating && !(out.eager_error <= kMaxEagerError)) {
      if (degenerate.empty()) {
        degenerate = out.name + ": eager in " + std::string(to_string(dtype)) + " is itself " +
                     std::to_string(out.eager_error).substr(0, 6) +
                     " off the float64 reference (values the dtype cannot represent): nothing to judge the compiled "
                     "output against";
      }
      continue;
    }
    judged = true;
    const double tolerance = out.floating ? kErrorMultiplier * out.eager_error + floor : 0;
    std::string failure;
    if (!out.floating) {
      if (!out.equal) failure = out.name + " differs from the reference (exact match required)";
    } else if (!out.compiled_finite || !std::isfinite(out.compiled_error)) {
      failure = out.name + " has NaN or Inf where the reference has none";
    } else if (out.compiled_error > tolerance) {
      failure = out.name + " is further from the float64 reference than " +
                std::to_string(kErrorMultiplier).substr(0, 3) + " x eager's error + " +
                std::to_string(floor).substr(0, 6);
    } else if (reduced && out.cosine && *out.cosine < kMinCosine) {
      failure = out.name + " has a cosine similarity to the reference below 0.99";
    }
    const double ratio = !failure.empty() ? INFINITY : (tolerance > 0 ? out.compiled_error / tolerance : 0);
    const bool first_failure = !failure.empty() && info.verdict == AccuracyVerdict::kPass;
    if (first_failure || (info.verdict == AccuracyVerdict::kPass && ratio > worst_ratio)) {
      worst_ratio = ratio;
      info.compiled_error = std::isfinite(out.compiled_error) ? out.compiled_error : 0;
      info.eager_error = out.eager_error;
      info.tolerance = tolerance;
      info.cosine = out.cosine;
      info.output = out.name;
      info.detail = failure;
      if (first_failure) info.verdict = AccuracyVerdict::kWrong;
    }
  }
  if (!judged) {
    info = AccuracyInfo{};
    info.verdict = AccuracyVerdict::kUnchecked;
    info.detail = degenerate;
  }
  return info;
}

}  // namespace benchfleet
