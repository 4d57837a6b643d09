// `benchfleet compare`: two sides, each a (run, torch build), cell by cell from their reports,
// for daily and CI use: the ratio A/B of one statistic, whether the change is significant (the
// 95% CIs of that statistic do not overlap), the noise flags of either side, and what differs
// between the sides besides torch (threads, CPU, GPU, driver). Pure: the caller fetches the reports.
//   auto c = compare_reports({report_a, "stable"}, {report_b, "nightly"});
//   std::string md = render_comparison(c, "md");
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace benchfleet::cli {

struct CompareSide {
  const nlohmann::json& report;  // GET /api/v1/runs/{id}/report?format=json
  std::string build;
};

struct ComparedCell {
  std::string table;   // "CPU (batch size: 1)"
  std::string model;   // "Image Classification/ResNet-18"
  std::string column;  // "python - eager", or "eager" with one runtime
  double a_ms = 0, b_ms = 0;
  double ratio = 0;                // a / b: above 1, B is faster
  std::string verdict;             // "same", "faster", "slower" (B against A), "unknown"
  std::vector<std::string> flags;  // either side's noise flags
};

struct Comparison {
  std::string stat;                   // the reports' statistic
  std::string name_a, name_b;         // "run 5 stable"
  std::vector<ComparedCell> cells;    // every (table, model, runtime, mode) both sides measured ok
  std::vector<std::string> warnings;  // per table: what changes speed and differs between the sides
};

Comparison compare_reports(const CompareSide& a, const CompareSide& b);

// The cells where B is significantly slower than A by more than `percent` (B / A - 1 > percent / 100).
std::vector<ComparedCell> slowdowns(const Comparison& c, double percent);

// "md" (a table per the seeds' format), "csv" or "json".
std::string render_comparison(const Comparison& c, const std::string& format);

}  // namespace benchfleet::cli
