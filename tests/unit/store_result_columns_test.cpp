// result_columns (coordinator/store/result_columns.h): what a posted result puts in the columns
// reports read, per runtime and mode.
#include "coordinator/store/result_columns.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/store_test_results.h"

namespace benchfleet::store {
namespace {

JobSpec job(Runtime runtime, Mode mode) {
  JobSpec j;
  j.model = "torchvision/resnet18";
  j.batch = 1;
  j.mode = mode;
  j.torch_build = "debian13";
  j.gpu = "cpu";
  j.runtime = runtime;
  return j;
}

TEST(ResultColumns, PythonCompiledTakesTheRunnersTelemetry) {
  JobResult r = testing::ok_result(2);
  r.telemetry = {{"compile_ms", 21500.5}, {"inductor_cache", "cold"}, {"recompiles", 2}};
  r.memory.emplace();
  r.memory->peak_rss_bytes = 512 << 20;
  r.accuracy = AccuracyInfo{AccuracyVerdict::kWrong, 0.049, 4.3e-7, 1.0129e-4, 0.9988, "output0", "too far"};
  const ResultColumns c = result_columns(job(Runtime::kPython, Mode::kDefault), r, NoiseSpec{});
  EXPECT_EQ(c.accuracy, "wrong");
  EXPECT_EQ(c.accuracy_error, 0.049);
  EXPECT_EQ(c.accuracy_tolerance, 1.0129e-4);
  EXPECT_EQ(c.compile_ms, 21500.5);
  EXPECT_EQ(c.compile_cache, "cold");
  EXPECT_EQ(c.peak_memory_bytes, 512 << 20) << "no CUDA allocator figure: the process's peak RSS";
  EXPECT_EQ(c.recompiles, 2);
  EXPECT_EQ(c.flags, "");
}

TEST(ResultColumns, LibtorchCompiledTakesTheExportAndTheArtifactCache) {
  JobResult r = testing::ok_result(2);
  r.export_s = 12.5;
  r.memory.emplace();
  r.memory->peak_allocated_bytes = 3'000'000;
  r.memory->peak_reserved_bytes = 4'000'000;
  r.memory->peak_rss_bytes = 900'000'000;
  const JobSpec aoti = job(Runtime::kLibtorch, Mode::kDefault);
  ResultColumns c = result_columns(aoti, r, NoiseSpec{});
  EXPECT_EQ(c.compile_ms, 12500);
  EXPECT_EQ(c.compile_cache, "cold") << "timed export, no cache reading";
  EXPECT_EQ(c.peak_memory_bytes, 3'000'000) << "the CUDA allocator's peak first";
  EXPECT_FALSE(c.recompiles.has_value());
  EXPECT_FALSE(c.accuracy.has_value());

  r.telemetry = {{"artifact_cached", false}, {"export_inductor_cache", "warm"}};
  EXPECT_EQ(result_columns(aoti, r, NoiseSpec{}).compile_cache, "warm");
  r.telemetry = {{"artifact_cached", true}, {"export_inductor_cache", "cold"}};
  EXPECT_EQ(result_columns(aoti, r, NoiseSpec{}).compile_cache, "warm") << "the package came from the agent's cache";
  r.export_s.reset();
  r.telemetry = nlohmann::json::object();
  c = result_columns(aoti, r, NoiseSpec{});
  EXPECT_FALSE(c.compile_ms.has_value());
  EXPECT_FALSE(c.compile_cache.has_value());
}

TEST(ResultColumns, EagerAndTorchscriptHaveNoCompileColumns) {
  JobResult r = testing::ok_result(2);
  r.export_s = 3.0;  // the TorchScript export: not a compile the report shows
  r.telemetry = {{"compile_ms", 5.0}, {"inductor_cache", "none"}, {"artifact_cached", true}};
  for (const JobSpec& j : {job(Runtime::kLibtorch, Mode::kTorchscript), job(Runtime::kLibtorch, Mode::kEager),
                           job(Runtime::kPython, Mode::kEager)}) {
    SCOPED_TRACE(std::string(to_string(j.runtime)) + "/" + std::string(to_string(j.mode)));
    const ResultColumns c = result_columns(j, r, NoiseSpec{});
    EXPECT_FALSE(c.compile_ms.has_value());
    EXPECT_FALSE(c.compile_cache.has_value());
  }
}

TEST(ResultColumns, AnUncheckedVerdictHasNoFigures) {
  JobResult r = testing::ok_result(2);
  r.accuracy = AccuracyInfo{AccuracyVerdict::kUnchecked, 0, 0, 0, std::nullopt, "", "no reference"};
  const ResultColumns c = result_columns(job(Runtime::kLibtorch, Mode::kDefault), r, NoiseSpec{});
  EXPECT_EQ(c.accuracy, "unchecked");
  EXPECT_FALSE(c.accuracy_error.has_value());
  EXPECT_FALSE(c.accuracy_tolerance.has_value());
}

TEST(ResultColumns, FlagsFollowTheRunsNoiseThresholds) {
  JobResult r = testing::ok_result(2);
  r.stats->cv = 0.15;
  r.stop_reason = StopReason::kMaxIterations;
  r.telemetry = {{"recompiles", -1}};  // not a count: left out
  const JobSpec j = job(Runtime::kPython, Mode::kDefault);
  ResultColumns c = result_columns(j, r, NoiseSpec{});
  EXPECT_EQ(c.flags, "high_cv,ci_not_met");
  EXPECT_FALSE(c.recompiles.has_value());
  EXPECT_EQ(split_flags(c.flags), (std::vector<std::string>{"high_cv", "ci_not_met"}));
  EXPECT_EQ(result_columns(j, r, NoiseSpec{0.2, 0.1}).flags, "ci_not_met");
  r.status = ResultStatus::kInvalid;
  EXPECT_EQ(result_columns(j, r, NoiseSpec{}).flags, "");
}

TEST(ResultColumns, SplitFlagsReadsTheColumnBack) {
  EXPECT_TRUE(split_flags("").empty());
  EXPECT_EQ(split_flags("throttled"), std::vector<std::string>{"throttled"});
  EXPECT_EQ(split_flags("high_cv,,clock_drop,"), (std::vector<std::string>{"high_cv", "clock_drop"}));
}

}  // namespace
}  // namespace benchfleet::store
