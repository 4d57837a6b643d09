#include "coordinator/store/result_columns.h"

#include <cmath>

#include "common/noise_flags.h"

namespace benchfleet::store {
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

}  // namespace benchfleet::store
