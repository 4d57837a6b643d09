// Renderers for a Report (report.h) and a Comparison (rules/compare.h). Pure string/JSON producers;
// the caller writes them out.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "coordinator/rules/compare.h"
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
std::string render_markdown(const rules::Report& report);

// One line per (gpu, batch, dtype, model, column), header
//   gpu,batch,dtype,task_model,model_id,column,build,runtime,mode,kind,value,status,text,
//   accuracy,flags,compile_ms,compile_cache,peak_memory_mb,samples_per_s,stat,ci_low_ms,
//   ci_high_ms,change
// column is Column::header (with the build's torch version, "stable (torch 2.6.0) - eager");
// kind is latency_ms|speedup|compile_ms|peak_memory_mb|memory_ratio; value is the unrounded
// number (empty when none); flags are joined with ';'; peak_memory_mb is peak_memory_bytes in
// MiB; stat names the statistic of every latency value (median or mean) and ci_* its 95% CI;
// change is a speedup's verdict (faster, slower, same; Cell::change). RFC 4180: CRLF line ends, fields with , " CR or
// LF are quoted with quotes doubled.
std::string render_csv(const rules::Report& report);

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
std::string render_json(const rules::Report& report);
// The same, parsed (for callers that walk it).
nlohmann::json to_json(const rules::Report& report);
// One cell as the report's JSON writes it (every key of a report cell).
nlohmann::json cell_to_json(const rules::Cell& cell, rules::ColumnKind kind);

// A comparison (GET /api/v1/compare), every key always present:
// {"stat", "a": {"run", "build"}, "b": {...}, "aa", "aa_text", "expected", "compared",
//  "cells": [{"table", "gpu", "batch", "dtype", "model", "label", "runtime", "mode", "column",
//    "a_ms", "b_ms", "a_n", "b_n", "ratio", "ratio_ci_low", "ratio_ci_high", "verdict", "noise",
//    "noise_floor", "why", "flags"}],
//  "uncompared": [{"table", "label", "column", "why"}], "warnings", "table_warnings",
//  "torch_a", "torch_b",
//  "tables": [{"title", "gpu", "gpu_label", "batch", "dtype",
//    "columns": [{"runtime", "mode", "text", "geomean", "geomean_covered", "geomean_unflagged",
//      "geomean_unflagged_covered", "flagged"}],
//    "rows": [{"model", "label", "cells": [{"a", "b" (report cells or null), "ratio", "verdict",
//      "why", "flags"}]}]}]}
// ratio_ci_* are null unless noise is "repetitions"; a pair's verdict is "unavailable" without a
// ratio. The dashboard draws "tables" as they come.
nlohmann::json comparison_json(const rules::Comparison& c);
// "# A = run 1 stable vs B = run 2 unstable (median latency in ms; A/B above 1: B is faster)",
// the A/A line and the warnings, then a pipe table Table | Task/Model | Column | A | B | A/B |
// Change | Noise, then the uncompared cells and "Compared N of A's M measured cells".
std::string render_comparison_markdown(const rules::Comparison& c);
// One line per compared cell, header
//   table,model,column,stat,a_ms,b_ms,a_n,b_n,ratio,ratio_ci_low,ratio_ci_high,verdict,noise,noise_floor,flags
// RFC 4180 as render_csv.
std::string render_comparison_csv(const rules::Comparison& c);

}  // namespace benchfleet::report
