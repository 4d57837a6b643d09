// One job of a run and what became of it, as the store reads it for a report (its last attempt's
// verdict and the result row's columns): what the store hands the report rules
// (coordinator/rules/report.h) without either depending on the other.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/types.h"

namespace benchfleet {

struct CellResult {
  JobSpec job;
  JobStatus job_status = JobStatus::kQueued;
  std::optional<ResultStatus> result_status;  // verdict of the last attempt, if any
  std::optional<Statistics> stats;            // present when result_status is ok
  std::string detail;                         // tooltip text: error message, "phase=warmup bytes=123", ...
  std::int64_t result_id = 0;                 // 0 when there is no result row
  // The torch version the result's environment fingerprint recorded ("torch_version": the
  // worker's LibTorch, or torch.__version__ of the python runner), exactly as recorded.
  // Empty when there is no result or it recorded none (verdicts given before torch ran).
  std::string torch_version;
  // From the result row; empty/absent when the result did not carry them.
  // (Initialized here so that aggregates naming only the fields above stay complete.)
  std::optional<AccuracyVerdict> accuracy{};   // compiled modes, when checked
  std::optional<double> accuracy_error{};      // relative L2 error the verdict judged
  std::optional<double> accuracy_tolerance{};  // the bound it was held to
  std::optional<double> compile_ms{};          // compiled modes: the compile (first call, or the export)
  std::string compile_cache{};                 // "cold", "warm", "mixed", "bypass", "none" or ""
  std::optional<std::int64_t> peak_memory_bytes{};
  std::optional<int> recompiles{};   // python compiled modes: graphs compiled after the first call
  std::vector<std::string> flags{};  // noise flags of an ok result (common/noise_flags.h)
  // What of its environment changes speed (rules/fingerprint_diff.h speed_fingerprint); "" when
  // unknown (no result, or stored before it was kept).
  std::string fingerprint{};
};

}  // namespace benchfleet
