#include "coordinator/rules/ingest.h"

#include <cmath>

#include <nlohmann/json.hpp>

#include "common/codecs.h"
#include "common/noise_flags.h"
#include "common/result_checks.h"
#include "coordinator/rules/change_rule.h"
#include "coordinator/rules/fingerprint_diff.h"
#include "coordinator/rules/series_order.h"
#include "coordinator/rules/tokens.h"

namespace benchfleet::rules {
namespace {

std::optional<double> telemetry_number(const nlohmann::json& telemetry, const char* key) {
  const auto it = telemetry.find(key);
  if (it == telemetry.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < 0) return std::nullopt;
  return v;
}

std::optional<std::string> telemetry_text(const nlohmann::json& telemetry, const char* key) {
  const auto it = telemetry.find(key);
  if (it == telemetry.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) return std::nullopt;
  return it->get<std::string>();
}

bool telemetry_true(const nlohmann::json& telemetry, const char* key) {
  const auto it = telemetry.find(key);
  return it != telemetry.end() && it->is_boolean() && it->get<bool>();
}

// The environment's `key` (torch_version, torch_git) when it recorded a non-empty text; verdicts
// given before torch ran record none.
std::optional<std::string> environment_text(const JobResult& result, const char* key) {
  const auto it = result.environment.find(key);
  if (it == result.environment.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    return std::nullopt;
  }
  return it->get<std::string>();
}

}  // namespace

ResultColumns result_columns(const JobSpec& job, const JobResult& result, const NoiseSpec& noise,
                             std::optional<double> target_ci_rel_width) {
  ResultColumns c;
  if (result.accuracy) {
    c.accuracy = std::string(to_string(result.accuracy->verdict));
    if (result.accuracy->verdict != AccuracyVerdict::kUnchecked) {
      c.accuracy_error = result.accuracy->compiled_error;
      c.accuracy_tolerance = result.accuracy->tolerance;
    }
  }
  const nlohmann::json& t = result.telemetry;
  if (is_compiled(job.mode)) {
    if (job.runtime == Runtime::kPython) {
      c.compile_ms = telemetry_number(t, "compile_ms");
      c.compile_cache = telemetry_text(t, "inductor_cache");
    } else {
      if (result.export_s && std::isfinite(*result.export_s) && *result.export_s >= 0) {
        c.compile_ms = *result.export_s * 1000;
      }
      if (telemetry_true(t, "artifact_cached")) {
        c.compile_cache = "warm";
      } else if (auto cache = telemetry_text(t, "export_inductor_cache")) {
        c.compile_cache = std::move(cache);
      } else if (c.compile_ms) {
        c.compile_cache = "cold";
      }
    }
  }
  if (result.memory) {
    c.peak_memory_bytes =
        result.memory->peak_allocated_bytes ? result.memory->peak_allocated_bytes : result.memory->peak_rss_bytes;
  }
  if (const auto it = t.find("recompiles"); it != t.end() && it->is_number_integer() && it->get<std::int64_t>() >= 0) {
    c.recompiles = it->get<std::int64_t>();
  }
  for (const auto& flag : noise_flags(result, noise, target_ci_rel_width)) {
    if (!c.flags.empty()) c.flags += ',';
    c.flags += flag;
  }
  return c;
}

std::vector<std::string> split_flags(const std::string& column) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < column.size()) {
    std::size_t end = column.find(',', start);
    if (end == std::string::npos) end = column.size();
    if (end > start) out.push_back(column.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

bool has_series_point(ResultStatus status) {
  return status != ResultStatus::kUnsupported && status != ResultStatus::kInvalid &&
         status != ResultStatus::kOomImplied;
}

Result<PostedBody> accept_posted(const JobResult& result, const std::string& path) {
  if (auto err = check_posted_result(result, path)) return *err;
  nlohmann::json body = result;
  PostedBody out;
  out.digest = sha256_hex(body.dump());
  out.samples = body["samples_ms"].dump();
  body.erase("samples_ms");
  out.body = body.dump();
  return out;
}

Result<IngestPlan> plan_ingest(const JobResult& result, const JobSpec& job, const MatrixSpec& run_spec,
                               const std::string& path) {
  // Refused before anything is written: claims its job's spec refutes.
  const ResultJob judged{job.mode, job.dtype, device_kind_of(job.gpu) != "cpu", run_spec.measurement};
  if (auto err = check_result_for_job(result, judged, path)) return *err;

  IngestPlan plan;
  plan.columns = result_columns(job, result, run_spec.noise, run_spec.measurement.target_ci_rel_width);
  plan.fingerprint = speed_fingerprint(result.environment);
  plan.torch_version = environment_text(result, "torch_version");
  if (has_series_point(result.status)) {
    SeriesPointPlan point;
    point.status = result.status;
    if (result.stats) {
      point.median_ms = result.stats->median_ms;
      point.ci_low_ms = result.stats->ci_low_ms;
      point.ci_high_ms = result.stats->ci_high_ms;
    }
    point.torch_version = plan.torch_version;
    point.torch_git = environment_text(result, "torch_git");
    point.version_key = version_sort_key(point.torch_version.value_or(""));
    point.flags = plan.columns.flags;
    point.accuracy = plan.columns.accuracy;
    plan.series_point = std::move(point);
  }
  plan.implies_oom = result.status == ResultStatus::kOom;
  return plan;
}

}  // namespace benchfleet::rules
