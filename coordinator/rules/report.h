// Comparison tables for one run (docs/design.md §12): per GPU class x batch x dtype, latency per
// (torch build, runtime, mode) with accuracy verdicts and noise flags, speedup against eager and
// its geomean with coverage, pass rates, and compile time, peak memory and memory ratio columns.
// Pure: the store gathers the inputs, render.h turns a Report into Markdown, CSV or JSON.
//   ReportInput in{run.id, run.name, run.matrix, labels_from_catalog, cells, Stat::kMean};
//   std::string md = render_markdown(build_report(in));
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/cell_result.h"
#include "common/types.h"

namespace benchfleet::rules {

// Which statistic of each result the table shows. The seeds used the mean of 300 runs.
enum class Stat { kMean, kMedian };
// The statistic every view shows unless asked for another: the median, which one slow iteration
// (a page fault, a preempted thread) does not move, and what the seeds' own per-model figures are
// closest to (a few timed calls, the typical one reported).
inline constexpr Stat kDefaultStat = Stat::kMedian;
std::string_view to_string(Stat s);  // "mean" / "median"
std::optional<Stat> parse_stat(std::string_view s);

// How a model appears in tables. Taken as plain input so the report does not depend on the
// catalog: the caller maps catalog entries to these, in catalog order.
struct ModelLabel {
  std::string id;            // catalog id, e.g. "google/vit-base-patch16-224"
  std::string display_name;  // "Task/Model", e.g. "Image Classification/ViT"
};

struct ReportInput {
  std::int64_t run_id = 0;
  std::string run_name;
  MatrixSpec matrix;
  std::vector<ModelLabel> labels;  // catalog order; unlisted models keep their id, sort last
  std::vector<CellResult> cells;   // any order; jobs outside the matrix are ignored
  Stat stat = kDefaultStat;
  // Leave a speedup out of its geomean when either side carries a noise flag (?exclude_flagged).
  bool exclude_flagged = false;
};

// latency_ms: a mode's latency; speedup: eager / mode latency; compile_ms: a compiled mode's
// compile time; peak_memory_mb: a mode's peak memory in MiB; memory_ratio: eager peak / compiled
// peak (PyTorch's dashboard calls it the compression ratio).
enum class ColumnKind { kLatency, kSpeedup, kCompileMs, kPeakMemoryMb, kMemoryRatio };
// "latency_ms" / "speedup" / "compile_ms" / "peak_memory_mb" / "memory_ratio"
std::string_view to_string(ColumnKind k);

struct Column {
  // Stable across runs and renders (dashboard permalinks, geomean references):
  // "<prefix>/<build>/<runtime>/<mode>" with prefix latency, speedup, compile, memory or
  // memory_ratio.
  std::string key;
  // "<build> - <mode>", "<build> - <runtime> - <mode>" when the matrix has several runtimes;
  // speedup columns append " speedup", compile columns " compile", memory columns " peak MB",
  // memory ratio columns " memory ratio". The build names the torch its results in this table
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
  Mode mode = Mode::kEager;  // for speedup and memory ratio columns: the mode compared with eager
  // Every distinct CellResult::torch_version recorded by this table's results (its GPU class,
  // batch and dtype) of this build and runtime, any mode, exactly as recorded and in version order
  // ("2.5.1" < "2.6.0" < "2.10.0"). Shared by the table's columns of that build and runtime, so
  // eager and its compiled modes name the same torch. Empty when none recorded one.
  std::vector<std::string> torch_versions;
  // Every distinct speed fingerprint (rules/fingerprint_diff.h) the same results recorded, in
  // text order. Empty when none recorded one.
  std::vector<std::string> fingerprints;
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
  // "9.325", "1.23x", "OOM", "OOM (implied)", "failed", "-", "12.4 s", "850 ms (warm)", "1536",
  // "0.91x", ... The accuracy verdict and flags are not in it: renderers mark them.
  std::string text;
  // Latency cells: "ok", a result status wire name ("oom", "oom_implied", "error", ...),
  // "failed" (attempts exhausted without a verdict) or "not_run" (queued, leased, running,
  // cancelled, or no job). Speedup, compile, memory and memory ratio cells: "ok" (a value) or
  // "unavailable".
  // A latency cell is "ok" when at least one repetition is ok, even if others are not.
  std::string status;
  // Latency: mean over the ok repetitions of the chosen stat, in ms.
  // Speedup: eager latency / mode latency. Compile: compile_ms. Memory: peak_memory_bytes in MiB.
  // Memory ratio: eager peak / mode peak. Unrounded; `text` is the rounded form.
  std::optional<double> value;
  // 95% CI of the report's statistic (the mean's t interval, or the median's bootstrap interval),
  // widened across ok repetitions (min low, max high). Latency only. A view's value, its CI and
  // the verdicts drawn from the two (compare's "no significant change") are one statistic's.
  std::optional<double> ci_low_ms, ci_high_ms;
  // Latency cells: samples per second at the shown statistic, batch x 1000 / value (ms).
  std::optional<double> throughput_per_s;
  std::string detail;                          // tooltip text
  std::vector<std::int64_t> result_ids;        // non-zero ids behind the cell (both sides for speedup)
  int n = 0;                                   // ok repetitions averaged (speedup: the fewer of the two sides)
  std::vector<RepetitionOutcome> repetitions;  // latency cells only, by repetition

