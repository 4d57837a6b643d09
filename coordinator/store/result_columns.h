// The columns a stored result gets besides its body, derived from the posted
// result, its job and its run's noise thresholds. Pure: the store binds them, the tests call it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/types.h"

namespace benchfleet::store {

struct ResultColumns {
  // result.accuracy: its verdict's wire name; the judged error and its bound (both NULL for an
  // unchecked verdict: nothing was compared).
  std::optional<std::string> accuracy;
  std::optional<double> accuracy_error;
  std::optional<double> accuracy_tolerance;
  // Compiled modes only. Python: telemetry.compile_ms (the first call). LibTorch: the
  // AOTInductor export, export_s x 1000.
  std::optional<double> compile_ms;
  // Compiled modes only. Python: telemetry.inductor_cache. LibTorch: "warm" when the artifact
  // came from the agent's cache (telemetry.artifact_cached), else the export's
  // telemetry.export_inductor_cache, else "cold" when the export was timed.
  std::optional<std::string> compile_cache;
  // memory.peak_allocated_bytes (the CUDA allocator's peak), else memory.peak_rss_bytes.
  std::optional<std::int64_t> peak_memory_bytes;
  // telemetry.recompiles, when an integer >= 0.
  std::optional<std::int64_t> recompiles;
  // noise_flags(result, noise, target_ci_rel_width) joined with ',' ("" when none).
  std::string flags;

  bool operator==(const ResultColumns&) const = default;
};

// `target_ci_rel_width`: the run's measurement target (common/noise_flags.h), when known.
ResultColumns result_columns(const JobSpec& job, const JobResult& result, const NoiseSpec& noise,
                             std::optional<double> target_ci_rel_width = std::nullopt);

// The flags column back as a list ("" -> none).
std::vector<std::string> split_flags(const std::string& column);

}  // namespace benchfleet::store
