#include "coordinator/report/report.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "coordinator/report/render.h"

namespace benchfleet::report {
namespace {

using nlohmann::json;

constexpr const char* kVit = "google/vit-base-patch16-224";
constexpr const char* kDetr = "facebook/detr-resnet-50";

Statistics stats(double mean, double median) {
  Statistics s;
  s.mean_ms = mean;
  s.median_ms = median;
  s.ci_low_ms = median - 0.1;
  s.ci_high_ms = median + 0.1;
  s.iterations = 300;
  return s;
}

JobSpec job(const std::string& model, int batch, Mode mode, const std::string& gpu = "a100",
            const std::string& build = "stable", Runtime runtime = Runtime::kLibtorch, int repetition = 0) {
  return {model, batch, mode, build, gpu, runtime, repetition};
}

CellResult ok(JobSpec j, double mean, double median, std::int64_t result_id = 0, std::string torch_version = "") {
  return {std::move(j), JobStatus::kDone, ResultStatus::kOk,       stats(mean, median),
          "",           result_id,        std::move(torch_version)};
}

CellResult verdict(JobSpec j, ResultStatus status, std::string detail, std::int64_t result_id = 0,
                   std::string torch_version = "") {
  return {std::move(j), JobStatus::kDone, status, std::nullopt, std::move(detail), result_id, std::move(torch_version)};
}

CellResult pending(JobSpec j, JobStatus status) {
  return {std::move(j), status, std::nullopt, std::nullopt, "", 0, ""};
}

// The seeds' A100 study cut down: ViT and DETR, batch 1 and 16, eager vs default.
ReportInput seeds_like() {
  ReportInput in;
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
Report latency_and_speedup_report(const ReportInput& in) {
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

std::vector<std::string> headers(const Table& t) {
  std::vector<std::string> out;
  for (const Column& c : t.columns) out.push_back(c.header);
  return out;
}

std::vector<std::string> texts(const Row& r) {
  std::vector<std::string> out;
  for (const Cell& c : r.cells) out.push_back(c.text);
  return out;
}

TEST(Report, SeedsLikeTablesFollowMatrixAndCatalogOrder) {
  Report r = latency_and_speedup_report(seeds_like());
  ASSERT_EQ(r.tables.size(), 2u);
  EXPECT_EQ(r.tables[0].title, "A100 (batch size: 1)");
  EXPECT_EQ(r.tables[1].title, "A100 (batch size: 16)");
  EXPECT_EQ(r.tables[0].gpu, "a100");
  EXPECT_EQ(r.tables[0].gpu_label, "A100");
  EXPECT_EQ(headers(r.tables[0]),
            (std::vector<std::string>{"stable - eager", "stable - default", "stable - default speedup"}));
  const Table& b1 = r.tables[0];
  ASSERT_EQ(b1.rows.size(), 2u);
  EXPECT_EQ(b1.rows[0].label, "Image Classification/ViT");
  EXPECT_EQ(b1.rows[0].model, kVit);
  EXPECT_EQ(b1.rows[1].label, "Object Detection/DETR");
  EXPECT_EQ(texts(b1.rows[0]), (std::vector<std::string>{"9.325", "7.584", "1.23x"}));
  EXPECT_EQ(texts(b1.rows[1]), (std::vector<std::string>{"34.619", "19.040", "1.82x"}));
  EXPECT_DOUBLE_EQ(*b1.rows[0].cells[2].value, 9.325 / 7.584);
  EXPECT_EQ(b1.rows[0].cells[2].result_ids, (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(b1.rows[0].cells[0].result_ids, (std::vector<std::int64_t>{1}));
  EXPECT_DOUBLE_EQ(*b1.rows[0].cells[0].ci_low_ms, 9.2);
  EXPECT_DOUBLE_EQ(*b1.rows[0].cells[0].ci_high_ms, 9.4);
}

TEST(Report, OomCellsAreDistinctAndNeverASpeed) {
  Report r = latency_and_speedup_report(seeds_like());
  const Row& detr = r.tables[1].rows[1];
  EXPECT_EQ(texts(detr), (std::vector<std::string>{"OOM", "OOM (implied)", "-"}));
  EXPECT_EQ(detr.cells[0].status, "oom");
  EXPECT_EQ(detr.cells[0].detail, "phase=warmup bytes=123");
  EXPECT_FALSE(detr.cells[0].value.has_value());
  EXPECT_EQ(detr.cells[1].status, "oom_implied");
  EXPECT_EQ(detr.cells[1].detail, "batch 4 ran out of memory");
  EXPECT_EQ(detr.cells[2].status, "unavailable");
  EXPECT_FALSE(detr.cells[2].value.has_value());
}

TEST(Report, GeomeanSpeedupWithCoverage) {
  Report r = build_report(seeds_like());
  ASSERT_EQ(r.tables[0].geomeans.size(), 1u);
  const Geomean& g1 = r.tables[0].geomeans[0];
  EXPECT_EQ(g1.column, "speedup/stable/libtorch/default");
  EXPECT_EQ(g1.covered, 2);
  EXPECT_EQ(g1.total, 2);
  EXPECT_NEAR(*g1.value, std::sqrt((9.325 / 7.584) * (34.619 / 19.040)), 1e-12);
  EXPECT_EQ(g1.text, "Geomean speedup stable - default: 1.50x (2/2)");
  const Geomean& g16 = r.tables[1].geomeans[0];
  EXPECT_EQ(g16.covered, 1);
  EXPECT_EQ(g16.text, "Geomean speedup stable - default: 1.02x (1/2)");
}

TEST(Report, GeomeanWithNoCoveredRowShowsDash) {
  ReportInput in = seeds_like();
  in.cells.clear();
  Report r = build_report(in);
  EXPECT_FALSE(r.tables[0].geomeans[0].value.has_value());
  EXPECT_EQ(r.tables[0].geomeans[0].text, "Geomean speedup stable - default: - (0/2)");
}

TEST(Report, MedianSwitchShowsTheMedian) {
  ReportInput in = seeds_like();
  in.stat = Stat::kMedian;
  Report r = latency_and_speedup_report(in);
  EXPECT_EQ(r.stat, Stat::kMedian);
  EXPECT_EQ(texts(r.tables[0].rows[0]), (std::vector<std::string>{"9.300", "7.500", "1.24x"}));
}

TEST(Report, RepetitionsAreAveragedOverOkOnes) {
  ReportInput in = seeds_like();
  in.matrix.repetitions = 3;
  in.cells = {
      verdict(job(kVit, 1, Mode::kEager, "a100", "stable", Runtime::kLibtorch, 2), ResultStatus::kOom, "phase=measure",
              12),
      ok(job(kVit, 1, Mode::kEager, "a100", "stable", Runtime::kLibtorch, 0), 10.0, 9.0, 10),
      ok(job(kVit, 1, Mode::kEager, "a100", "stable", Runtime::kLibtorch, 1), 12.0, 11.0, 11),
  };
  Report r = build_report(in);
  const Cell& c = r.tables[0].rows[0].cells[0];
  EXPECT_EQ(c.status, "ok");
  EXPECT_EQ(c.text, "11.000");
  EXPECT_DOUBLE_EQ(*c.value, 11.0);
  EXPECT_EQ(c.n, 2);
  EXPECT_DOUBLE_EQ(*c.ci_low_ms, 8.9);    // widened: min of lows
  EXPECT_DOUBLE_EQ(*c.ci_high_ms, 11.1);  // and max of highs
  EXPECT_EQ(c.result_ids, (std::vector<std::int64_t>{10, 11, 12}));
  ASSERT_EQ(c.repetitions.size(), 3u);
  EXPECT_EQ(c.repetitions[2].repetition, 2);
  EXPECT_EQ(c.repetitions[2].status, "oom");
  EXPECT_EQ(c.detail, "2/3 repetitions ok; rep 2: oom: phase=measure");

  in.stat = Stat::kMedian;
  EXPECT_EQ(build_report(in).tables[0].rows[0].cells[0].text, "10.000");
}

TEST(Report, PendingAndFailedJobs) {
  ReportInput in = seeds_like();
  in.cells = {
      pending(job(kVit, 1, Mode::kEager), JobStatus::kQueued),
      pending(job(kVit, 1, Mode::kDefault), JobStatus::kRunning),
      pending(job(kDetr, 1, Mode::kEager), JobStatus::kFailed),
      {job(kDetr, 1, Mode::kDefault), JobStatus::kFailed, ResultStatus::kError, std::nullopt, "segfault in aten", 9,
       ""},
      pending(job(kVit, 16, Mode::kEager), JobStatus::kCancelled),
      verdict(job(kVit, 16, Mode::kDefault), ResultStatus::kUnsupported, "no AOTInductor"),
      // DETR batch 16 has no jobs at all.
  };
  Report r = latency_and_speedup_report(in);
  const Table& b1 = r.tables[0];
  EXPECT_EQ(texts(b1.rows[0]), (std::vector<std::string>{"-", "-", "-"}));
  EXPECT_EQ(b1.rows[0].cells[0].status, "not_run");
  EXPECT_EQ(texts(b1.rows[1]), (std::vector<std::string>{"failed", "error", "-"}));
  EXPECT_EQ(b1.rows[1].cells[0].status, "failed");
  EXPECT_EQ(b1.rows[1].cells[1].status, "error");
  EXPECT_EQ(b1.rows[1].cells[1].detail, "segfault in aten");
  const Table& b16 = r.tables[1];
  EXPECT_EQ(texts(b16.rows[0]), (std::vector<std::string>{"-", "unsupported", "-"}));
  EXPECT_EQ(texts(b16.rows[1]), (std::vector<std::string>{"-", "-", "-"}));
  EXPECT_EQ(b16.rows[1].cells[0].status, "not_run");
  EXPECT_TRUE(b16.rows[1].cells[0].repetitions.empty());
}

TEST(Report, AllVerdictTexts) {
  const std::vector<std::pair<ResultStatus, std::string>> cases = {
      {ResultStatus::kError, "error"},     {ResultStatus::kTimeout, "timeout"},
      {ResultStatus::kCrash, "crash"},     {ResultStatus::kUnsupported, "unsupported"},
      {ResultStatus::kInvalid, "invalid"},
  };
  for (const auto& [status, text] : cases) {
    ReportInput in = seeds_like();
    in.cells = {verdict(job(kVit, 1, Mode::kEager), status, "")};
    const Report r = build_report(in);
    const Cell& c = r.tables[0].rows[0].cells[0];
    EXPECT_EQ(c.text, text);
    EXPECT_EQ(c.status, text);
  }
}

TEST(Report, SeveralRuntimesNameTheRuntimeInHeaders) {
  ReportInput in = seeds_like();
  in.matrix.torch_builds = {"stable", "nightly"};
  in.matrix.runtimes = {Runtime::kLibtorch, Runtime::kPython};
  in.matrix.modes = {Mode::kEager, Mode::kReduceOverhead};
  Report r = latency_and_speedup_report(in);
  EXPECT_EQ(
      headers(r.tables[0]),
      (std::vector<std::string>{
          "stable - libtorch - eager", "stable - libtorch - reduce-overhead", "stable - python - eager",
          "stable - python - reduce-overhead", "nightly - libtorch - eager", "nightly - libtorch - reduce-overhead",
          "nightly - python - eager", "nightly - python - reduce-overhead",
          "stable - libtorch - reduce-overhead speedup", "stable - python - reduce-overhead speedup",
          "nightly - libtorch - reduce-overhead speedup", "nightly - python - reduce-overhead speedup"}));
  EXPECT_EQ(r.tables[0].columns[6].key, "latency/nightly/python/eager");
  EXPECT_EQ(r.tables[0].columns[9].key, "speedup/stable/python/reduce-overhead");
  ASSERT_EQ(r.tables[0].geomeans.size(), 4u);
  EXPECT_EQ(r.tables[0].geomeans[1].text, "Geomean speedup stable - python - reduce-overhead: - (0/2)");
}

TEST(Report, SpeedupComparesSameBuildAndRuntime) {
  ReportInput in = seeds_like();
  in.matrix.batch_sizes = {1};
  in.matrix.torch_builds = {"stable", "nightly"};
  in.cells = {
      ok(job(kVit, 1, Mode::kEager), 10.0, 10.0),
      ok(job(kVit, 1, Mode::kDefault), 5.0, 5.0),
      ok(job(kVit, 1, Mode::kEager, "a100", "nightly"), 8.0, 8.0),
      ok(job(kVit, 1, Mode::kDefault, "a100", "nightly"), 2.0, 2.0),
  };
  const Report r = latency_and_speedup_report(in);
  const Row& vit = r.tables[0].rows[0];
  EXPECT_EQ(texts(vit), (std::vector<std::string>{"10.000", "5.000", "8.000", "2.000", "2.00x", "4.00x"}));
}

TEST(Report, NoEagerMeansNoSpeedupColumns) {
  ReportInput in = seeds_like();
  in.matrix.modes = {Mode::kDefault, Mode::kMaxAutotune};
  Report r = latency_and_speedup_report(in);
  EXPECT_EQ(headers(r.tables[0]), (std::vector<std::string>{"stable - default", "stable - max-autotune"}));
  EXPECT_TRUE(r.tables[0].geomeans.empty());
}

TEST(Report, TablesFollowGpuThenBatchOrderOfTheMatrix) {
  ReportInput in = seeds_like();
  in.matrix.gpus = {"t4", "cpu", "h100"};
  in.matrix.batch_sizes = {4, 1};
  std::vector<std::string> titles;
  const Report r = build_report(in);
  for (const Table& t : r.tables) titles.push_back(t.title);
  EXPECT_EQ(titles, (std::vector<std::string>{"T4 (batch size: 4)", "T4 (batch size: 1)", "CPU (batch size: 4)",
                                              "CPU (batch size: 1)", "H100 (batch size: 4)", "H100 (batch size: 1)"}));
}

TEST(Report, UnlistedModelsKeepTheirIdAndSortLast) {
  ReportInput in = seeds_like();
  in.matrix.models = {"resnet18", kDetr, "mobilenet_v3_small", kVit};
  const Report r = build_report(in);
  const Table& t = r.tables[0];
  std::vector<std::string> labels;
  for (const Row& row : t.rows) labels.push_back(row.label);
  EXPECT_EQ(labels, (std::vector<std::string>{"Image Classification/ViT", "Object Detection/DETR", "resnet18",
                                              "mobilenet_v3_small"}));
  EXPECT_EQ(t.geomeans[0].total, 4);
}

TEST(Report, JobsOutsideTheMatrixAreIgnored) {
  ReportInput in = seeds_like();
  in.cells.push_back(ok(job(kVit, 1, Mode::kEager, "v100"), 1.0, 1.0));
  in.cells.push_back(ok(job("resnet18", 1, Mode::kEager), 1.0, 1.0));
  Report r = build_report(in);
  ASSERT_EQ(r.tables.size(), 2u);
  EXPECT_EQ(r.tables[0].rows.size(), 2u);
  EXPECT_EQ(r.tables[0].rows[0].cells[0].text, "9.325");
}

TEST(Report, StatNamesRoundTrip) {
  EXPECT_EQ(to_string(Stat::kMean), "mean");
  EXPECT_EQ(to_string(Stat::kMedian), "median");
  EXPECT_EQ(parse_stat("median"), Stat::kMedian);
  EXPECT_EQ(parse_stat("mean"), Stat::kMean);
  EXPECT_FALSE(parse_stat("p90").has_value());
}

ReportInput small_case() {
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

TEST(Markdown, MatchesTheSeedsFormat) {
  const std::string expected =
      "# seeds (run 7, mean latency in ms)\n"
      "\n"
      "### A100 (batch size: 1)\n"
      "\n"
      "| **Task/Model** | **stable - eager** | **stable - default** |"
      " **stable - default speedup** |\n"
      "|:---:|:---:|:---:|:---:|\n"
      "| Image Classification/ViT | 9.325 | 7.584 | 1.23x |\n"
      "| Object Detection/DETR | 34.619 | OOM | - |\n"
      "\n"
      "- Geomean speedup stable - default: 1.23x (1/2)\n"
      "- Pass rate stable - default: 0/2 (0%)\n"
      "\n"
      "#### Compile time and memory, A100 (batch size: 1)\n"
      "\n"
      "| **Task/Model** | **stable - default compile** | **stable - eager peak MB** | **stable - default peak MB** |"
      " **stable - default memory ratio** |\n"
      "|:---:|:---:|:---:|:---:|:---:|\n"
      "| Image Classification/ViT | - | - | - | - |\n"
      "| Object Detection/DETR | - | - | - | - |\n";
  EXPECT_EQ(render_markdown(build_report(small_case())), expected);
}

TEST(Markdown, WithoutSpeedupColumnsHasNoGeomeanOrPassRateList) {
  ReportInput in = small_case();
  in.matrix.modes = {Mode::kEager};
  in.run_name = "eager only";
  const std::string expected =
      "# eager only (run 7, mean latency in ms)\n"
      "\n"
      "### A100 (batch size: 1)\n"
      "\n"
      "| **Task/Model** | **stable - eager** |\n"
      "|:---:|:---:|\n"
      "| Image Classification/ViT | 9.325 |\n"
      "| Object Detection/DETR | 34.619 |\n"
      "\n"
      "#### Compile time and memory, A100 (batch size: 1)\n"
      "\n"
      "| **Task/Model** | **stable - eager peak MB** |\n"
      "|:---:|:---:|\n"
      "| Image Classification/ViT | - |\n"
      "| Object Detection/DETR | - |\n";
  EXPECT_EQ(render_markdown(build_report(in)), expected);
}

TEST(Markdown, EscapesPipesAndNewlines) {
  ReportInput in = small_case();
  in.run_name = "a|b";
  in.labels[0].display_name = "Image|Classification\nViT";
  const std::string md = render_markdown(build_report(in));
  EXPECT_NE(md.find("# a\\|b (run 7"), std::string::npos);
  EXPECT_NE(md.find("| Image\\|Classification ViT | 9.325 |"), std::string::npos);
}

// Data in a cell cannot format, link or split the table.
TEST(Markdown, EscapesMarkupAndControlCharacters) {
  ReportInput in = small_case();
  in.run_name = "a\\|b *c* _d_ `e` [f](g) <h>";
  in.labels[0].display_name = std::string("x\0y\ty", 5);
  const std::string md = render_markdown(build_report(in));
  EXPECT_NE(md.find("# a\\\\\\|b \\*c\\* \\_d\\_ \\`e\\` \\[f\\](g) \\<h\\> (run 7"), std::string::npos) << md;
  EXPECT_NE(md.find("| x y y | 9.325 |"), std::string::npos) << md;
}

// A ratio that overflows is no speedup ("infx"), and the geomean does not
// count it.
TEST(Report, AnOverflowingSpeedupIsUnavailable) {
  ReportInput in = seeds_like();
  in.matrix.batch_sizes = {1};
  in.cells = {ok(job(kVit, 1, Mode::kEager), 1.7e308, 1.7e308), ok(job(kVit, 1, Mode::kDefault), 1e-3, 1e-3)};
  const Report r = build_report(in);
  const std::string md = render_markdown(r);
  EXPECT_EQ(md.find("infx"), std::string::npos) << md;
  EXPECT_NE(md.find("(0/"), std::string::npos) << md;
}

TEST(Csv, HeaderRowsAndQuoting) {
  ReportInput in = small_case();
  in.labels[0].display_name = "Classification, \"fast\"";
  const std::string csv = render_csv(build_report(in));
  EXPECT_EQ(csv.rfind("gpu,batch,dtype,task_model,model_id,column,build,runtime,mode,kind,value,status,"
                      "text,accuracy,flags,compile_ms,compile_cache,peak_memory_mb\r\n",
                      0),
            0u);
  EXPECT_NE(csv.find("a100,1,float32,\"Classification, \"\"fast\"\"\",google/vit-base-patch16-224,"
                     "stable - eager,stable,libtorch,eager,latency_ms,9.325,ok,9.325,,,,,\r\n"),
            std::string::npos);
  EXPECT_NE(csv.find("a100,1,float32,Object Detection/DETR,facebook/detr-resnet-50,stable - default,"
                     "stable,libtorch,default,latency_ms,,oom,OOM,,,,,\r\n"),
            std::string::npos);
  EXPECT_NE(csv.find("a100,1,float32,Object Detection/DETR,facebook/detr-resnet-50,"
                     "stable - default speedup,stable,libtorch,default,speedup,,unavailable,-,,,,,\r\n"),
            std::string::npos);
  EXPECT_NE(csv.find("a100,1,float32,Object Detection/DETR,facebook/detr-resnet-50,"
                     "stable - default memory ratio,stable,libtorch,default,memory_ratio,,unavailable,-,,,,,\r\n"),
            std::string::npos);
  // header + 2 models x 7 columns (eager, default, speedup, compile, 2 x memory, memory ratio)
  std::size_t lines = 0;
  for (std::size_t p = csv.find("\r\n"); p != std::string::npos; p = csv.find("\r\n", p + 2)) {
    ++lines;
  }
  EXPECT_EQ(lines, 15u);
}

TEST(Json, SelfDescribingShape) {
  ReportInput in = small_case();
  in.run_id = 42;
  json j = to_json(build_report(in));
  EXPECT_EQ(j["run_id"], 42);
  EXPECT_EQ(j["run_name"], "seeds");
  EXPECT_EQ(j["stat"], "mean");
  EXPECT_EQ(j["exclude_flagged"], false);
  ASSERT_EQ(j["tables"].size(), 1u);
  const json& t = j["tables"][0];
  EXPECT_EQ(t["gpu"], "a100");
  EXPECT_EQ(t["gpu_label"], "A100");
  EXPECT_EQ(t["batch"], 1);
  EXPECT_EQ(t["dtype"], "float32");
  EXPECT_EQ(t["title"], "A100 (batch size: 1)");
  ASSERT_EQ(t["columns"].size(), 7u);
  EXPECT_EQ(t["columns"][0], (json{{"key", "latency/stable/libtorch/eager"},
                                   {"header", "stable - eager"},
                                   {"kind", "latency_ms"},
                                   {"build", "stable"},
                                   {"runtime", "libtorch"},
                                   {"mode", "eager"},
                                   {"torch_versions", json::array()}}));
  EXPECT_EQ(t["columns"][2]["kind"], "speedup");
  EXPECT_EQ(t["columns"][2]["mode"], "default");
  EXPECT_EQ(t["columns"][3]["kind"], "compile_ms");
  EXPECT_EQ(t["columns"][3]["key"], "compile/stable/libtorch/default");
  EXPECT_EQ(t["columns"][4]["kind"], "peak_memory_mb");
  EXPECT_EQ(t["columns"][4]["key"], "memory/stable/libtorch/eager");
  EXPECT_EQ(t["columns"][6]["kind"], "memory_ratio");
  EXPECT_EQ(t["columns"][6]["key"], "memory_ratio/stable/libtorch/default");

  const json& vit = t["rows"][0];
  EXPECT_EQ(vit["model"], kVit);
  EXPECT_EQ(vit["label"], "Image Classification/ViT");
  ASSERT_EQ(vit["cells"].size(), 7u);
  const json& eager = vit["cells"][0];
  for (const char* key :
       {"text", "status", "value", "value_ms", "ci_low_ms", "ci_high_ms", "detail", "result_ids", "n", "repetitions",
        "accuracy", "flags", "compile_ms", "compile_cache", "peak_memory_bytes", "recompiles"}) {
    EXPECT_TRUE(eager.contains(key)) << key;
  }
  EXPECT_EQ(eager.size(), 16u);
  EXPECT_TRUE(eager["accuracy"].is_null());
  EXPECT_EQ(eager["flags"], json::array());
  EXPECT_TRUE(eager["compile_ms"].is_null());
  EXPECT_TRUE(eager["compile_cache"].is_null());
  EXPECT_TRUE(eager["peak_memory_bytes"].is_null());
  EXPECT_TRUE(eager["recompiles"].is_null());
  EXPECT_EQ(eager["text"], "9.325");
  EXPECT_EQ(eager["status"], "ok");
  EXPECT_DOUBLE_EQ(eager["value_ms"].get<double>(), 9.325);
  EXPECT_DOUBLE_EQ(eager["ci_low_ms"].get<double>(), 9.2);
  EXPECT_TRUE(eager["result_ids"].is_array());
  EXPECT_EQ(eager["n"], 1);
  EXPECT_EQ(eager["repetitions"][0]["status"], "ok");
  EXPECT_EQ(eager["repetitions"][0]["repetition"], 0);

  const json& speedup = vit["cells"][2];
  EXPECT_TRUE(speedup["value_ms"].is_null());
  EXPECT_TRUE(speedup["ci_low_ms"].is_null());
  EXPECT_NEAR(speedup["value"].get<double>(), 9.325 / 7.584, 1e-12);
  EXPECT_TRUE(speedup["repetitions"].empty());

  const json& oom = t["rows"][1]["cells"][1];
  EXPECT_EQ(oom["status"], "oom");
  EXPECT_TRUE(oom["value"].is_null());
  EXPECT_TRUE(oom["value_ms"].is_null());
  EXPECT_EQ(oom["detail"], "phase=compile");

  ASSERT_EQ(t["geomeans"].size(), 1u);
  EXPECT_EQ(t["geomeans"][0]["column"], "speedup/stable/libtorch/default");
  EXPECT_EQ(t["geomeans"][0]["header"], "stable - default speedup");
  EXPECT_EQ(t["geomeans"][0]["covered"], 1);
  EXPECT_EQ(t["geomeans"][0]["total"], 2);
  EXPECT_EQ(t["geomeans"][0]["text"], "Geomean speedup stable - default: 1.23x (1/2)");
  EXPECT_NEAR(t["geomeans"][0]["value"].get<double>(), 9.325 / 7.584, 1e-12);
  EXPECT_EQ(t["geomeans"][0]["excluded_inaccurate"], 0);
  EXPECT_EQ(t["geomeans"][0]["excluded_flagged"], 0);
  EXPECT_EQ(t["geomeans"][0].size(), 8u);
  EXPECT_EQ(t["pass_rates"], json::array({{{"column", "latency/stable/libtorch/default"},
                                           {"header", "stable - default"},
                                           {"passed", 0},
                                           {"attempted", 2},
                                           {"text", "Pass rate stable - default: 0/2 (0%)"}}}));
}

// ---- torch versions in headers ------------------------------------------------------------------

// The version every result of `build` recorded, as the worker and the python runner would
// (implied OOMs are the coordinator's verdicts: no torch ran).
ReportInput with_versions(ReportInput in, const std::string& build, const std::string& version) {
  for (CellResult& c : in.cells) {
    if (c.job.torch_build == build && c.result_status && c.result_status != ResultStatus::kOomImplied) {
      c.torch_version = version;
    }
  }
  return in;
}

TEST(ReportTorchVersions, OneVersionIsNamedInEveryHeaderOfItsBuild) {
  const Report r = latency_and_speedup_report(with_versions(seeds_like(), "stable", "2.6.0+debian"));
  for (const Table& t : r.tables) {
    EXPECT_EQ(headers(t), (std::vector<std::string>{"stable (torch 2.6.0) - eager", "stable (torch 2.6.0) - default",
                                                    "stable (torch 2.6.0) - default speedup"}));
    for (const Column& c : t.columns) {
      EXPECT_EQ(c.torch_versions, (std::vector<std::string>{"2.6.0+debian"})) << c.key;
    }
    // Keys do not move: permalinks and the compare view hold on to them.
    EXPECT_EQ(t.columns[0].key, "latency/stable/libtorch/eager");
    EXPECT_EQ(t.columns[2].key, "speedup/stable/libtorch/default");
  }
  EXPECT_EQ(r.tables[0].geomeans[0].header, "stable (torch 2.6.0) - default speedup");
  EXPECT_EQ(r.tables[0].geomeans[0].text, "Geomean speedup stable (torch 2.6.0) - default: 1.50x (2/2)");
}

TEST(ReportTorchVersions, TwoBuildsSideBySideReadLikeTheSeedsStudy) {
  ReportInput in = seeds_like();
  in.matrix.batch_sizes = {1};
  in.matrix.torch_builds = {"bookworm", "trixie"};
  in.cells = {
      ok(job(kVit, 1, Mode::kEager, "a100", "bookworm"), 12.0, 12.0, 1, "1.13.0"),
      verdict(job(kVit, 1, Mode::kDefault, "a100", "bookworm"), ResultStatus::kUnsupported,
              "torch.compile needs torch >= 2.0", 2, "1.13.0"),
      ok(job(kVit, 1, Mode::kEager, "a100", "trixie"), 10.0, 10.0, 3, "2.6.0+debian"),
      ok(job(kVit, 1, Mode::kDefault, "a100", "trixie"), 8.0, 8.0, 4, "2.6.0+debian"),
  };
  const Report r = latency_and_speedup_report(in);
  EXPECT_EQ(headers(r.tables[0]),
            (std::vector<std::string>{"bookworm (torch 1.13.0) - eager", "bookworm (torch 1.13.0) - default",
                                      "trixie (torch 2.6.0) - eager", "trixie (torch 2.6.0) - default",
                                      "bookworm (torch 1.13.0) - default speedup",
                                      "trixie (torch 2.6.0) - default speedup"}));
  EXPECT_EQ(r.tables[0].columns[2].key, "latency/trixie/libtorch/eager");
  EXPECT_EQ(r.tables[0].columns[0].torch_versions, (std::vector<std::string>{"1.13.0"}));
  EXPECT_EQ(r.tables[0].columns[3].torch_versions, (std::vector<std::string>{"2.6.0+debian"}));

  const std::string md = render_markdown(r);
  EXPECT_NE(md.find("| **Task/Model** | **bookworm (torch 1.13.0) - eager** |"
                    " **bookworm (torch 1.13.0) - default** | **trixie (torch 2.6.0) - eager** |"
                    " **trixie (torch 2.6.0) - default** |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("- Geomean speedup trixie (torch 2.6.0) - default: 1.25x (1/2)"), std::string::npos) << md;
  const std::string csv = render_csv(r);
  EXPECT_NE(csv.find(",google/vit-base-patch16-224,trixie (torch 2.6.0) - eager,trixie,libtorch,eager,"
                     "latency_ms,10,ok,10.000,,,,,\r\n"),
            std::string::npos)
      << csv;
  const json j = to_json(r);
  EXPECT_EQ(j["tables"][0]["columns"][3]["torch_versions"], json({"2.6.0+debian"}));
  EXPECT_EQ(j["tables"][0]["columns"][3]["header"], "trixie (torch 2.6.0) - default");
}

TEST(ReportTorchVersions, ABuildUpgradedMidRunNamesEveryVersionInVersionOrder) {
  ReportInput in = seeds_like();
  // Recorded out of order, and 2.10 after 2.9 (numbers, not text).
  const std::vector<std::string> recorded = {"2.10.0", "2.5.1", "2.9.1", "2.5.1", "2.10.0", "2.5.1", "", ""};
  for (std::size_t i = 0; i < in.cells.size(); ++i) in.cells[i].torch_version = recorded[i];
  const Report r = build_report(in);
  EXPECT_EQ(r.tables[0].columns[0].header, "stable (torch 2.5.1, 2.9.1, 2.10.0) - eager");
  EXPECT_EQ(r.tables[0].columns[1].torch_versions, (std::vector<std::string>{"2.5.1", "2.9.1", "2.10.0"}));
  // Each table names what its own results recorded: batch 16 never ran on 2.9.1.
  EXPECT_EQ(r.tables[1].columns[2].header, "stable (torch 2.5.1, 2.10.0) - default speedup");
}

TEST(ReportTorchVersions, EachTableNamesWhatItsOwnResultsRecorded) {
  ReportInput in = with_versions(seeds_like(), "stable", "2.6.0");
  in.matrix.gpus = {"a100", "t4", "v100"};
  in.matrix.batch_sizes = {1};
  in.cells.push_back(ok(job(kVit, 1, Mode::kEager, "t4"), 20.0, 20.0, 30, "2.5.1"));
  const Report r = build_report(in);
  ASSERT_EQ(r.tables.size(), 3u);
  EXPECT_EQ(r.tables[0].columns[0].header, "stable (torch 2.6.0) - eager");
  EXPECT_EQ(r.tables[1].columns[0].header, "stable (torch 2.5.1) - eager");
  EXPECT_EQ(r.tables[1].columns[2].header, "stable (torch 2.5.1) - default speedup");
  EXPECT_EQ(r.tables[2].columns[0].header, "stable - eager") << "nothing ran on a V100";
  EXPECT_EQ(r.tables[2].columns[0].key, r.tables[0].columns[0].key);
}

TEST(ReportTorchVersions, LocalSuffixesStayWhenTheyAreTheDifference) {
  ReportInput in = seeds_like();
  in.cells[0].torch_version = "2.6.0+cu126";
  in.cells[1].torch_version = "2.6.0+cu124";
  EXPECT_EQ(build_report(in).tables[0].columns[0].header, "stable (torch 2.6.0+cu124, 2.6.0+cu126) - eager");
  in.cells[1].torch_version = "2.7.0.dev20250301+cu126";
  EXPECT_EQ(build_report(in).tables[0].columns[0].header, "stable (torch 2.6.0, 2.7.0.dev20250301) - eager");
}

TEST(ReportTorchVersions, ABuildWithoutRecordedVersionsKeepsThePlainHeader) {
  ReportInput in = seeds_like();
  in.matrix.torch_builds = {"stable", "nightly"};
  in = with_versions(in, "stable", "2.5.1+cu124");
  // nightly: one verdict given before torch ran (no fingerprint), the rest not run yet.
  in.cells.push_back(verdict(job(kVit, 1, Mode::kEager, "a100", "nightly"), ResultStatus::kUnsupported,
                             "no agent offers this build", 9));
  in.cells.push_back(pending(job(kVit, 1, Mode::kDefault, "a100", "nightly"), JobStatus::kLeased));
  const Report r = latency_and_speedup_report(in);
  EXPECT_EQ(headers(r.tables[0]),
            (std::vector<std::string>{"stable (torch 2.5.1) - eager", "stable (torch 2.5.1) - default",
                                      "nightly - eager", "nightly - default", "stable (torch 2.5.1) - default speedup",
                                      "nightly - default speedup"}));
  EXPECT_TRUE(r.tables[0].columns[2].torch_versions.empty());

  in.cells.clear();  // nothing ran yet
  EXPECT_EQ(headers(latency_and_speedup_report(in).tables[0])[0], "stable - eager");
}

TEST(ReportTorchVersions, EachRuntimeNamesTheTorchItsOwnResultsRecorded) {
  ReportInput in = seeds_like();
  in.matrix.batch_sizes = {1};
  in.matrix.modes = {Mode::kEager};
  in.matrix.torch_builds = {"bookworm"};
  in.matrix.runtimes = {Runtime::kLibtorch, Runtime::kPython};
  // Debian 12's LibTorch says 1.13.0, its python torch.__version__ 1.13.0a0.
  in.cells = {
      ok(job(kVit, 1, Mode::kEager, "a100", "bookworm", Runtime::kLibtorch), 9.0, 9.0, 1, "1.13.0"),
      ok(job(kVit, 1, Mode::kEager, "a100", "bookworm", Runtime::kPython), 9.5, 9.5, 2, "1.13.0a0"),
  };
  EXPECT_EQ(headers(latency_and_speedup_report(in).tables[0]),
            (std::vector<std::string>{"bookworm (torch 1.13.0) - libtorch - eager",
                                      "bookworm (torch 1.13.0a0) - python - eager"}));
}

TEST(ReportTorchVersions, OnlyResultsWithAPlaceInTheTablesCount) {
  ReportInput in = with_versions(seeds_like(), "stable", "2.6.0");
  in.cells.push_back(ok(job(kVit, 1, Mode::kEager, "v100"), 1.0, 1.0, 20, "2.4.0"));
  in.cells.push_back(ok(job("resnet18", 1, Mode::kEager), 1.0, 1.0, 21, "2.4.0"));
  in.cells.push_back(ok(job(kVit, 4, Mode::kEager), 1.0, 1.0, 22, "2.4.0"));
  EXPECT_EQ(build_report(in).tables[0].columns[0].header, "stable (torch 2.6.0) - eager");
}

}  // namespace
}  // namespace benchfleet::report

namespace benchfleet::report {
namespace {

// render_json writes its text directly: what it writes must read back as the values
// it was given, whatever the strings hold.
TEST(ReportJson, StringsAreEscapedAndNumbersReadBackExactly) {
  Report r;
  r.run_id = 42;
  r.run_name = "quote \" backslash \\ tab \t newline \n bell \x07 é";
  Table t;
  t.gpu = "a100";
  t.gpu_label = "A100";
  t.batch = 16;
  t.title = "A100 (batch size: 16)";
  Column latency;
  latency.key = "latency/stable/libtorch/eager";
  latency.header = "stable - eager";
  latency.torch_versions = {"2.6.0"};
  Column speedup = latency;
  speedup.kind = ColumnKind::kSpeedup;
  speedup.key = "speedup/stable/libtorch/default";
  t.columns = {latency, speedup};
  Cell a;
  a.text = "9.325";
  a.status = "ok";
  a.value = 9.324999999999999;
  a.ci_low_ms = 1e-7;
  a.ci_high_ms = 1e300;
  a.detail = std::string("invalid utf-8: \xff\xfe end");
  a.result_ids = {7, 9};
  a.n = 2;
  a.repetitions = {{1, "ok", 3.0, "", 7}, {2, "oom", std::nullopt, "phase=warmup", 9}};
  Cell b;
  b.text = "1.23x";
  b.status = "ok";
  b.value = 1.0;
  t.rows = {{"google/vit-base-patch16-224", "ViT", {a, b}}};
  t.geomeans = {{speedup.key, "stable - default speedup", std::nullopt, 0, 1, "Geomean: -"}};
  r.tables = {t};

  const std::string text = render_json(r);
  const auto j = nlohmann::json::parse(text, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << text;
  EXPECT_EQ(j["run_id"], 42);
  EXPECT_EQ(j["run_name"], r.run_name);
  EXPECT_EQ(j["stat"], "mean");
  const auto& cell = j["tables"][0]["rows"][0]["cells"][0];
  EXPECT_EQ(cell["value"].get<double>(), 9.324999999999999);
  EXPECT_EQ(cell["value_ms"].get<double>(), 9.324999999999999);
  EXPECT_EQ(cell["ci_low_ms"].get<double>(), 1e-7);
  EXPECT_EQ(cell["ci_high_ms"].get<double>(), 1e300);
  EXPECT_EQ(cell["detail"], "invalid utf-8: \xEF\xBF\xBD\xEF\xBF\xBD end") << "replaced, as json_response does";
  EXPECT_EQ(cell["result_ids"], nlohmann::json({7, 9}));
  EXPECT_EQ(cell["repetitions"][0]["value_ms"].get<double>(), 3.0);
  EXPECT_TRUE(cell["repetitions"][0]["value_ms"].is_number_float()) << "doubles stay doubles: 3.0, not 3";
  EXPECT_TRUE(cell["repetitions"][1]["value_ms"].is_null());
  const auto& speedup_cell = j["tables"][0]["rows"][0]["cells"][1];
  EXPECT_EQ(speedup_cell["value"].get<double>(), 1.0);
  EXPECT_TRUE(speedup_cell["value_ms"].is_null()) << "speedup cells have no latency";
  EXPECT_TRUE(j["tables"][0]["geomeans"][0]["value"].is_null());
  EXPECT_EQ(j["tables"][0]["columns"][1]["kind"], "speedup");
  EXPECT_EQ(j, to_json(r));
}

TEST(ReportJson, NonFiniteNumbersAreNull) {
  Report r;
  Table t;
  t.columns = {Column{}};
  Cell c;
  c.value = std::numeric_limits<double>::infinity();
  c.ci_low_ms = std::numeric_limits<double>::quiet_NaN();
  t.rows = {{"m", "M", {c}}};
  r.tables = {t};
  const auto j = nlohmann::json::parse(render_json(r));
  EXPECT_TRUE(j["tables"][0]["rows"][0]["cells"][0]["value"].is_null());
  EXPECT_TRUE(j["tables"][0]["rows"][0]["cells"][0]["ci_low_ms"].is_null());
}

}  // namespace
}  // namespace benchfleet::report
