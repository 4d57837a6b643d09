// Comparison tables for one run (docs/design.md §12): per GPU class x batch, latency per
// (torch build, runtime, mode), speedup against eager and its geomean with coverage.
// Pure: the store gathers the inputs, render.h turns a Report into Markdown, CSV or JSON.
//   ReportInput in{run.id, run.name, run.matrix, labels_from_catalog, cells, Stat::kMean};
//   std::string md = render_markdown(build_report(in));
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/types.h"

namespace benchfleet::report {

// Which statistic of each result the table shows. The seeds used the mean of 300 runs.
enum class Stat { kMean, kMedian };
std::string_view to_string(Stat s);  // "mean" / "median"
std::optional<Stat> parse_stat(std::string_view s);

// How a model appears in tables. Taken as plain input so the report does not depend on the
// catalog: the caller maps catalog entries to these, in catalog order.
struct ModelLabel {
  std::string id;            // catalog id, e.g. "google/vit-base-patch16-224"
  std::string display_name;  // "Task/Model", e.g. "Image Classification/ViT"
};

// One job of the run and what became of it.
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
};

struct ReportInput {
  std::int64_t run_id = 0;
  std::string run_name;
  MatrixSpec matrix;
  std::vector<ModelLabel> labels;  // catalog order; unlisted models keep their id, sort last
  std::vector<CellResult> cells;   // any order; jobs outside the matrix are ignored
  Stat stat = Stat::kMean;
};

enum class ColumnKind { kLatency, kSpeedup };
std::string_view to_string(ColumnKind k);  // "latency_ms" / "speedup"

struct Column {
  // Stable across runs and renders (dashboard permalinks, geomean references):
  // "latency/<build>/<runtime>/<mode>" or "speedup/<build>/<runtime>/<mode>".
  std::string key;
  // "<build> - <mode>", "<build> - <runtime> - <mode>" when the matrix has several runtimes;
  // speedup columns append " speedup". The build names the torch its results in this table
  // recorded (torch_versions), without a local suffix ("2.6.0+debian" -> "2.6.0") unless that
  // is what tells two recorded versions apart:
  //   "stable (torch 2.6.0) - eager"                            one version
  //   "stable (torch 2.5.1, 2.6.0) - python - default speedup"  several (upgraded mid-run)
  //   "stable - eager"                                          none recorded (yet)
  // Unlike `key`, it changes as results arrive.
  std::string header;
  ColumnKind kind = ColumnKind::kLatency;
  std::string build;
  Runtime runtime = Runtime::kLibtorch;
  Mode mode = Mode::kEager;  // for speedup columns: the mode compared against eager
  // Every distinct CellResult::torch_version recorded by this table's results (its GPU class
  // and batch) of this build and runtime, any mode, exactly as recorded and in version order
  // ("2.5.1" < "2.6.0" < "2.10.0"). Shared by the table's columns of that build and runtime, so
  // eager and its compiled modes name the same torch. Empty when none recorded one.
  std::vector<std::string> torch_versions;
};

// One repetition behind a latency cell, kept so disagreeing repetitions stay visible.
struct RepetitionOutcome {
  int repetition = 0;
  std::string status;  // as Cell::status
  std::optional<double> value_ms;
  std::string detail;
  std::int64_t result_id = 0;
};

struct Cell {
  std::string text;  // "9.325", "1.23x", "OOM", "OOM (implied)", "failed", "-", ...
  // Latency cells: "ok", a result status wire name ("oom", "oom_implied", "error", ...),
  // "failed" (attempts exhausted without a verdict) or "not_run" (queued, leased, running,
  // cancelled, or no job). Speedup cells: "ok" or "unavailable".
  // A latency cell is "ok" when at least one repetition is ok, even if others are not.
  std::string status;
  // Latency: mean over the ok repetitions of the chosen stat, in ms.
  // Speedup: eager latency / mode latency. Unrounded; `text` is the rounded form.
  std::optional<double> value;
  // 95% CI of the median, widened across ok repetitions (min low, max high). Latency only.
  std::optional<double> ci_low_ms, ci_high_ms;
  std::string detail;                          // tooltip text
  std::vector<std::int64_t> result_ids;        // non-zero ids behind the cell (both sides for speedup)
  int n = 0;                                   // ok repetitions averaged (speedup: the fewer of the two sides)
  std::vector<RepetitionOutcome> repetitions;  // latency cells only, by repetition
};

struct Row {
  std::string model;        // catalog id
  std::string label;        // display name
  std::vector<Cell> cells;  // parallel to Table::columns
};

// Geomean of one speedup column over the rows where both sides are ok.
struct Geomean {
  std::string column;           // Column::key of the speedup column
  std::string header;           // Column::header of the speedup column
  std::optional<double> value;  // nullopt when no row is covered
  int covered = 0;
  int total = 0;     // rows in the table
  std::string text;  // "Geomean speedup stable - default: 1.42x (10/12)"
};

struct Table {
  std::string gpu;        // GPU class as in the matrix: "a100"
  std::string gpu_label;  // upper-cased: "A100"
  int batch = 1;
  std::string title;              // "A100 (batch size: 1)"
  std::vector<Column> columns;    // latency columns, then speedup columns
  std::vector<Row> rows;          // catalog order
  std::vector<Geomean> geomeans;  // one per speedup column, same order
};

struct Report {
  std::int64_t run_id = 0;
  std::string run_name;
  Stat stat = Stat::kMean;
  std::vector<Table> tables;  // matrix gpus order, then batch_sizes order
};

// Builds every table of the run. Never fails: missing jobs show as "-", and a speedup column
// exists per non-eager mode (per build and runtime) only when the matrix includes eager.
Report build_report(const ReportInput& input);

}  // namespace benchfleet::report
