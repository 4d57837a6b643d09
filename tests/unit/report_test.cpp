// Report tables (coordinator/rules/report.h): columns, cells, geomeans, torch versions.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "coordinator/report/render.h"
#include "coordinator/rules/report.h"
#include "tests/unit/report_cases.h"

namespace benchfleet::rules {

// The renderers, over the rules' tables.
using report::render_csv;
using report::render_markdown;
using report::to_json;
namespace {

using nlohmann::json;
using namespace cases;  // NOLINT(google-build-using-namespace): the inputs of report_cases.h

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
  // The mean's CI (these results have no spread: it is the mean itself); TheCiIsTheShownStatistics
  // has one with a spread.
  EXPECT_DOUBLE_EQ(*b1.rows[0].cells[0].ci_low_ms, 9.325);
  EXPECT_DOUBLE_EQ(*b1.rows[0].cells[0].ci_high_ms, 9.325);
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
  EXPECT_DOUBLE_EQ(*c.ci_low_ms, 10.0);   // the means' CIs (no spread here: each is its mean),
  EXPECT_DOUBLE_EQ(*c.ci_high_ms, 12.0);  // widened: min of lows, max of highs
  EXPECT_EQ(c.result_ids, (std::vector<std::int64_t>{10, 11, 12}));
  ASSERT_EQ(c.repetitions.size(), 3u);
  EXPECT_EQ(c.repetitions[2].repetition, 2);
  EXPECT_EQ(c.repetitions[2].status, "oom");
  EXPECT_EQ(c.detail, "2/3 repetitions ok; rep 2: oom: phase=measure");
  // Two ok repetitions, two fresh processes: how far they moved (the oom one aside).
  ASSERT_TRUE(c.run_to_run_spread && c.run_to_run_cv);
  EXPECT_NEAR(*c.run_to_run_spread, 12.0 / 10.0 - 1, 1e-12);
  EXPECT_NEAR(*c.run_to_run_cv, std::abs(std::log(12.0) - std::log(10.0)) / std::sqrt(2.0), 1e-12);
  EXPECT_FALSE(r.tables[0].rows[0].cells[1].run_to_run_spread) << "one repetition";

  in.stat = Stat::kMedian;
  const Cell median = build_report(in).tables[0].rows[0].cells[0];
  EXPECT_EQ(median.text, "10.000");
  EXPECT_DOUBLE_EQ(*median.ci_low_ms, 8.9);  // the medians' CIs, widened the same way
  EXPECT_DOUBLE_EQ(*median.ci_high_ms, 11.1);
}

// A cell's CI is the CI of the statistic it shows, so that a view's number lies in its own
// interval and a comparison's ratio and verdict come from one statistic: a skewed result (mean
// 10.0, median 9.0) whose median CI, 8.9-9.1, does not hold its mean.
TEST(Report, TheCiIsTheShownStatistics) {
  ReportInput in = seeds_like();
  CellResult skewed = ok(job(kVit, 1, Mode::kEager), 10.0, 9.0, 1);
  skewed.stats->stddev_ms = 2.0;
  skewed.stats->iterations = 25;
  in.cells = {skewed};
  const Cell mean = build_report(in).tables[0].rows[0].cells[0];
  const double half = 2.064 * 2.0 / 5.0;  // t(24) x stddev / sqrt(25)
  EXPECT_NEAR(*mean.ci_low_ms, 10.0 - half, 1e-9);
  EXPECT_NEAR(*mean.ci_high_ms, 10.0 + half, 1e-9);
  EXPECT_LE(*mean.ci_low_ms, *mean.value);
  EXPECT_GE(*mean.ci_high_ms, *mean.value);
  in.stat = Stat::kMedian;
  const Cell median = build_report(in).tables[0].rows[0].cells[0];
  EXPECT_DOUBLE_EQ(*median.value, 9.0);
  EXPECT_DOUBLE_EQ(*median.ci_low_ms, 8.9);
  EXPECT_DOUBLE_EQ(*median.ci_high_ms, 9.1);
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
                     "latency_ms,10,ok,10.000,,,,,,100,mean,10,10,\r\n"),
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
}  // namespace benchfleet::rules
