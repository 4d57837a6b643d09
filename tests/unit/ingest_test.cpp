// What a posted result becomes (coordinator/rules/ingest.h), decided without a store: refused,
// naming the field, or the plan the store writes (the columns reports read, per runtime and mode;
// the fingerprint; the series point; the OOM pruning).
#include "coordinator/rules/ingest.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/codecs.h"
#include "coordinator/rules/fingerprint_diff.h"
#include "coordinator/rules/series_order.h"
#include "coordinator/rules/tokens.h"

#include "tests/unit/store_test_results.h"

namespace benchfleet::rules {
namespace {

namespace testing = store::testing;

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
  // Its CI (zero wide) meets the run's target: no ci_not_met for stopping at the time bound.
  const ResultColumns c = result_columns(job(Runtime::kPython, Mode::kDefault), r, NoiseSpec{}, 0.02);
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

// An ok result as a worker posts it: samples, their statistics, a stop reason and a fingerprint.
JobResult posted_ok(double ms) {
  JobResult r = testing::ok_result(ms);
  r.stop_reason = StopReason::kMaxTime;
  r.environment = {{"torch_version", "2.11.0+cu130"}, {"torch_git", "0123abc"}, {"cpu_threads", 2}};
  return r;
}

TEST(IngestPlan, AnOkResultGetsItsColumnsFingerprintAndSeriesPoint) {
  const JobSpec j = job(Runtime::kLibtorch, Mode::kEager);
  const MatrixSpec run;
  const JobResult r = posted_ok(2);
  const Result<IngestPlan> plan = plan_ingest(r, j, run);
  ASSERT_TRUE(plan.ok()) << plan.error().describe();
  EXPECT_EQ(plan->columns, result_columns(j, r, run.noise, run.measurement.target_ci_rel_width));
  EXPECT_EQ(plan->fingerprint, speed_fingerprint(r.environment));
  EXPECT_EQ(plan->torch_version, "2.11.0+cu130");
  EXPECT_FALSE(plan->implies_oom);
  ASSERT_TRUE(plan->series_point.has_value());
  const SeriesPointPlan& p = *plan->series_point;
  EXPECT_EQ(p.status, ResultStatus::kOk);
  EXPECT_EQ(p.median_ms, 2.0);
  EXPECT_EQ(p.ci_low_ms, 2.0);
  EXPECT_EQ(p.ci_high_ms, 2.0);
  EXPECT_EQ(p.torch_git, "0123abc");
  EXPECT_EQ(p.version_key, version_sort_key("2.11.0+cu130"));
  EXPECT_EQ(p.flags, plan->columns.flags);
}

TEST(IngestPlan, AnOomPrunesTheQueueAndIsAPointWithoutFigures) {
  JobResult r = testing::oom_result();
  const Result<IngestPlan> plan = plan_ingest(r, job(Runtime::kLibtorch, Mode::kEager), MatrixSpec{});
  ASSERT_TRUE(plan.ok()) << plan.error().describe();
  EXPECT_TRUE(plan->implies_oom);
  ASSERT_TRUE(plan->series_point.has_value());
  EXPECT_EQ(plan->series_point->status, ResultStatus::kOom);
  EXPECT_FALSE(plan->series_point->median_ms.has_value());
  EXPECT_FALSE(plan->torch_version.has_value()) << "no fingerprint: nothing recorded";
}

TEST(IngestPlan, VerdictsTheCoordinatorInfersAreNoSeriesPoint) {
  JobResult r;
  r.status = ResultStatus::kUnsupported;
  r.error = "no CUDA";
  const Result<IngestPlan> plan = plan_ingest(r, job(Runtime::kPython, Mode::kDefault), MatrixSpec{});
  ASSERT_TRUE(plan.ok()) << plan.error().describe();
  EXPECT_FALSE(plan->series_point.has_value());
  EXPECT_FALSE(plan->implies_oom);
  EXPECT_FALSE(has_series_point(ResultStatus::kInvalid));
  EXPECT_FALSE(has_series_point(ResultStatus::kOomImplied));
  EXPECT_TRUE(has_series_point(ResultStatus::kCrash));
}

TEST(IngestPlan, IsRefusedNamingTheFieldItsFormOrItsJobRefutes) {
  // Its form: statistics that are not its samples'.
  JobResult r = posted_ok(2);
  r.stats->median_ms = 3;
  Result<PostedBody> accepted = accept_posted(r);
  ASSERT_FALSE(accepted.ok());
  EXPECT_EQ(accepted.error().code, ErrorCode::kInvalidArgument);
  EXPECT_TRUE(accepted.error().field.starts_with("result.stats")) << accepted.error().describe();
  // A posted result may not claim what only the coordinator infers.
  JobResult implied;
  implied.status = ResultStatus::kOomImplied;
  EXPECT_FALSE(accept_posted(implied).ok());
  // Its job: an accuracy verdict on an eager job.
  r = posted_ok(2);
  r.accuracy = AccuracyInfo{AccuracyVerdict::kUnchecked, 0, 0, 0, std::nullopt, "", "no reference"};
  ASSERT_TRUE(accept_posted(r).ok()) << "any result may carry a verdict; its job says whether it may";
  const Result<IngestPlan> plan = plan_ingest(r, job(Runtime::kLibtorch, Mode::kEager), MatrixSpec{}, "body");
  ASSERT_FALSE(plan.ok());
  EXPECT_TRUE(plan.error().field.starts_with("body.accuracy")) << plan.error().describe();
  EXPECT_TRUE(plan_ingest(r, job(Runtime::kLibtorch, Mode::kDefault), MatrixSpec{}).ok());
}

TEST(PostedBody, TheDigestCoversTheWholeResultTheBodyLeavesTheSamplesOut) {
  const JobResult r = posted_ok(2);
  const PostedBody b = accept_posted(r).value();
  const nlohmann::json whole = r;
  EXPECT_EQ(b.digest, sha256_hex(whole.dump()));
  EXPECT_EQ(nlohmann::json::parse(b.samples), whole["samples_ms"]);
  const nlohmann::json body = nlohmann::json::parse(b.body);
  EXPECT_FALSE(body.contains("samples_ms"));
  EXPECT_EQ(body["status"], "ok");
}

}  // namespace
}  // namespace benchfleet::rules
