// A run's report summarised per compiled mode (coordinator/rules/run_summary.h).
#include "coordinator/rules/run_summary.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/unit/report_cases.h"

namespace benchfleet::rules {
namespace {

using namespace rules::cases;  // NOLINT(google-build-using-namespace): the inputs of report_cases.h
using rules::build_report;
using rules::ReportInput;

CellResult with_compile(CellResult r, double compile_ms, std::int64_t peak_bytes) {
  r.compile_ms = compile_ms;
  r.peak_memory_bytes = peak_bytes;
  r.accuracy = AccuracyVerdict::kPass;
  return r;
}

CellResult with_peak(CellResult r, std::int64_t peak_bytes) {
  r.peak_memory_bytes = peak_bytes;
  return r;
}

// ViT and DETR at batch 1 and 4: eager 10 ms, default 5 ms at batch 1 (speedup 2); at batch 4
// ViT's default is 8 ms of 16 (2) and DETR's runs out of memory.
ReportInput two_batches() {
  ReportInput in;
  in.run_id = 4;
  in.run_name = "nightly";
  in.matrix.models = {kVit, kDetr};
  in.matrix.batch_sizes = {1, 4};
  in.matrix.modes = {Mode::kEager, Mode::kDefault};
  in.matrix.torch_builds = {"stable"};
  in.matrix.gpus = {"a100"};
  in.labels = {{kVit, "Image Classification/ViT"}, {kDetr, "Object Detection/DETR"}};
  constexpr std::int64_t kMiB = 1 << 20;
  in.cells = {
      with_peak(ok(job(kVit, 1, Mode::kEager), 10, 10), 400 * kMiB),
      with_compile(ok(job(kVit, 1, Mode::kDefault), 5, 5), 30'000, 200 * kMiB),
      with_peak(ok(job(kDetr, 1, Mode::kEager), 10, 10), 800 * kMiB),
      with_compile(ok(job(kDetr, 1, Mode::kDefault), 5, 5), 50'000, 800 * kMiB),
      ok(job(kVit, 4, Mode::kEager), 16, 16),
      with_compile(ok(job(kVit, 4, Mode::kDefault), 8, 8), 40'000, 300 * kMiB),
      ok(job(kDetr, 4, Mode::kEager), 30, 30),
      verdict(job(kDetr, 4, Mode::kDefault), ResultStatus::kOom, "phase=warmup"),
  };
  return in;
}

TEST(BuildSummary, OneFigureSetPerCompiledModeOverAllTables) {
  const auto s = summarize(build_report(two_batches()));
  ASSERT_EQ(s.size(), 1u) << "eager is the baseline, not a summarised mode";
  const ModeSummary& d = s[0];
  EXPECT_EQ(d.key, "stable/libtorch/default");
  EXPECT_EQ(d.build, "stable");
  EXPECT_EQ(d.mode, Mode::kDefault);
  ASSERT_TRUE(d.geomean_speedup.has_value());
  EXPECT_NEAR(*d.geomean_speedup, 2.0, 1e-12) << "three speedups of 2";
  EXPECT_EQ(d.speedup_covered, 3);
  EXPECT_EQ(d.speedup_total, 4);
  EXPECT_EQ(d.passed, 3);
  EXPECT_EQ(d.attempted, 4);
  EXPECT_EQ(d.oom, 1);
  EXPECT_NEAR(*d.pass_rate, 0.75, 1e-12);
  EXPECT_DOUBLE_EQ(*d.compile_ms_median, 40'000) << "of 30, 50 and 40 s";
  // Memory ratios where both sides recorded a peak: ViT 400/200 = 2, DETR 800/800 = 1.
  EXPECT_NEAR(*d.memory_ratio_geomean, std::sqrt(2.0), 1e-12);
}

TEST(BuildSummary, NothingMeasuredIsNullNotZero) {
  ReportInput in = two_batches();
  in.cells.clear();
  const auto s = summarize(build_report(in));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_FALSE(s[0].geomean_speedup.has_value());
  EXPECT_FALSE(s[0].pass_rate.has_value());
  EXPECT_FALSE(s[0].compile_ms_median.has_value());
  EXPECT_FALSE(s[0].memory_ratio_geomean.has_value());
  EXPECT_EQ(s[0].speedup_total, 4);
}

TEST(BuildSummary, AWrongSpeedupIsLeftOutAsTheReportsGeomeanLeavesItOut) {
  ReportInput in = two_batches();
  in.cells[1].accuracy = AccuracyVerdict::kWrong;  // ViT batch 1 default
  in.cells[1].stats = stats(2.5, 2.5);             // would be a speedup of 4
  const auto s = summarize(build_report(in));
  EXPECT_NEAR(*s[0].geomean_speedup, 2.0, 1e-12);
  EXPECT_EQ(s[0].speedup_covered, 2);
  EXPECT_EQ(s[0].wrong, 1);
}

TEST(BuildSummary, EachBuildAndModeHasItsOwn) {
  ReportInput in = two_batches();
  in.matrix.torch_builds = {"stable", "nightly"};
  in.matrix.modes = {Mode::kEager, Mode::kDefault, Mode::kMaxAutotune};
  const auto s = summarize(build_report(in));
  ASSERT_EQ(s.size(), 4u);
  std::vector<std::string> keys;
  for (const auto& m : s) keys.push_back(m.key);
  EXPECT_EQ(keys, (std::vector<std::string>{"stable/libtorch/default", "stable/libtorch/max-autotune",
                                            "nightly/libtorch/default", "nightly/libtorch/max-autotune"}));
  EXPECT_FALSE(s[3].geomean_speedup.has_value()) << "nothing of nightly ran";
}

}  // namespace
}  // namespace benchfleet::rules
