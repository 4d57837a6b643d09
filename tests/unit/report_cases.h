// Report inputs and readers shared by the report tests: results of jobs, the seeds' A100 study
// cut down (seeds_like), small_case, headers and texts of a table.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/rules/report.h"

namespace benchfleet::rules::cases {

inline constexpr const char* kVit = "google/vit-base-patch16-224";
inline constexpr const char* kDetr = "facebook/detr-resnet-50";

inline Statistics stats(double mean, double median) {
  Statistics s;
  s.mean_ms = mean;
  s.median_ms = median;
  s.ci_low_ms = median - 0.1;
  s.ci_high_ms = median + 0.1;
  s.iterations = 300;
  return s;
}

inline JobSpec job(const std::string& model, int batch, Mode mode, const std::string& gpu = "a100",
                   const std::string& build = "stable", Runtime runtime = Runtime::kLibtorch, int repetition = 0) {
  return {model, batch, mode, build, gpu, runtime, repetition};
}

inline CellResult ok(JobSpec j, double mean, double median, std::int64_t result_id = 0,
                     std::string torch_version = "") {
  return {std::move(j), JobStatus::kDone, ResultStatus::kOk,       stats(mean, median),
          "",           result_id,        std::move(torch_version)};
}

inline CellResult verdict(JobSpec j, ResultStatus status, std::string detail, std::int64_t result_id = 0,
                          std::string torch_version = "") {
  return {std::move(j), JobStatus::kDone, status, std::nullopt, std::move(detail), result_id, std::move(torch_version)};
}

inline CellResult pending(JobSpec j, JobStatus status) {
  return {std::move(j), status, std::nullopt, std::nullopt, "", 0, ""};
}

// The seeds' A100 study cut down: ViT and DETR, batch 1 and 16, eager vs default.
inline ReportInput seeds_like() {
  ReportInput in;
  in.stat = Stat::kMean;  // the seeds' figures, and these cases', are means
  in.run_id = 7;
  in.run_name = "seeds";
  in.matrix.name = "seeds";
  in.matrix.models = {kDetr, kVit};  // not catalog order: rows must follow the catalog
  in.matrix.batch_sizes = {1, 16};
  in.matrix.modes = {Mode::kEager, Mode::kDefault};
  in.matrix.torch_builds = {"stable"};
  in.matrix.gpus = {"a100"};
  in.labels = {{kVit, "Image Classification/ViT"}, {kDetr, "Object Detection/DETR"}};
  in.cells = {
      ok(job(kVit, 1, Mode::kEager), 9.325, 9.3, 1),
      ok(job(kVit, 1, Mode::kDefault), 7.584, 7.5, 2),
      ok(job(kDetr, 1, Mode::kEager), 34.619, 34.0, 3),
      ok(job(kDetr, 1, Mode::kDefault), 19.040, 19.0, 4),
      ok(job(kVit, 16, Mode::kEager), 40.944, 40.9, 5),
      ok(job(kVit, 16, Mode::kDefault), 40.010, 40.0, 6),
      verdict(job(kDetr, 16, Mode::kEager), ResultStatus::kOom, "phase=warmup bytes=123", 7),
      verdict(job(kDetr, 16, Mode::kDefault), ResultStatus::kOomImplied, "batch 4 ran out of memory", 8),
  };
  return in;
}

// The report with only its latency and speedup columns (the tables before accuracy verdicts and dtypes): what the
// tests of those columns compare whole rows and header lists with.
inline Report latency_and_speedup_report(const ReportInput& in) {
  Report r = build_report(in);
  for (Table& t : r.tables) {
    std::vector<Column> columns;
    std::vector<std::size_t> kept;
    for (std::size_t i = 0; i < t.columns.size(); ++i) {
      if (t.columns[i].kind == ColumnKind::kLatency || t.columns[i].kind == ColumnKind::kSpeedup) {
        kept.push_back(i);
        columns.push_back(t.columns[i]);
      }
    }
    for (Row& row : t.rows) {
      std::vector<Cell> cells;
      for (std::size_t i : kept) cells.push_back(row.cells[i]);
      row.cells = std::move(cells);
    }
    t.columns = std::move(columns);
  }
  return r;
}

inline std::vector<std::string> headers(const Table& t) {
  std::vector<std::string> out;
  for (const Column& c : t.columns) out.push_back(c.header);
  return out;
}

inline std::vector<std::string> texts(const Row& r) {
  std::vector<std::string> out;
  for (const Cell& c : r.cells) out.push_back(c.text);
  return out;
}

// seeds_like at batch 1 only, with DETR's compiled run out of memory.
inline ReportInput small_case() {
  ReportInput in = seeds_like();
  in.matrix.batch_sizes = {1};
  in.cells = {
      ok(job(kVit, 1, Mode::kEager), 9.325, 9.3),
      ok(job(kVit, 1, Mode::kDefault), 7.584, 7.5),
      ok(job(kDetr, 1, Mode::kEager), 34.619, 34.0),
      verdict(job(kDetr, 1, Mode::kDefault), ResultStatus::kOom, "phase=compile"),
  };
  return in;
}

}  // namespace benchfleet::rules::cases