  // Latency cells of compiled modes, over the ok repetitions that carry a verdict: kWrong if
  // any is wrong, else kEagerNondeterministic if any is, else kPass if every ok repetition
  // passed, else kUnchecked. Absent for eager and torchscript and when no ok repetition carries
  // one. Speedup cells: the compiled side's.
  std::optional<AccuracyVerdict> accuracy;
  // Latency cells: the union of the ok repetitions' noise flags; speedup cells: of both sides'.
  // Sorted, no duplicates.
  std::vector<std::string> flags;
  // Latency cells, over the ok repetitions that carry them: compile_ms the mean, compile_cache
  // the one value they share or "mixed" ("" when none), peak_memory_bytes and recompiles the
  // max. Compile cells carry compile_ms and compile_cache, memory cells peak_memory_bytes.
  std::optional<double> compile_ms;
  std::string compile_cache;
  std::optional<std::int64_t> peak_memory_bytes;
  std::optional<int> recompiles;
  // Speedup cells: the change rule's verdict (rules/change_rule.h) on the compiled mode against
  // eager, two processes each: "faster" (the compiled mode is), "slower" or "same" (within the
  // run-to-run noise); "" for any other cell. Views colour a speedup by it, not by 1.00x.
  std::string change;
  // Latency cells with two or more ok repetitions (each a fresh process): how far their statistic
  // moved between processes, max / min - 1, and the standard deviation of its log (about the CV):
  // this machine's run-to-run noise for the cell. nullopt otherwise.
  std::optional<double> run_to_run_spread, run_to_run_cv;
};

struct Row {
  std::string model;        // catalog id
  std::string label;        // display name
  std::vector<Cell> cells;  // parallel to Table::columns
};

// Geomean of one speedup column over the rows where both sides are ok, less the speedups whose
// compiled side is wrong or eager_nondeterministic and, with exclude_flagged, those either side
// of which carries a noise flag.
struct Geomean {
  std::string column;           // Column::key of the speedup column
  std::string header;           // Column::header of the speedup column
  std::optional<double> value;  // nullopt when no row is covered
  int covered = 0;              // speedups in the geomean
  int total = 0;                // rows in the table
  // "Geomean speedup stable - default: 1.42x (10/12)",
  // "Geomean speedup stable - default: 1.42x (9/12; 1 wrong, 1 flagged excluded)"
  std::string text;
  int excluded_inaccurate = 0;  // ok speedups left out: compiled side wrong or eager nondeterministic
  int excluded_flagged = 0;     // ok speedups left out for a flag (exclude_flagged; not counted twice)
};

// Of one compiled mode's latency column: the cells that ran and were judged accurate, and why
// the others were not, so that an out-of-memory cell does not read as an accuracy failure.
struct PassRate {
  std::string column;   // Column::key of the latency column
  std::string header;   // Column::header of the latency column
  int passed = 0;       // cells ok with accuracy kPass
  int attempted = 0;    // cells that ran: with a verdict or failed (not "not_run", not "unsupported")
  int oom = 0;          // out of memory (oom, oom_implied)
  int errors = 0;       // failed otherwise: error, timeout, crash, invalid, failed
  int wrong = 0;        // ok but the compiled output is wrong
  int unjudged = 0;     // ok without a pass or wrong verdict: unchecked, eager nondeterministic
  int unsupported = 0;  // judged without running: the build or runtime lacks the mode (not attempted)
  // "Pass rate stable - default: 10/12 (83%)", with the reasons when some did not pass:
  // "Pass rate stable - default: 9/12 (75%): 1 OOM, 1 error, 1 wrong" (percent rounded down).
  std::string text;
};

struct Table {
  std::string gpu;        // GPU class as in the matrix: "a100"
  std::string gpu_label;  // upper-cased: "A100"
  int batch = 1;
  Dtype dtype = Dtype::kFloat32;
  // "A100 (batch size: 1)" when the matrix's dtypes are just float32, else
  // "A100 (batch size: 1, float16)".
  std::string title;
  // Latency columns, then speedup columns, then compile, memory and memory ratio columns.
  std::vector<Column> columns;
  std::vector<Row> rows;             // catalog order
  std::vector<Geomean> geomeans;     // one per speedup column, same order
  std::vector<PassRate> pass_rates;  // one per compiled mode's latency column, same order
  // What changes speed and differs between the table's builds (and runtimes), e.g. "cpu_threads:
  // stable 2; debian12 1": the comparison is then not of the torch builds alone. Empty when the
  // fingerprints agree (or only one side recorded them).
  std::vector<std::string> fingerprint_warnings;
};

struct Report {
  std::int64_t run_id = 0;
  std::string run_name;
  Stat stat = kDefaultStat;
  bool exclude_flagged = false;  // ReportInput::exclude_flagged
  // The matrix's memory_limit_mb: what each job may add after its start-up; the memory tables
  // name it beside their peaks.
  std::optional<std::int64_t> memory_cap_mb;
  std::vector<Table> tables;  // matrix gpus order, then batch_sizes, then dtypes
};

// Builds every table of the run. Never fails: missing jobs show as "-". Columns per build and
// runtime: a latency and a memory column per mode, a compile column per compiled mode
// (is_compiled), and, when the matrix includes eager, a speedup column per non-eager mode and a
// memory ratio column per compiled mode.
Report build_report(const ReportInput& input);

}  // namespace benchfleet::rules
