// The codecs of what a worker reports (common/codecs.h): statistics, OOM, memory, accuracy and the
// job result itself, which the agent checks and the coordinator stores.
#include <cmath>
#include <string>

#include "common/codecs.h"
#include "common/shared_rules.h"

namespace benchfleet {
namespace {

using nlohmann::json;

constexpr std::size_t kMaxMessageBytes = std::size_t{16} * 1024;

template <class T>
void put_optional(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}

}  // namespace

// ---- results ------------------------------------------------------------------------------------

std::optional<Error> decode_value(const json& j, const std::string& path, Statistics& out) {
  JsonReader r(j, path);
  r.required("mean_ms", out.mean_ms);
  r.required("median_ms", out.median_ms);
  r.required("p90_ms", out.p90_ms);
  r.required("p99_ms", out.p99_ms);
  r.required("min_ms", out.min_ms);
  r.required("max_ms", out.max_ms);
  r.required("stddev_ms", out.stddev_ms);
  r.required("cv", out.cv);
  r.required("ci_low_ms", out.ci_low_ms);
  r.required("ci_high_ms", out.ci_high_ms);
  r.required("iterations", out.iterations);
  r.check(out.min_ms >= 0, "min_ms", "must be >= 0");
  r.check(out.min_ms <= out.median_ms && out.median_ms <= out.max_ms, "median_ms",
          "must lie between min_ms and max_ms");
  r.check(out.min_ms <= out.mean_ms && out.mean_ms <= out.max_ms, "mean_ms", "must lie between min_ms and max_ms");
  r.check(out.ci_low_ms <= out.median_ms && out.median_ms <= out.ci_high_ms, "ci_low_ms",
          "the CI [ci_low_ms, ci_high_ms] must contain median_ms");
  r.check(out.stddev_ms >= 0, "stddev_ms", "must be >= 0");
  r.check(out.iterations >= 1, "iterations", "must be >= 1");
  if (auto s = r.finish(); !s) return s.error();
  return std::nullopt;
}

void to_json(json& j, const Statistics& v) {
  j = {{"mean_ms", v.mean_ms},     {"median_ms", v.median_ms},   {"p90_ms", v.p90_ms},        {"p99_ms", v.p99_ms},
       {"min_ms", v.min_ms},       {"max_ms", v.max_ms},         {"stddev_ms", v.stddev_ms},  {"cv", v.cv},
       {"ci_low_ms", v.ci_low_ms}, {"ci_high_ms", v.ci_high_ms}, {"iterations", v.iterations}};
}

std::optional<Error> decode_value(const json& j, const std::string& path, OomInfo& out) {
  JsonReader r(j, path);
  r.required("phase", out.phase);
  r.optional("bytes_requested", out.bytes_requested);
  r.check(!out.bytes_requested || *out.bytes_requested >= 0, "bytes_requested", "must be >= 0");
  if (auto s = r.finish(); !s) return s.error();
  return std::nullopt;
}

void to_json(json& j, const OomInfo& v) {
  j = {{"phase", v.phase}};
  put_optional(j, "bytes_requested", v.bytes_requested);
}

std::optional<Error> decode_value(const json& j, const std::string& path, MemoryInfo& out) {
  JsonReader r(j, path);
  r.optional("peak_allocated_bytes", out.peak_allocated_bytes);
  r.optional("peak_reserved_bytes", out.peak_reserved_bytes);
  r.optional("peak_rss_bytes", out.peak_rss_bytes);
  r.optional("cap", out.cap);
  r.optional("cap_bytes", out.cap_bytes);
  r.optional("peak_growth_bytes", out.peak_growth_bytes);
  if (auto s = r.finish(); !s) return s.error();
  return std::nullopt;
}

void to_json(json& j, const MemoryInfo& v) {
  j = json::object();
  put_optional(j, "peak_allocated_bytes", v.peak_allocated_bytes);
  put_optional(j, "peak_reserved_bytes", v.peak_reserved_bytes);
  put_optional(j, "peak_rss_bytes", v.peak_rss_bytes);
  put_optional(j, "cap", v.cap);
  put_optional(j, "cap_bytes", v.cap_bytes);
  put_optional(j, "peak_growth_bytes", v.peak_growth_bytes);
}

std::optional<Error> decode_value(const json& j, const std::string& path, AccuracyInfo& out) {
  JsonReader r(j, path);
  r.required("verdict", out.verdict);
  r.optional("compiled_error", out.compiled_error);
  r.optional("eager_error", out.eager_error);
  r.optional("tolerance", out.tolerance);
  r.optional("cosine", out.cosine);
  r.optional("output", out.output);
  r.optional("detail", out.detail);
  auto finite_non_negative = [](double v) { return std::isfinite(v) && v >= 0; };
  r.check(finite_non_negative(out.compiled_error), "compiled_error", "must be finite and >= 0");
  r.check(finite_non_negative(out.eager_error), "eager_error", "must be finite and >= 0");
  r.check(finite_non_negative(out.tolerance), "tolerance", "must be finite and >= 0");
  r.check(!out.cosine || (std::isfinite(*out.cosine) && *out.cosine >= -1.000001 && *out.cosine <= 1.000001), "cosine",
          "must be between -1 and 1");
  r.check(out.output.size() <= 256, "output", "is longer than 256 characters");
  r.check(out.detail.size() <= 4096, "detail", "is longer than 4096 characters");
  if (auto s = r.finish(); !s) return s.error();
  return std::nullopt;
}

void to_json(json& j, const AccuracyInfo& v) {
  j = {{"verdict", v.verdict},
       {"compiled_error", v.compiled_error},
       {"eager_error", v.eager_error},
       {"tolerance", v.tolerance}};
  put_optional(j, "cosine", v.cosine);
  if (!v.output.empty()) j["output"] = v.output;
  if (!v.detail.empty()) j["detail"] = v.detail;
}

namespace {

// The fingerprint and telemetry are flat maps of scalars, bounded in size.
void check_flat_object(JsonReader& r, std::string_view key, const json& obj) {
  r.check(obj.size() <= 256, key, "has more than 256 members");
  for (const auto& [k, v] : obj.items()) {
    r.check(v.is_primitive(), std::string(key) + "." + k, "must be a string, number, boolean or null");
    r.check(!v.is_string() || v.get_ref<const std::string&>().size() <= 4096, std::string(key) + "." + k,
            "is longer than 4096 characters");
  }
}

}  // namespace

namespace {

// `with_samples` false: samples_ms was left out on purpose (a listing), so the rules that tie
// it to status and stats are not checked.
std::optional<Error> decode_job_result(const json& j, const std::string& path, JobResult& out, bool with_samples) {
  JsonReader r(j, path);
  r.required("status", out.status);
  r.optional("stats", out.stats);
  r.optional("samples_ms", out.samples_ms);
  r.optional("first_call_ms", out.first_call_ms);
  r.optional("stop_reason", out.stop_reason);
  r.optional("export_s", out.export_s);
  r.optional("load_s", out.load_s);
  r.optional("oom", out.oom);
  r.optional("error", out.error);
  r.optional("signal", out.signal);
  r.optional("memory", out.memory);
  r.optional("accuracy", out.accuracy);
  r.optional("environment", out.environment);
  r.optional("telemetry", out.telemetry);

  const bool ok = out.status == ResultStatus::kOk;
  r.check(!ok || out.stats.has_value(), "stats", "is required when status is ok");
  r.check(!with_samples || !ok || !out.samples_ms.empty(), "samples_ms", "is required when status is ok");
  r.check(out.samples_ms.size() <= max_iterations(), "samples_ms",
          "has more than " + std::to_string(max_iterations()) + " samples");
  for (std::size_t i = 0; i < out.samples_ms.size() && !r.failed(); ++i) {
    r.check(out.samples_ms[i] >= 0, "samples_ms[" + std::to_string(i) + "]", "must be >= 0");
  }
  r.check(!with_samples || !out.stats || out.stats->iterations == static_cast<int>(out.samples_ms.size()),
          "stats.iterations", "must equal the number of samples_ms");
  r.check(out.status != ResultStatus::kOom || out.oom.has_value(), "oom", "is required when status is oom");
  r.check(!out.error || out.error->size() <= kMaxMessageBytes, "error", "is longer than 16384 characters");
  check_flat_object(r, "environment", out.environment);
  check_flat_object(r, "telemetry", out.telemetry);
  if (auto s = r.finish(); !s) return s.error();
  return std::nullopt;
}

}  // namespace

std::optional<Error> decode_value(const json& j, const std::string& path, JobResult& out) {
  return decode_job_result(j, path, out, /*with_samples=*/true);
}

Result<JobResult> decode_result_without_samples(const json& j) {
  JobResult out;
  if (auto err = decode_job_result(j, "", out, /*with_samples=*/false)) return *err;
  return out;
}

void to_json(json& j, const JobResult& v) {
  j = {{"status", v.status}, {"samples_ms", v.samples_ms}, {"environment", v.environment}, {"telemetry", v.telemetry}};
  put_optional(j, "stats", v.stats);
  put_optional(j, "first_call_ms", v.first_call_ms);
  put_optional(j, "stop_reason", v.stop_reason);
  put_optional(j, "export_s", v.export_s);
  put_optional(j, "load_s", v.load_s);
  put_optional(j, "oom", v.oom);
  put_optional(j, "error", v.error);
  put_optional(j, "signal", v.signal);
  put_optional(j, "memory", v.memory);
  put_optional(j, "accuracy", v.accuracy);
}

}  // namespace benchfleet
