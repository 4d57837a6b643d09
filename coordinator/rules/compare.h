// A comparison of two sides, each a (run, torch build), cell by cell from their reports: the ratio
// A/B of the reports' statistic and the change rule's verdict (rules/change_rule.h: within-run CIs
// and run-to-run noise), either side's noise flags, what differs between the sides besides torch,
// whether it is an A/A (the same torch on the same machine: any verdict but "same" is noise), and
// which of A's measured cells found no counterpart, so that a gate can refuse to pass on a
// comparison of nothing. `GET /api/v1/compare` serves it; the CLI and the dashboard render it.
// Pure.
//   Comparison c = compare_reports({&report_a, "stable"}, {&report_b, "nightly"});
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "coordinator/rules/change_rule.h"
#include "coordinator/rules/report.h"

namespace benchfleet::rules {

struct CompareSide {
  const rules::Report* report = nullptr;
  std::string build;
};

struct ComparedCell {
  std::string table;  // "CPU (batch size: 1)"
  std::string gpu;    // the matrix's class: "cpu", "a100"
  int batch = 1;
  Dtype dtype = Dtype::kFloat32;
  std::string model;  // catalog id
  std::string label;  // "ResNet-18"
  Runtime runtime = Runtime::kPython;
  Mode mode = Mode::kEager;
  std::string column;  // "eager", or "python - eager" when A's table has several runtimes
  double a_ms = 0, b_ms = 0;
  int a_n = 0, b_n = 0;  // ok repetitions behind each side
  ChangeVerdict change;
  std::vector<std::string> flags;  // either side's noise flags, sorted
};

// One of A's ok latency cells that was not compared, and why ("B's cell is oom", "B has no
// float32 batch 4 table", ...).
struct UncomparedCell {
  std::string table, label, column, why;
};

// The comparison as a whole: the geometric mean of A/B over the cells judged by repetitions,
// with a 95% t interval over those cells (each cell one observation). A change every cell shares
// (a build 10% slower) is found this way though each cell's own noise hides it (on a 2-core VM a
// cell's fresh processes spread 35%). Called only with at least kOverallMinCells such cells,
// when the interval excludes 1 and the mean moved at least kOverallMinEffect: two runs minutes
// apart move every cell a few percent together (the machine's state), which no interval over
// cells can tell from a change.
inline constexpr int kOverallMinCells = 3;
inline constexpr double kOverallMinEffect = 0.05;
struct OverallChange {
  int cells = 0;
  double ratio = 0;  // geometric mean of A / B
  Interval ci;
  std::string verdict;  // "same", "faster", "slower" (B against A)
  std::string why;
};

// What changes speed and differs between the sides in one table (fingerprint_diff.h), besides
// torch: "cpu_threads: A 2; B 1".
struct TableWarning {
  std::string table;  // its title
  std::string gpu;
  int batch = 1;
  Dtype dtype = Dtype::kFloat32;
  std::string text;
};

// One table both sides have (same GPU class, batch and dtype), laid out as the dashboard draws it:
// the (runtime, mode) columns both builds measured, a row per model of either side (A's order,
// then B's others) with A's cell, B's and their ratio, and per column the geometric mean of the
// ratios, over every pair and over the pairs neither side of which is flagged.
struct PairedCell {
  std::optional<Cell> a, b;             // the sides' latency cells; nullopt where the side has no row
  std::optional<double> ratio;          // A / B, when both are ok
  std::string verdict = "unavailable";  // the cell's change verdict when it has a ratio
  std::string why;
  std::vector<std::string> flags;  // either side's noise flags, sorted (with a ratio only)
};
struct PairedRow {
  std::string model, label;
  std::vector<PairedCell> cells;  // parallel to PairedTable::columns
};
struct RatioGeomean {
  std::optional<double> value;  // of A/B; nullopt when no pair is covered
  int covered = 0;
};
struct PairedColumn {
  Runtime runtime = Runtime::kPython;
  Mode mode = Mode::kEager;
  std::string text;  // "eager", or "python - eager" when the table has several runtimes
  RatioGeomean all, unflagged;
  int flagged = 0;  // pairs with a ratio left out of `unflagged`
};
struct PairedTable {
  std::string title, gpu, gpu_label;
  int batch = 1;
  Dtype dtype = Dtype::kFloat32;
  std::vector<PairedColumn> columns;
  std::vector<PairedRow> rows;
};

struct Comparison {
  rules::Stat stat = rules::Stat::kMedian;
  std::int64_t run_a = 0, run_b = 0;
  std::string build_a, build_b;
  std::vector<ComparedCell> cells;
  int expected = 0;  // A's ok latency cells of its build: what a complete comparison covers
  std::vector<UncomparedCell> uncompared;
  std::optional<OverallChange> overall;  // with kOverallMinCells cells judged by repetitions
  // Both sides recorded one torch version, the same, and the same speed fingerprints: the same
  // build on the same machine, where no change is expected.
  bool aa = false;
  std::string aa_text;                 // "A/A: torch 2.14.1 on both sides, the same machine ..."
  std::vector<TableWarning> warnings;  // per table: what changes speed and differs between the sides
  std::vector<PairedTable> tables;     // the tables both sides have, pair by pair
  // The torch versions each side's compared columns recorded, in version order.
  std::vector<std::string> torch_a, torch_b;
};

Comparison compare_reports(const CompareSide& a, const CompareSide& b);

// The cells where B is significantly slower than A by more than `percent` (B / A - 1 > percent / 100).
std::vector<ComparedCell> slowdowns(const Comparison& c, double percent);
// Whether the comparison as a whole is significantly slower by more than `percent`.
bool overall_slowdown(const Comparison& c, double percent);

}  // namespace benchfleet::rules
