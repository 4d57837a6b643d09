#include "common/result_checks.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/accuracy.h"
#include "common/display_text.h"
#include "common/json_reader.h"
#include "common/shared_rules.h"
#include "common/stats.h"

namespace benchfleet {
namespace {

bool close_enough(double posted, double computed) {
  return std::fabs(posted - computed) <= 1e-9 * std::max(std::fabs(posted), std::fabs(computed)) + 1e-12;
}

std::string number(double v) {
  nlohmann::json j = v;
  return j.dump();
}

bool has_measurements(ResultStatus s) { return s == ResultStatus::kOk || s == ResultStatus::kInvalid; }

std::optional<Error> check_duration(const std::string& path, const std::optional<double>& v, double max) {
  if (v && !(std::isfinite(*v) && *v >= 0 && *v <= max)) {
    return Error::invalid(path, "must be between 0 and " + number(max) + ", got " + number(*v));
  }
  return std::nullopt;
}

std::optional<Error> check_stats(const Statistics& st, const std::vector<double>& samples, const std::string& path) {
  const Statistics want = compute_statistics(samples, /*seed=*/42, /*resamples=*/0);
  if (st.iterations != want.iterations) {
    return Error::invalid(join_path(path, "iterations"),
                          "must equal the number of samples_ms (" + std::to_string(want.iterations) + ")");
  }
  const struct {
    const char* name;
    double posted, computed;
  } fields[] = {{"mean_ms", st.mean_ms, want.mean_ms},       {"median_ms", st.median_ms, want.median_ms},
                {"p90_ms", st.p90_ms, want.p90_ms},          {"p99_ms", st.p99_ms, want.p99_ms},
                {"min_ms", st.min_ms, want.min_ms},          {"max_ms", st.max_ms, want.max_ms},
                {"stddev_ms", st.stddev_ms, want.stddev_ms}, {"cv", st.cv, want.cv}};
  for (const auto& f : fields) {
    if (!close_enough(f.posted, f.computed)) {
      return Error::invalid(join_path(path, f.name), "is " + number(f.posted) + " but samples_ms give " +
                                                         number(f.computed) + " (statistics must match the samples)");
    }
  }
  if (!(st.ci_low_ms >= st.min_ms && st.ci_low_ms <= st.median_ms)) {
    return Error::invalid(join_path(path, "ci_low_ms"), "must lie between min_ms and median_ms");
  }
  if (!(st.ci_high_ms >= st.median_ms && st.ci_high_ms <= st.max_ms)) {
    return Error::invalid(join_path(path, "ci_high_ms"), "must lie between median_ms and max_ms");
  }
  return std::nullopt;
}

// Message limits: those of the decoder (result_codecs.cpp).
constexpr std::size_t kMaxErrorBytes = 16384;
constexpr std::size_t kMaxFlatTextBytes = 4096;

std::optional<Error> check_flat_text(const nlohmann::json& obj, const std::string& path) {
  for (const auto& [k, v] : obj.items()) {
    if (auto why = display_text_problem(k, kMaxFlatTextBytes)) return Error::invalid(path, "key " + *why);
    if (!v.is_string()) continue;
    if (auto why = display_text_problem(v.get_ref<const std::string&>(), kMaxFlatTextBytes)) {
      return Error::invalid(join_path(path, k), *why);
    }
  }
  return std::nullopt;
}

void escape_flat_text(nlohmann::json& obj) {
  nlohmann::json out = nlohmann::json::object();
  for (auto& [k, v] : obj.items()) {
    out[escape_display_text(k)] =
        v.is_string() ? nlohmann::json(escape_display_text(v.get_ref<const std::string&>())) : v;
  }
  obj = std::move(out);
}

// A judged verdict (pass, wrong) must be what the rule (common/accuracy.h) makes of its own
// figures: an output eager itself misses by more than kMaxEagerError is never judged; pass keeps
// the compiled error within the tolerance (and the cosine bound where one is reported); wrong
// shows one of the rule's failures: an error above the tolerance, a cosine below kMinCosine, an
// exact-match output (tolerance 0), or NaN/Inf in the compiled output (reported as error 0 with
// no cosine, and said in the detail, as the rule words it).
std::optional<Error> check_verdict_agrees(const AccuracyInfo& a, const std::string& field) {
  if (a.verdict != AccuracyVerdict::kPass && a.verdict != AccuracyVerdict::kWrong) return std::nullopt;
  const std::string verdict(to_string(a.verdict));
  if (!(a.eager_error <= kMaxEagerError)) {
    return Error::invalid(field, "is " + verdict + " but eager_error " + number(a.eager_error) + " is above " +
                                     number(kMaxEagerError) + ": the rule does not judge such an output (unchecked)");
  }
  const bool low_cosine = a.cosine && *a.cosine < kMinCosine;
  if (a.verdict == AccuracyVerdict::kPass) {
    if (a.compiled_error > a.tolerance) {
      return Error::invalid(field, "is pass but compiled_error " + number(a.compiled_error) +
                                       " is above its tolerance " + number(a.tolerance));
    }
    if (low_cosine) return Error::invalid(field, "is pass but cosine " + number(*a.cosine) + " is below 0.99");
    return std::nullopt;
  }
  const bool non_finite = a.compiled_error == 0 && !a.cosine && a.detail.find("NaN or Inf") != std::string::npos;
  if (a.compiled_error > a.tolerance || low_cosine || a.tolerance == 0 || non_finite) return std::nullopt;
  return Error::invalid(field, "is wrong but compiled_error " + number(a.compiled_error) + " is within its tolerance " +
                                   number(a.tolerance) + ", with no other failure of the rule");
}

}  // namespace

std::optional<Error> check_posted_result(const JobResult& r, const std::string& path) {
  const auto at = [&](std::string_view key) { return join_path(path, key); };
  if (r.status == ResultStatus::kOomImplied) {
    return Error::invalid(at("status"), "oom_implied is the coordinator's verdict; an agent cannot post it");
  }
  if (r.error) {
    if (auto why = display_text_problem(*r.error, kMaxErrorBytes, TextLines::kMany))
      return Error::invalid(at("error"), *why);
  }
  if (auto err = check_flat_text(r.environment, at("environment"))) return err;
  if (auto err = check_flat_text(r.telemetry, at("telemetry"))) return err;
  if (!has_measurements(r.status)) {
    const std::string why = std::string("must be absent when status is ") + std::string(to_string(r.status));
    if (r.stats) return Error::invalid(at("stats"), why);
    if (!r.samples_ms.empty()) return Error::invalid(at("samples_ms"), why);
    if (r.stop_reason) return Error::invalid(at("stop_reason"), why);
  }
  if (r.status == ResultStatus::kOk && (!r.stats || r.samples_ms.empty())) {
    return Error::invalid(at(r.stats ? "samples_ms" : "stats"), "is required when status is ok");
  }
  // Every stopping rule records why it stopped, and the count checks judge the samples by it:
  // a result without one would pass them all.
  if (r.status == ResultStatus::kOk && !r.stop_reason) {
    return Error::invalid(at("stop_reason"), "is required when status is ok (the samples are judged by it)");
  }
  if (r.stats && r.samples_ms.empty()) return Error::invalid(at("samples_ms"), "is required with stats");
  if (r.samples_ms.size() > max_iterations()) {
    return Error::invalid(at("samples_ms"), "has more than " + std::to_string(max_iterations()) + " samples");
  }
  for (std::size_t i = 0; i < r.samples_ms.size(); ++i) {
    const double v = r.samples_ms[i];
    if (!(std::isfinite(v) && v >= 0 && v <= kMaxResultMs)) {
      return Error::invalid(at("samples_ms[" + std::to_string(i) + "]"),
                            "must be between 0 and " + number(kMaxResultMs) + " ms, got " + number(v));
    }
  }
  if (r.stats) {
    if (auto err = check_stats(*r.stats, r.samples_ms, at("stats"))) return err;
  }
  if (auto err = check_duration(at("first_call_ms"), r.first_call_ms, kMaxResultMs)) return err;
  if (auto err = check_duration(at("export_s"), r.export_s, kMaxResultMs / 1000)) return err;
  if (auto err = check_duration(at("load_s"), r.load_s, kMaxResultMs / 1000)) return err;
  if (r.oom && r.status != ResultStatus::kOom) return Error::invalid(at("oom"), "is only allowed when status is oom");
  if (r.status == ResultStatus::kOom && !r.oom) return Error::invalid(at("oom"), "is required when status is oom");
  if (r.signal) {
    if (r.status != ResultStatus::kCrash) return Error::invalid(at("signal"), "is only allowed when status is crash");
    if (*r.signal < 1 || *r.signal > 128) return Error::invalid(at("signal"), "must be between 1 and 128");
  }
  if (r.accuracy && !has_measurements(r.status)) {
    return Error::invalid(at("accuracy"), "is only allowed when status is ok or invalid");
  }
  if (r.accuracy) {
    const AccuracyInfo& a = *r.accuracy;
    if (a.tolerance < kErrorMultiplier * a.eager_error * (1 - 1e-9)) {
      return Error::invalid(at("accuracy.tolerance"), "must be at least " + number(kErrorMultiplier) +
                                                          " x eager_error (the rule's bound, common/accuracy.h)");
    }
    if (auto err = check_verdict_agrees(a, at("accuracy.verdict"))) return err;
    for (const auto& [name, text] : {std::pair{"output", &a.output}, std::pair{"detail", &a.detail}}) {
      if (auto why = display_text_problem(*text, kMaxFlatTextBytes, TextLines::kMany)) {
        return Error::invalid(at(std::string("accuracy.") + name), *why);
      }
    }
  }
  if (r.memory) {
    const struct {
      const char* name;
      const std::optional<std::int64_t>& v;
    } fields[] = {{"peak_allocated_bytes", r.memory->peak_allocated_bytes},
                  {"peak_reserved_bytes", r.memory->peak_reserved_bytes},
                  {"peak_rss_bytes", r.memory->peak_rss_bytes},
                  {"cap_bytes", r.memory->cap_bytes},
                  {"peak_growth_bytes", r.memory->peak_growth_bytes}};
    for (const auto& f : fields) {
      if (f.v && *f.v < 0) return Error::invalid(at("memory." + std::string(f.name)), "must be >= 0");
    }
    if (r.memory->cap && std::find(std::begin(kMemoryCapKinds), std::end(kMemoryCapKinds), *r.memory->cap) ==
                             std::end(kMemoryCapKinds)) {
      return Error::invalid(at("memory.cap"), "must be cgroup-v1, cgroup-v2, address-space or cuda-allocator");
    }
    if (r.memory->cap.has_value() != r.memory->cap_bytes.has_value()) {
      return Error::invalid(at("memory.cap_bytes"), "goes with memory.cap: both or neither");
    }
  }
  return std::nullopt;
}

void escape_result_text(JobResult& r) {
  if (r.error) r.error = escape_display_text(*r.error, TextLines::kMany);
  escape_flat_text(r.environment);
  escape_flat_text(r.telemetry);
  if (r.accuracy) {
    r.accuracy->output = escape_display_text(r.accuracy->output, TextLines::kMany);
    r.accuracy->detail = escape_display_text(r.accuracy->detail, TextLines::kMany);
  }
}

std::optional<Error> check_result_for_job(const JobResult& r, const ResultJob& job, const std::string& path) {
  const auto at = [&](std::string_view key) { return join_path(path, key); };
  const MeasurementSpec& m = job.measurement;
  if (r.accuracy && job.mode == Mode::kEager) {
    return Error::invalid(at("accuracy"), "is only allowed on a compiled mode (this job is eager)");
  }
  if (r.accuracy && (r.accuracy->verdict == AccuracyVerdict::kPass || r.accuracy->verdict == AccuracyVerdict::kWrong) &&
      r.accuracy->tolerance != 0) {
    // The bound is the coordinator's rule for the job's dtype and device, not the agent's claim.
    const double rule = kErrorMultiplier * r.accuracy->eager_error + error_floor(job.dtype, job.on_cuda);
    if (std::abs(r.accuracy->tolerance - rule) > 1e-3 * rule) {  // 0.1%: a figure rounded for print still passes
      return Error::invalid(at("accuracy.tolerance"),
                            "is " + number(r.accuracy->tolerance) + " where the rule gives " + number(rule) + " (" +
                                number(kErrorMultiplier) + " x eager_error + " +
                                number(error_floor(job.dtype, job.on_cuda)) + " for " +
                                std::string(to_string(job.dtype)) + (job.on_cuda ? " on CUDA" : " on the CPU") + ")");
    }
  }
  if (!has_measurements(r.status) || r.samples_ms.empty()) return std::nullopt;
  const auto n = static_cast<std::int64_t>(r.samples_ms.size());
  if (n > m.max_iterations) {
    return Error::invalid(at("samples_ms"), "holds " + std::to_string(n) +
                                                " samples, more than the job's max_iterations " +
                                                std::to_string(m.max_iterations));
  }
  if (!r.stop_reason) return std::nullopt;  // required on ok (check_posted_result); optional on invalid
  const bool fixed = m.min_iterations == m.max_iterations;
  const std::string counts = std::to_string(n) + " samples; the job's measurement has min_iterations " +
                             std::to_string(m.min_iterations) + " and max_iterations " +
                             std::to_string(m.max_iterations);
  if (n > m.max_iterations) return Error::invalid(at("samples_ms"), "holds more than max_iterations (" + counts + ")");
  switch (*r.stop_reason) {
    case StopReason::kFixedCount:  // only on a fixed count, and exactly that many
      if (!fixed || n != m.max_iterations) return Error::invalid(at("stop_reason"), "is fixed_count with " + counts);
      break;
    case StopReason::kMaxIterations:
      if (n != m.max_iterations) return Error::invalid(at("stop_reason"), "is max_iterations with " + counts);
      break;
    case StopReason::kCiTarget:
      if (fixed || n < m.min_iterations) return Error::invalid(at("stop_reason"), "is ci_target with " + counts);
      break;
    case StopReason::kMaxTime:  // the time bound may end a slow model's run before its minimum count
      break;
  }
  return std::nullopt;
}

}  // namespace benchfleet
