// Renderers for a Report (report.h). Pure string/JSON producers; the caller writes them out.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "coordinator/rules/report.h"

namespace benchfleet::report {

// The seeds' format: "# <run name> (run <id>, <stat> latency in ms)", then per table
// "### A100 (batch size: 1)", a centred pipe table with bold headers of the latency and speedup
// columns (a compiled side judged wrong marked "7.584 (wrong)" or "(eager nondeterministic)", a
// flagged cell "9.325*" with a footnote line "\* flagged as noisy: high_cv (...)"), a bullet
// list of geomean speedups and pass rates, and a second table
// "#### Compile time and memory, A100 (batch size: 1)" of the compile, memory and memory ratio
// columns. Text is escaped ('|' as "\|", Markdown markup with a backslash), control characters
// become spaces.
std::string render_markdown(const Report& report);

// One line per (gpu, batch, dtype, model, column), header
//   gpu,batch,dtype,task_model,model_id,column,build,runtime,mode,kind,value,status,text,
//   accuracy,flags,compile_ms,compile_cache,peak_memory_mb
// column is Column::header (with the build's torch version, "stable (torch 2.6.0) - eager");
// kind is latency_ms|speedup|compile_ms|peak_memory_mb|memory_ratio; value is the unrounded
// number (empty when none); flags are joined with ';'; peak_memory_mb is peak_memory_bytes in
// MiB. RFC 4180: CRLF line ends, fields with , " CR or LF are quoted with quotes doubled.
std::string render_csv(const Report& report);

// Self-describing form the dashboard renders from:
// {"run_id", "run_name", "stat", "exclude_flagged", "tables": [{"gpu", "gpu_label", "batch",
//   "dtype", "title",
//   "columns": [{"key", "header", "kind", "build", "runtime", "mode", "torch_versions"}],
//   "rows": [{"model", "label", "cells": [{"text", "status", "value", "value_ms",
//     "ci_low_ms", "ci_high_ms", "detail", "result_ids", "n",
//     "repetitions": [{"repetition", "status", "value_ms", "detail", "result_id"}],
//     "accuracy", "flags", "compile_ms", "compile_cache", "peak_memory_bytes", "recompiles"}]}],
//   "geomeans": [{"column", "header", "value", "text", "covered", "total",
//     "excluded_inaccurate", "excluded_flagged"}],
//   "pass_rates": [{"column", "header", "passed", "attempted", "text"}]}]}
// Every key is always present. Absent numbers are null, and so are an absent "accuracy" (an
// AccuracyVerdict wire name) and an empty "compile_cache"; "flags" is an array (empty when
// none); "value_ms" is null outside latency cells (a speedup's ratio is in "value").
// Strings are escaped as nlohmann::json does, invalid UTF-8 replaced.
std::string render_json(const Report& report);
// The same, parsed (for callers that walk it).
nlohmann::json to_json(const Report& report);

}  // namespace benchfleet::report
