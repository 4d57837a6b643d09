// Renderers for a Report (report.h). Pure string/JSON producers; the caller writes them out.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "coordinator/report/report.h"

namespace benchfleet::report {

// The seeds' format: "# <run name> (run <id>, <stat> latency in ms)", then per table
// "### A100 (batch size: 1)", a centred pipe table with bold headers, and a bullet list of
// geomean speedups. '|' in any text is escaped as "\|" and newlines become spaces.
std::string render_markdown(const Report& report);

// One line per (gpu, batch, model, column), header
//   gpu,batch,task_model,model_id,column,build,runtime,mode,kind,value,status,text
// column is Column::header (with the build's torch version, "stable (torch 2.6.0) - eager");
// kind is latency_ms|speedup; value is the unrounded number (empty when none).
// RFC 4180: CRLF line ends, fields with , " CR or LF are quoted with quotes doubled.
std::string render_csv(const Report& report);

// Self-describing form the dashboard renders from:
// {"run_id", "run_name", "stat", "tables": [{"gpu", "gpu_label", "batch", "title",
//   "columns": [{"key", "header", "kind", "build", "runtime", "mode", "torch_versions"}],
//   "rows": [{"model", "label", "cells": [{"text", "status", "value", "value_ms",
//     "ci_low_ms", "ci_high_ms", "detail", "result_ids", "n",
//     "repetitions": [{"repetition", "status", "value_ms", "detail", "result_id"}]}]}],
//   "geomeans": [{"column", "header", "value", "text", "covered", "total"}]}]}
// Absent numbers are null; "value_ms" is null in speedup cells (their ratio is in "value").
// Strings are escaped as nlohmann::json does, invalid UTF-8 replaced.
std::string render_json(const Report& report);
// The same, parsed (for callers that walk it).
nlohmann::json to_json(const Report& report);

}  // namespace benchfleet::report
