// Accuracy and dtypes in the report: accuracy verdicts and noise flags on cells, geomeans that leave out
// wrong (and, when asked, flagged) speedups, pass rates, a table per dtype, and the compile,
// peak memory and memory ratio columns; and how the three renderers show them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coordinator/report/render.h"
#include "coordinator/rules/report.h"

namespace benchfleet::rules {

// The renderers under test, over the rules' tables.
using report::render_csv;
using report::render_json;
using report::render_markdown;
using report::to_json;
namespace {

using nlohmann::json;

constexpr const char* kVit = "google/vit-base-patch16-224";
constexpr const char* kDetr = "facebook/detr-resnet-50";
constexpr const char* kResnet = "microsoft/resnet-50";
constexpr const char* kBert = "bert-base-uncased";

JobSpec job(const std::string& model, Mode mode, int repetition = 0, Dtype dtype = Dtype::kFloat32, int batch = 1) {
  return {model, batch, mode, "stable", "a100", Runtime::kPython, repetition, dtype};
}

CellResult ok(JobSpec j, double ms, std::optional<AccuracyVerdict> accuracy = std::nullopt,
              std::vector<std::string> flags = {}) {
  CellResult c;
  c.job = std::move(j);
  c.job_status = JobStatus::kDone;
  c.result_status = ResultStatus::kOk;
  Statistics s;
  s.mean_ms = ms;
  s.median_ms = ms;
  s.ci_low_ms = ms - 0.1;
  s.ci_high_ms = ms + 0.1;
  s.iterations = 100;
  c.stats = s;
  c.accuracy = accuracy;
  c.flags = std::move(flags);
  return c;
}

CellResult verdict(JobSpec j, ResultStatus status, JobStatus job_status = JobStatus::kDone) {
  CellResult c;
  c.job = std::move(j);
  c.job_status = job_status;
  c.result_status = status;
  c.detail = "phase=warmup";
  return c;
}

// Two models, eager and default, python runtime, float32, batch 1.
ReportInput two_models() {
  ReportInput in;
  in.stat = Stat::kMean;  // the figures below are means
  in.run_id = 19;
  in.run_name = "accuracy";
  in.matrix.name = "accuracy";
  in.matrix.models = {kVit, kDetr};
  in.matrix.batch_sizes = {1};
  in.matrix.modes = {Mode::kEager, Mode::kDefault};
  in.matrix.torch_builds = {"stable"};
  in.matrix.gpus = {"a100"};
  in.matrix.runtimes = {Runtime::kPython};
  in.labels = {{kVit, "Image Classification/ViT"}, {kDetr, "Object Detection/DETR"}};
  in.cells = {
      ok(job(kVit, Mode::kEager), 9.325),
      ok(job(kVit, Mode::kDefault), 7.584, AccuracyVerdict::kWrong),
      ok(job(kDetr, Mode::kEager), 34.619),
      ok(job(kDetr, Mode::kDefault), 19.040, AccuracyVerdict::kPass),
  };
  in.cells[1].accuracy_error = 0.0491;
  in.cells[1].accuracy_tolerance = 1.0013e-4;
  return in;
}

// Columns of a table by key.
const Cell& cell(const Table& t, std::size_t row, const std::string& key) {
  for (std::size_t i = 0; i < t.columns.size(); ++i) {
    if (t.columns[i].key == key) return t.rows.at(row).cells.at(i);
  }
  ADD_FAILURE() << "no column " << key;
  static const Cell none;
  return none;
}

constexpr const char* kEagerLatency = "latency/stable/python/eager";
constexpr const char* kDefaultLatency = "latency/stable/python/default";
constexpr const char* kSpeedup = "speedup/stable/python/default";

TEST(ReportAccuracy, AWrongCellKeepsItsLatencyAndSpeedupButLeavesTheGeomean) {
  const Report r = build_report(two_models());
  const Table& t = r.tables.at(0);
  const Cell& wrong = cell(t, 0, kDefaultLatency);
  EXPECT_EQ(wrong.status, "ok");
  EXPECT_EQ(wrong.text, "7.584") << "the measured latency stays";
  EXPECT_EQ(wrong.accuracy, AccuracyVerdict::kWrong);
  EXPECT_EQ(wrong.detail, "accuracy wrong: error 0.0491, tolerance 0.0001");
  const Cell& speedup = cell(t, 0, kSpeedup);
  EXPECT_EQ(speedup.status, "ok");
  EXPECT_EQ(speedup.text, "1.23x");
  EXPECT_DOUBLE_EQ(*speedup.value, 9.325 / 7.584);
  EXPECT_EQ(speedup.accuracy, AccuracyVerdict::kWrong) << "the compiled side's";
  EXPECT_EQ(cell(t, 1, kSpeedup).accuracy, AccuracyVerdict::kPass);

  ASSERT_EQ(t.geomeans.size(), 1u);
  const Geomean& g = t.geomeans[0];
  EXPECT_EQ(g.covered, 1);
  EXPECT_EQ(g.total, 2);
  EXPECT_EQ(g.excluded_inaccurate, 1);
  EXPECT_EQ(g.excluded_flagged, 0);
  EXPECT_DOUBLE_EQ(*g.value, 34.619 / 19.040) << "DETR's speedup alone";
  EXPECT_EQ(g.text, "Geomean speedup stable - default: 1.82x (1/2; 1 wrong excluded)");
}

TEST(ReportAccuracy, EagerCellsHaveNoVerdict) {
  ReportInput in = two_models();
  in.cells[0].accuracy = AccuracyVerdict::kWrong;  // a verdict on eager means nothing
  const Report r = build_report(in);
  EXPECT_FALSE(cell(r.tables[0], 0, kEagerLatency).accuracy.has_value());
  EXPECT_EQ(cell(r.tables[0], 0, kEagerLatency).detail, "");
}

TEST(ReportAccuracy, RepetitionsCombineWrongFirstThenNondeterministicThenPassOnlyWhenAllPassed) {
  using V = AccuracyVerdict;
  struct Case {
    std::vector<std::optional<V>> reps;
    std::optional<V> expected;
  };
  const std::vector<Case> cases = {
      {{V::kPass, V::kPass}, V::kPass},
      {{V::kPass, V::kWrong, V::kEagerNondeterministic}, V::kWrong},
      {{V::kEagerNondeterministic, V::kPass}, V::kEagerNondeterministic},
      {{V::kPass, V::kUnchecked}, V::kUnchecked},
      {{V::kPass, std::nullopt}, V::kUnchecked},  // a repetition that was not checked
      {{std::nullopt, std::nullopt}, std::nullopt},
      {{V::kUnchecked}, V::kUnchecked},
  };
  for (const Case& c : cases) {
    ReportInput in = two_models();
    in.matrix.repetitions = static_cast<int>(c.reps.size());
    in.cells.clear();
    for (std::size_t i = 0; i < c.reps.size(); ++i) {
      in.cells.push_back(ok(job(kVit, Mode::kDefault, static_cast<int>(i)), 7.0, c.reps[i]));
    }
    const Report r = build_report(in);
    EXPECT_EQ(cell(r.tables[0], 0, kDefaultLatency).accuracy, c.expected) << ::testing::PrintToString(c.reps);
  }
}

TEST(ReportAccuracy, OnlyOkRepetitionsCount) {
  ReportInput in = two_models();
  in.matrix.repetitions = 2;
  in.cells = {ok(job(kVit, Mode::kDefault, 0), 7.0, AccuracyVerdict::kPass, {}),
              verdict(job(kVit, Mode::kDefault, 1), ResultStatus::kError)};
  in.cells[1].accuracy = AccuracyVerdict::kWrong;
  in.cells[1].flags = {"high_cv"};
  in.cells[1].compile_ms = 99'000;
  const Report report = build_report(in);
  const Cell& c = cell(report.tables[0], 0, kDefaultLatency);
  EXPECT_EQ(c.accuracy, AccuracyVerdict::kPass);
  EXPECT_TRUE(c.flags.empty());
  EXPECT_FALSE(c.compile_ms.has_value());
}

TEST(ReportAccuracy, EagerNondeterministicIsExcludedAndNamedInTheGeomean) {
  ReportInput in = two_models();
  in.cells[1].accuracy = AccuracyVerdict::kEagerNondeterministic;
  in.cells[3].accuracy = AccuracyVerdict::kWrong;
  const Report r = build_report(in);
  const Geomean& g = r.tables[0].geomeans[0];
  EXPECT_EQ(g.covered, 0);
  EXPECT_EQ(g.excluded_inaccurate, 2);
  EXPECT_FALSE(g.value.has_value());
  EXPECT_EQ(g.text, "Geomean speedup stable - default: - (0/2; 1 wrong, 1 eager nondeterministic excluded)");
}

TEST(ReportFlags, CellsCarryTheUnionOfTheirOkRepetitionsFlagsSorted) {
  ReportInput in = two_models();
  in.matrix.repetitions = 2;
  in.cells = {ok(job(kVit, Mode::kEager, 0), 9.0, std::nullopt, {"high_cv", "throttled"}),
              ok(job(kVit, Mode::kEager, 1), 9.0, std::nullopt, {"ci_not_met", "high_cv"}),
              ok(job(kVit, Mode::kDefault, 0), 7.0, AccuracyVerdict::kPass, {"clock_drop"})};
  const Table t = build_report(in).tables[0];
  EXPECT_EQ(cell(t, 0, kEagerLatency).flags, (std::vector<std::string>{"ci_not_met", "high_cv", "throttled"}));
  EXPECT_EQ(cell(t, 0, kEagerLatency).detail, "2/2 repetitions ok; flags: ci_not_met, high_cv, throttled");
  EXPECT_EQ(cell(t, 0, kSpeedup).flags, (std::vector<std::string>{"ci_not_met", "clock_drop", "high_cv", "throttled"}))
      << "both sides";
  EXPECT_EQ(cell(t, 0, kSpeedup).detail,
            "eager 9.000 ms / default 7.000 ms; flags: ci_not_met, clock_drop, high_cv, "
            "throttled");
}

TEST(ReportFlags, FlaggedSpeedupsStayInTheGeomeanUnlessExcludeFlagged) {
  ReportInput in = two_models();
  in.cells[1].accuracy = AccuracyVerdict::kPass;
  in.cells[2].flags = {"high_cv"};  // DETR's eager side
  Report r = build_report(in);
  EXPECT_FALSE(r.exclude_flagged);
  EXPECT_EQ(r.tables[0].geomeans[0].covered, 2);
  EXPECT_EQ(r.tables[0].geomeans[0].excluded_flagged, 0);
  EXPECT_EQ(r.tables[0].geomeans[0].text, "Geomean speedup stable - default: 1.50x (2/2)");

  in.exclude_flagged = true;
  r = build_report(in);
  EXPECT_TRUE(r.exclude_flagged);
  const Geomean& g = r.tables[0].geomeans[0];
  EXPECT_EQ(g.covered, 1);
  EXPECT_EQ(g.excluded_flagged, 1);
  EXPECT_DOUBLE_EQ(*g.value, 9.325 / 7.584);
  EXPECT_EQ(g.text, "Geomean speedup stable - default: 1.23x (1/2; 1 flagged excluded)");
  EXPECT_EQ(cell(r.tables[0], 1, kSpeedup).text, "1.82x") << "the speedup is still shown";

  // Wrong and flagged: counted once, as inaccurate.
  in.cells[1].accuracy = AccuracyVerdict::kWrong;
  in.cells[1].flags = {"clock_drop"};
  const Geomean g2 = build_report(in).tables[0].geomeans[0];
  EXPECT_EQ(g2.covered, 0);
  EXPECT_EQ(g2.excluded_inaccurate, 1);
  EXPECT_EQ(g2.excluded_flagged, 1);
  EXPECT_EQ(g2.text, "Geomean speedup stable - default: - (0/2; 1 wrong, 1 flagged excluded)");
}

TEST(ReportPassRate, CountsCellsOkAndAccurateOverCellsAttempted) {
  ReportInput in = two_models();
  in.matrix.models = {kVit, kDetr, kResnet, kBert, "unlisted/a", "unlisted/b"};
  in.matrix.modes = {Mode::kEager, Mode::kTorchscript, Mode::kDefault, Mode::kMaxAutotune};
  in.cells = {
      ok(job(kVit, Mode::kDefault), 7.0, AccuracyVerdict::kPass),
      ok(job(kDetr, Mode::kDefault), 7.0, AccuracyVerdict::kWrong),
      ok(job(kResnet, Mode::kDefault), 7.0),  // not checked
      verdict(job(kBert, Mode::kDefault), ResultStatus::kOom),
      CellResult{job("unlisted/a", Mode::kDefault), JobStatus::kFailed, std::nullopt, std::nullopt, "", 0, ""},
      CellResult{job("unlisted/b", Mode::kDefault), JobStatus::kQueued, std::nullopt, std::nullopt, "", 0, ""},
      ok(job(kVit, Mode::kMaxAutotune), 7.0, AccuracyVerdict::kPass),
      ok(job(kDetr, Mode::kMaxAutotune), 7.0, AccuracyVerdict::kPass),
      ok(job(kResnet, Mode::kMaxAutotune), 7.0, AccuracyVerdict::kEagerNondeterministic),
      verdict(job(kBert, Mode::kMaxAutotune), ResultStatus::kUnsupported),
  };
  const Table t = build_report(in).tables[0];
  ASSERT_EQ(t.pass_rates.size(), 2u) << "one per compiled mode: not eager, not torchscript";
  const PassRate& d = t.pass_rates[0];
  EXPECT_EQ(d.column, kDefaultLatency);
  EXPECT_EQ(d.header, "stable - default");
  EXPECT_EQ(d.passed, 1);
  EXPECT_EQ(d.attempted, 5) << "pass, wrong, unchecked, OOM, failed; not the queued one";
  EXPECT_EQ(d.oom, 1);
  EXPECT_EQ(d.errors, 1);
  EXPECT_EQ(d.wrong, 1);
  EXPECT_EQ(d.unjudged, 1) << "unchecked";
  EXPECT_EQ(d.text, "Pass rate stable - default: 1/5 (20%): 1 OOM, 1 error, 1 wrong, 1 not judged")
      << "an OOM is not read as an accuracy failure";
  const PassRate& m = t.pass_rates[1];
  EXPECT_EQ(m.column, "latency/stable/python/max-autotune");
  EXPECT_EQ(m.passed, 2);
  EXPECT_EQ(m.attempted, 3);
  EXPECT_EQ(m.unjudged, 1) << "eager nondeterministic";
  EXPECT_EQ(m.unsupported, 1) << "counted apart: it never ran, so it is not attempted";
  EXPECT_EQ(m.text, "Pass rate stable - max-autotune: 2/3 (66%): 1 not judged, 1 unsupported") << "rounded down";
}

TEST(ReportPassRate, NothingAttemptedReadsAsADash) {
  ReportInput in = two_models();
  in.cells.clear();
  const Table t = build_report(in).tables[0];
  ASSERT_EQ(t.pass_rates.size(), 1u);
  EXPECT_EQ(t.pass_rates[0].attempted, 0);
  EXPECT_EQ(t.pass_rates[0].text, "Pass rate stable - default: 0/0 (-)");
}

TEST(ReportDtype, ATablePerGpuBatchAndDtypeInMatrixOrder) {
  ReportInput in = two_models();
  in.matrix.batch_sizes = {1, 16};
  in.matrix.dtypes = {Dtype::kFloat16, Dtype::kFloat32};
  in.cells = {
      ok(job(kVit, Mode::kEager, 0, Dtype::kFloat32), 9.0), ok(job(kVit, Mode::kEager, 0, Dtype::kFloat16), 5.0),
      ok(job(kVit, Mode::kEager, 0, Dtype::kFloat16, 16), 50.0),
      ok(job(kVit, Mode::kEager, 0, Dtype::kBfloat16), 1.0),  // not in the matrix
  };
  in.cells[0].torch_version = "2.6.0";
  in.cells[1].torch_version = "2.5.1";
  const Report r = build_report(in);
  std::vector<std::string> titles;
  for (const Table& t : r.tables) titles.push_back(t.title);
  EXPECT_EQ(titles, (std::vector<std::string>{"A100 (batch size: 1, float16)", "A100 (batch size: 1, float32)",
                                              "A100 (batch size: 16, float16)", "A100 (batch size: 16, float32)"}));
  EXPECT_EQ(r.tables[0].dtype, Dtype::kFloat16);
  EXPECT_EQ(r.tables[1].dtype, Dtype::kFloat32);
  EXPECT_EQ(cell(r.tables[0], 0, kEagerLatency).text, "5.000");
  EXPECT_EQ(cell(r.tables[1], 0, kEagerLatency).text, "9.000");
  EXPECT_EQ(cell(r.tables[2], 0, kEagerLatency).text, "50.000");
  EXPECT_EQ(cell(r.tables[3], 0, kEagerLatency).text, "-");
  // Each table names the torch its own results recorded.
  EXPECT_EQ(r.tables[0].columns[0].header, "stable (torch 2.5.1) - eager");
  EXPECT_EQ(r.tables[1].columns[0].header, "stable (torch 2.6.0) - eager");
  EXPECT_EQ(r.tables[0].columns[0].key, r.tables[1].columns[0].key) << "keys do not name the dtype";

  in.matrix.dtypes = {Dtype::kBfloat16};
  EXPECT_EQ(build_report(in).tables[0].title, "A100 (batch size: 1, bfloat16)") << "not the default: named";
  in.matrix.dtypes = {Dtype::kFloat32};
  EXPECT_EQ(build_report(in).tables[0].title, "A100 (batch size: 1)");
  in.matrix.dtypes.clear();  // a matrix stored before dtypes existed
  ASSERT_EQ(build_report(in).tables.size(), 2u);
  EXPECT_EQ(build_report(in).tables[0].dtype, Dtype::kFloat32);
}

// ViT: eager 1000 MiB, default 800 MiB with a 12.4 s cold compile; DETR: eager 2 GiB, default
// warm 850 ms compile, over two repetitions with different peaks.
ReportInput compile_and_memory() {
  ReportInput in = two_models();
  in.matrix.repetitions = 2;
  const std::int64_t mib = 1 << 20;
  in.cells = {ok(job(kVit, Mode::kEager), 9.0), ok(job(kVit, Mode::kDefault), 7.0, AccuracyVerdict::kPass),
              ok(job(kDetr, Mode::kEager), 30.0), ok(job(kDetr, Mode::kDefault, 0), 20.0, AccuracyVerdict::kPass),
              ok(job(kDetr, Mode::kDefault, 1), 20.0, AccuracyVerdict::kPass)};
  in.cells[0].peak_memory_bytes = 1000 * mib;
  in.cells[1].peak_memory_bytes = 800 * mib;
  in.cells[1].compile_ms = 12'400;
  in.cells[1].compile_cache = "cold";
  in.cells[1].recompiles = 0;
  in.cells[2].peak_memory_bytes = 2048 * mib;
  in.cells[3].peak_memory_bytes = 1024 * mib;
  in.cells[3].compile_ms = 800;
  in.cells[3].compile_cache = "warm";
  in.cells[3].recompiles = 1;
  in.cells[4].peak_memory_bytes = 1536 * mib;
  in.cells[4].compile_ms = 900;
  in.cells[4].compile_cache = "warm";
  in.cells[4].recompiles = 3;
  return in;
}

TEST(ReportCompileAndMemory, ColumnsFollowTheSpeedupsWithKeysKindsAndHeaders) {
  const Table t = build_report(compile_and_memory()).tables[0];
  std::vector<std::string> keys, headers, kinds;
  for (const Column& c : t.columns) {
    keys.push_back(c.key);
    headers.push_back(c.header);
    kinds.push_back(std::string(to_string(c.kind)));
  }
  EXPECT_EQ(keys, (std::vector<std::string>{kEagerLatency, kDefaultLatency, kSpeedup, "compile/stable/python/default",
                                            "memory/stable/python/eager", "memory/stable/python/default",
                                            "memory_ratio/stable/python/default"}));
  EXPECT_EQ(headers, (std::vector<std::string>{"stable - eager", "stable - default", "stable - default speedup",
                                               "stable - default compile", "stable - eager peak MB",
                                               "stable - default peak MB", "stable - default memory ratio"}));
  EXPECT_EQ(kinds, (std::vector<std::string>{"latency_ms", "latency_ms", "speedup", "compile_ms", "peak_memory_mb",
                                             "peak_memory_mb", "memory_ratio"}));
}

TEST(ReportCompileAndMemory, ValuesAndTexts) {
  const Table t = build_report(compile_and_memory()).tables[0];
  // ViT: one repetition.
  const Cell& compile = cell(t, 0, "compile/stable/python/default");
  EXPECT_EQ(compile.status, "ok");
  EXPECT_DOUBLE_EQ(*compile.value, 12'400);
  EXPECT_EQ(compile.text, "12.4 s");
  EXPECT_EQ(compile.compile_cache, "cold");
  EXPECT_EQ(cell(t, 0, "memory/stable/python/eager").text, "1000");
  EXPECT_DOUBLE_EQ(*cell(t, 0, "memory/stable/python/eager").value, 1000);
  EXPECT_EQ(*cell(t, 0, "memory/stable/python/eager").peak_memory_bytes, 1000LL << 20);
  const Cell& ratio = cell(t, 0, "memory_ratio/stable/python/default");
  EXPECT_DOUBLE_EQ(*ratio.value, 1000.0 / 800.0);
  EXPECT_EQ(ratio.text, "1.25x");
  EXPECT_EQ(ratio.detail, "eager 1000 MB / default 800 MB");

  // DETR: compile the mean of the ok repetitions, memory and recompiles the max.
  const Cell& latency = cell(t, 1, kDefaultLatency);
  EXPECT_DOUBLE_EQ(*latency.compile_ms, 850);
  EXPECT_EQ(latency.compile_cache, "warm");
  EXPECT_EQ(*latency.peak_memory_bytes, 1536LL << 20);
  EXPECT_EQ(*latency.recompiles, 3);
  EXPECT_EQ(cell(t, 1, "compile/stable/python/default").text, "850 ms (warm)");
  EXPECT_EQ(cell(t, 1, "compile/stable/python/default").detail, "cache warm; 3 recompiles");
  EXPECT_EQ(cell(t, 1, "memory/stable/python/default").text, "1536");
  EXPECT_DOUBLE_EQ(*cell(t, 1, "memory_ratio/stable/python/default").value, 2048.0 / 1536.0);
  EXPECT_EQ(cell(t, 1, "memory_ratio/stable/python/default").text, "1.33x");
  // Eager has no compile; its latency cell still carries its memory.
  EXPECT_FALSE(cell(t, 1, kEagerLatency).compile_ms.has_value());
  EXPECT_EQ(*cell(t, 1, kEagerLatency).peak_memory_bytes, 2048LL << 20);
}

TEST(ReportCompileAndMemory, CachesThatDifferReadMixedAndMissingValuesAreUnavailable) {
  ReportInput in = compile_and_memory();
  in.cells[4].compile_cache = "cold";
  in.cells[0].peak_memory_bytes.reset();  // ViT eager: no memory reading
  in.cells[1].compile_ms.reset();
  const Table t = build_report(in).tables[0];
  EXPECT_EQ(cell(t, 1, kDefaultLatency).compile_cache, "mixed");
  EXPECT_EQ(cell(t, 1, "compile/stable/python/default").text, "850 ms (mixed)");
  EXPECT_EQ(cell(t, 0, "compile/stable/python/default").status, "unavailable");
  EXPECT_EQ(cell(t, 0, "compile/stable/python/default").text, "-");
  EXPECT_EQ(cell(t, 0, "memory/stable/python/eager").status, "unavailable");
  EXPECT_EQ(cell(t, 0, "memory_ratio/stable/python/default").status, "unavailable");
  EXPECT_EQ(cell(t, 0, "memory_ratio/stable/python/default").detail, "eager peak: -, default peak: 800 MB");
}

TEST(ReportCompileAndMemory, WithoutEagerThereIsNoRatioButCompileAndMemoryStay) {
  ReportInput in = compile_and_memory();
  in.matrix.modes = {Mode::kDefault};
  const Table t = build_report(in).tables[0];
  std::vector<std::string> kinds;
  for (const Column& c : t.columns) kinds.push_back(std::string(to_string(c.kind)));
  EXPECT_EQ(kinds, (std::vector<std::string>{"latency_ms", "compile_ms", "peak_memory_mb"}));
}

// ---- renderers ----------------------------------------------------------------------------------

ReportInput everything() {
  ReportInput in = compile_and_memory();
  in.matrix.repetitions = 1;
  in.cells.pop_back();
  in.cells[1].accuracy = AccuracyVerdict::kWrong;
  in.cells[2].flags = {"high_cv", "ci_not_met"};
  return in;
}

TEST(ReportRenderers, MarkdownMarksWrongAndFlaggedCellsAndAddsTheCompileAndMemoryTable) {
  const std::string expected =
      "# accuracy (run 19, mean latency in ms)\n"
      "\n"
      "### A100 (batch size: 1)\n"
      "\n"
      "| **Task/Model** | **stable - eager** | **stable - default** | **stable - default speedup** |\n"
      "|:---:|:---:|:---:|:---:|\n"
      "| Image Classification/ViT | 9.000 | 7.000 (wrong) | 1.29x (wrong) |\n"
      "| Object Detection/DETR | 30.000*† | 20.000 | 1.50x*† |\n"
      "\n"
      "\\* flagged as noisy: high\\_cv (the samples' CV, isolated spikes aside, above the run's noise.max\\_cv)\n"
      "† stopped at its budget: the iteration or time bound stopped the loop with its CI wider than the target "
      "(ci\\_not\\_met; measured, "
      "not noisy)\n"
      "\n"
      "- Geomean speedup stable - default: 1.50x (1/2; 1 wrong excluded)\n"
      "- Pass rate stable - default: 1/2 (50%): 1 wrong\n"
      "\n"
      "#### Compile time and memory, A100 (batch size: 1)\n"
      "\n"
      "| **Task/Model** | **stable - default compile** | **stable - eager peak MB** | **stable - default peak MB** |"
      " **stable - default memory ratio** |\n"
      "|:---:|:---:|:---:|:---:|:---:|\n"
      "| Image Classification/ViT | 12.4 s | 1000 | 800 | 1.25x |\n"
      "| Object Detection/DETR | 800 ms (warm) | 2048 | 1024 | 2.00x |\n";
  EXPECT_EQ(render_markdown(build_report(everything())), expected);
}

TEST(ReportRenderers, MarkdownNamesEagerNondeterministicCells) {
  ReportInput in = everything();
  in.cells[1].accuracy = AccuracyVerdict::kEagerNondeterministic;
  const std::string md = render_markdown(build_report(in));
  EXPECT_NE(md.find("| 7.000 (eager nondeterministic) | 1.29x (eager nondeterministic) |"), std::string::npos) << md;
}

TEST(ReportRenderers, MarkdownMarksOnlyCellsWithANumber) {
  ReportInput in = everything();
  in.cells[2] = verdict(job(kDetr, Mode::kEager), ResultStatus::kOom);  // DETR's speedup is "-"
  in.cells[3].flags = {"throttled"};
  const Report r = build_report(in);
  EXPECT_EQ(cell(r.tables[0], 1, kSpeedup).flags, (std::vector<std::string>{"throttled"})) << "the JSON keeps it";
  const std::string md = render_markdown(r);
  EXPECT_NE(md.find("| Object Detection/DETR | OOM | 20.000* | - |"), std::string::npos) << md;
}

TEST(ReportRenderers, CsvCarriesDtypeAccuracyFlagsCompileAndMemory) {
  ReportInput in = everything();
  in.matrix.dtypes = {Dtype::kFloat32};
  const std::string csv = render_csv(build_report(in));
  for (const char* line : {
           "a100,1,float32,Image Classification/ViT,google/vit-base-patch16-224,stable - default,stable,python,default,"
           "latency_ms,7,ok,7.000,wrong,,12400,cold,800,142.85714285714286,mean,7,7,\r\n",
           "a100,1,float32,Image Classification/ViT,google/vit-base-patch16-224,stable - default speedup,stable,python,"
           "default,speedup,1.2857142857142858,ok,1.29x,wrong,,,,,,mean,,,faster\r\n",
           "a100,1,float32,Object Detection/DETR,facebook/detr-resnet-50,stable - eager,stable,python,eager,latency_ms,"
           "30,ok,30.000,,ci_not_met;high_cv,,,2048,33.333333333333336,mean,30,30,\r\n",
           "a100,1,float32,Object Detection/DETR,facebook/detr-resnet-50,stable - default compile,stable,python,"
           "default,compile_ms,800,ok,800 ms (warm),,,800,warm,,,mean,,,\r\n",
           "a100,1,float32,Object Detection/DETR,facebook/detr-resnet-50,stable - default peak MB,stable,python,"
           "default,peak_memory_mb,1024,ok,1024,,,,,1024,,mean,,,\r\n",
           "a100,1,float32,Object Detection/DETR,facebook/detr-resnet-50,stable - default memory ratio,stable,python,"
           "default,memory_ratio,2,ok,2.00x,,,,,,,mean,,,\r\n",
       }) {
    EXPECT_NE(csv.find(line), std::string::npos) << line << "\n" << csv;
  }
}

TEST(ReportRenderers, JsonCarriesEveryNewField) {
  ReportInput in = everything();
  in.exclude_flagged = true;
  in.matrix.dtypes = {Dtype::kFloat32, Dtype::kAmp};
  const Report r = build_report(in);
  const std::string text = render_json(r);
  const json j = json::parse(text);
  EXPECT_EQ(j, to_json(r));
  EXPECT_EQ(j["exclude_flagged"], true);
  ASSERT_EQ(j["tables"].size(), 2u);
  const json& t = j["tables"][0];
  EXPECT_EQ(t["dtype"], "float32");
  EXPECT_EQ(t["title"], "A100 (batch size: 1, float32)");
  EXPECT_EQ(j["tables"][1]["dtype"], "amp");
  EXPECT_EQ(t["columns"][3]["kind"], "compile_ms");
  EXPECT_EQ(t["columns"][4]["kind"], "peak_memory_mb");
  EXPECT_EQ(t["columns"][6]["kind"], "memory_ratio");

  const json& vit_default = t["rows"][0]["cells"][1];
  EXPECT_EQ(vit_default["accuracy"], "wrong");
  EXPECT_EQ(vit_default["flags"], json::array());
  EXPECT_EQ(vit_default["compile_ms"].get<double>(), 12'400.0);
  EXPECT_EQ(vit_default["compile_cache"], "cold");
  EXPECT_EQ(vit_default["peak_memory_bytes"], 800LL << 20);
  EXPECT_EQ(vit_default["recompiles"], 0);
  const json& detr_eager = t["rows"][1]["cells"][0];
  EXPECT_TRUE(detr_eager["accuracy"].is_null());
  EXPECT_EQ(detr_eager["flags"], json({"ci_not_met", "high_cv"}));
  EXPECT_TRUE(detr_eager["compile_cache"].is_null());
  EXPECT_TRUE(detr_eager["recompiles"].is_null());
  const json& detr_speedup = t["rows"][1]["cells"][2];
  EXPECT_EQ(detr_speedup["accuracy"], "pass");
  EXPECT_EQ(detr_speedup["flags"], json({"ci_not_met", "high_cv"}));
  const json& detr_memory = t["rows"][1]["cells"][4];
  EXPECT_EQ(detr_memory["value"].get<double>(), 2048.0);
  EXPECT_EQ(detr_memory["peak_memory_bytes"], 2048LL << 20);

  ASSERT_EQ(t["geomeans"].size(), 1u);
  EXPECT_EQ(t["geomeans"][0]["excluded_inaccurate"], 1);
  EXPECT_EQ(t["geomeans"][0]["excluded_flagged"], 1);
  EXPECT_EQ(t["geomeans"][0]["covered"], 0);
  EXPECT_EQ(t["geomeans"][0]["text"], "Geomean speedup stable - default: - (0/2; 1 wrong, 1 flagged excluded)");
  EXPECT_EQ(t["pass_rates"], json::array({{{"column", kDefaultLatency},
                                           {"header", "stable - default"},
                                           {"passed", 1},
                                           {"attempted", 2},
                                           {"oom", 0},
                                           {"errors", 0},
                                           {"wrong", 1},
                                           {"unjudged", 0},
                                           {"unsupported", 0},
                                           {"text", "Pass rate stable - default: 1/2 (50%): 1 wrong"}}}));
}

}  // namespace
}  // namespace benchfleet::rules
