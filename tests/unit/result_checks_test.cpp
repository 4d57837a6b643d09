// check_posted_result: the nonsense agents could store (item 4) is refused with the
// field named; what a real worker produces passes.
#include "common/result_checks.h"

#include <gtest/gtest.h>

#include "common/codecs.h"
#include "common/shared_rules.h"
#include "common/stats.h"

namespace benchfleet {
namespace {

using nlohmann::json;

JobResult ok_result(std::vector<double> samples = {1.0, 2.0, 3.0, 4.0, 10.0}) {
  JobResult r;
  r.status = ResultStatus::kOk;
  r.samples_ms = std::move(samples);
  r.stats = compute_statistics(r.samples_ms);
  r.first_call_ms = 120.0;
  r.stop_reason = StopReason::kFixedCount;
  return r;
}

std::string field_of(const JobResult& r) {
  auto err = check_posted_result(r, "result");
  return err ? err->field : "(accepted)";
}

TEST(CheckPostedResult, AcceptsWhatAWorkerComputes) {
  EXPECT_EQ(field_of(ok_result()), "(accepted)");
  // Through JSON and back (the agent's route) the statistics still match.
  auto decoded = decode<JobResult>(json(ok_result({0.125, 0.3, 7.77, 1e-3})));
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(field_of(*decoded), "(accepted)");

  JobResult oom;
  oom.status = ResultStatus::kOom;
  oom.oom = OomInfo{OomPhase::kWarmup, 1 << 20};
  oom.memory.emplace();
  oom.memory->peak_allocated_bytes = 1;
  oom.memory->peak_reserved_bytes = 2;
  oom.memory->peak_rss_bytes = 3;
  EXPECT_EQ(field_of(oom), "(accepted)");
  // Killed at its cgroup's cap: the cap named, with what it allows and the peak it bounds.
  oom.memory.emplace();
  oom.memory->peak_rss_bytes = 3 << 20;
  oom.memory->cap = "cgroup-v1";
  oom.memory->cap_bytes = 1 << 30;
  oom.memory->peak_growth_bytes = 1 << 30;
  EXPECT_EQ(field_of(oom), "(accepted)");
  JobResult crash;
  crash.status = ResultStatus::kCrash;
  crash.signal = 9;
  EXPECT_EQ(field_of(crash), "(accepted)");
}

TEST(CheckPostedResult, RefusesStatisticsTheSamplesDoNotGive) {
  // Mean 5e8 with samples [1, 1, 1].
  JobResult r = ok_result({1, 1, 1});
  r.stats->mean_ms = 5e8;
  r.stats->max_ms = 5e8;
  auto err = check_posted_result(r, "result");
  ASSERT_TRUE(err);
  EXPECT_EQ(err->field, "result.stats.mean_ms");
  EXPECT_NE(err->message.find("samples_ms give 1"), std::string::npos) << err->message;

  // p99 < p90, negative p90 / cv.
  r = ok_result();
  std::swap(r.stats->p90_ms, r.stats->p99_ms);
  EXPECT_EQ(field_of(r), "result.stats.p90_ms");
  r = ok_result();
  r.stats->cv = -0.5;
  EXPECT_EQ(field_of(r), "result.stats.cv");
  r = ok_result();
  r.stats->ci_low_ms = -1;
  EXPECT_EQ(field_of(r), "result.stats.ci_low_ms");
  r = ok_result();
  r.stats->iterations = 4;
  EXPECT_EQ(field_of(r), "result.stats.iterations");
}

TEST(CheckPostedResult, RefusesHugeOrNegativeFigures) {
  // Mean 1.7e308 (finite, so the decoder let it through).
  JobResult r = ok_result({1.7e308, 1.7e308});
  EXPECT_EQ(field_of(r), "result.samples_ms[0]");
  r = ok_result();
  r.first_call_ms = -3;
  EXPECT_EQ(field_of(r), "result.first_call_ms");
  r = ok_result();
  r.load_s = 1e12;
  EXPECT_EQ(field_of(r), "result.load_s");
  r = ok_result();
  r.memory.emplace();
  r.memory->peak_allocated_bytes = -1;
  EXPECT_EQ(field_of(r), "result.memory.peak_allocated_bytes");
  r.memory.emplace();
  r.memory->cap = "cgroup-v1";
  r.memory->cap_bytes = 1 << 20;
  r.memory->peak_growth_bytes = -5;
  EXPECT_EQ(field_of(r), "result.memory.peak_growth_bytes");
  r.memory.emplace();
  r.memory->cap = "cgroups";  // not a kind of cap
  r.memory->cap_bytes = 1 << 20;
  EXPECT_EQ(field_of(r), "result.memory.cap");
  r.memory.emplace();
  r.memory->cap = "address-space";  // a cap without what it allows
  EXPECT_EQ(field_of(r), "result.memory.cap_bytes");
  r = ok_result();
  r.samples_ms.assign(max_iterations() + 1, 1.0);
  EXPECT_EQ(field_of(r), "result.samples_ms");
}

TEST(CheckPostedResult, AllowsOnlyVerdictsAWorkerCanReach) {
  JobResult r;
  r.status = ResultStatus::kOomImplied;
  auto err = check_posted_result(r, "result");
  ASSERT_TRUE(err);
  EXPECT_EQ(err->field, "result.status");
  EXPECT_NE(err->message.find("oom_implied"), std::string::npos);
}

TEST(CheckPostedResult, RefusesMeasurementsOnVerdictsWithout) {
  for (ResultStatus s : {ResultStatus::kError, ResultStatus::kOom, ResultStatus::kTimeout, ResultStatus::kCrash,
                         ResultStatus::kUnsupported}) {
    JobResult r = ok_result();
    r.status = s;
    r.oom = s == ResultStatus::kOom ? std::optional<OomInfo>(OomInfo{}) : std::nullopt;
    EXPECT_EQ(field_of(r), "result.stats") << to_string(s);
    r.stats.reset();
    EXPECT_EQ(field_of(r), "result.samples_ms") << to_string(s);
    r.samples_ms.clear();
    EXPECT_EQ(field_of(r), "result.stop_reason") << to_string(s);
  }
  // invalid ("statistics criteria not met") may carry consistent measurements.
  JobResult invalid = ok_result();
  invalid.status = ResultStatus::kInvalid;
  EXPECT_EQ(field_of(invalid), "(accepted)");
  JobResult error;
  error.status = ResultStatus::kError;
  error.oom = OomInfo{};
  EXPECT_EQ(field_of(error), "result.oom");
  error.oom.reset();
  error.signal = 9;
  EXPECT_EQ(field_of(error), "result.signal");
}

// An accuracy verdict judges measured outputs: it comes with ok (or invalid) results only.
TEST(CheckPostedResult, AllowsAccuracyOnlyWithMeasurements) {
  AccuracyInfo wrong{AccuracyVerdict::kWrong, 0.049, 4.3e-7, 1e-4, std::nullopt, "output0", ""};
  JobResult ok = ok_result();
  ok.accuracy = wrong;
  EXPECT_EQ(field_of(ok), "(accepted)");
  JobResult invalid = ok;
  invalid.status = ResultStatus::kInvalid;
  EXPECT_EQ(field_of(invalid), "(accepted)");
  for (ResultStatus s : {ResultStatus::kError, ResultStatus::kUnsupported, ResultStatus::kTimeout}) {
    JobResult r;
    r.status = s;
    r.error = "failed";
    r.accuracy = wrong;
    auto err = check_posted_result(r, "result");
    ASSERT_TRUE(err) << to_string(s);
    EXPECT_EQ(err->field, "result.accuracy");
    EXPECT_NE(err->message.find("only allowed when status is ok or invalid"), std::string::npos) << err->message;
  }
}

// Leaving out stop_reason once skipped every count rule: it is required on ok.
TEST(CheckPostedResult, RequiresAStopReasonOnOk) {
  JobResult r = ok_result();
  r.stop_reason.reset();
  EXPECT_EQ(field_of(r), "result.stop_reason");
  r.status = ResultStatus::kInvalid;  // invalid may lack one (its count is still bounded by the job)
  EXPECT_EQ(field_of(r), "(accepted)");
}

// A verdict must be what the rule makes of the figures it reports.
TEST(CheckPostedResult, AccuracyVerdictsAgreeWithTheirFigures) {
  const auto with = [](AccuracyInfo a) {
    JobResult r = ok_result();
    r.accuracy = std::move(a);
    return field_of(r);
  };
  // pass where eager itself is 90% off the reference: the rule would not judge it.
  EXPECT_EQ(with({AccuracyVerdict::kPass, 0.1, 0.9, 2.7001, std::nullopt, "output0", ""}), "result.accuracy.verdict");
  // wrong with its error 0, within the tolerance, and nothing else wrong.
  EXPECT_EQ(with({AccuracyVerdict::kWrong, 0, 1e-7, 1.003e-4, std::nullopt, "output0", ""}), "result.accuracy.verdict");
  // pass with a cosine below 0.99.
  EXPECT_EQ(with({AccuracyVerdict::kPass, 1e-3, 1e-3, 1.3e-2, 0.9, "output0", ""}), "result.accuracy.verdict");
  // The rule's own failures: above the tolerance; a low cosine; an exact-match output; NaN/Inf.
  EXPECT_EQ(with({AccuracyVerdict::kWrong, 0.049, 4.3e-7, 1.0129e-4, std::nullopt, "output0", ""}), "(accepted)");
  EXPECT_EQ(with({AccuracyVerdict::kWrong, 1e-3, 1e-3, 1.3e-2, 0.9, "output0", ""}), "(accepted)");
  EXPECT_EQ(with({AccuracyVerdict::kWrong, 0, 0, 0, std::nullopt, "output1", "output1 differs (exact match required)"}),
            "(accepted)");
  EXPECT_EQ(with({AccuracyVerdict::kWrong, 0, 1e-7, 1.003e-4, std::nullopt, "output0",
                  "output0 has NaN or Inf where the reference has none"}),
            "(accepted)");
  EXPECT_EQ(with({AccuracyVerdict::kPass, 2e-7, 1e-7, 1.003e-4, std::nullopt, "output0", ""}), "(accepted)");
  EXPECT_EQ(with({AccuracyVerdict::kUnchecked, 0, 0, 0, std::nullopt, "", "eager is itself 0.9 off"}), "(accepted)");
}

std::string job_field(const JobResult& r, const ResultJob& job) {
  auto err = check_result_for_job(r, job, "result");
  return err ? err->field + ": " + err->message : "(accepted)";
}

// The count bounds hold whatever the status, and the tolerance is the coordinator's rule for the
// job's dtype and device, not the agent's claim.
TEST(CheckResultForJob, BoundsEveryStatusAndOwnsTheTolerance) {
  ResultJob job{Mode::kDefault, Dtype::kFloat32, false, MeasurementSpec{}};
  job.measurement.min_iterations = 10;
  job.measurement.max_iterations = 1000;
  std::vector<double> many(5000, 1.0);
  JobResult invalid = ok_result(many);
  invalid.status = ResultStatus::kInvalid;
  invalid.stop_reason.reset();
  EXPECT_EQ(job_field(invalid, job).rfind("result.samples_ms: holds 5000 samples", 0), 0u) << job_field(invalid, job);

  JobResult r = ok_result();
  r.stop_reason = StopReason::kMaxTime;
  r.accuracy = AccuracyInfo{AccuracyVerdict::kPass, 2e-7, 1e-7, 1.003e-4, std::nullopt, "output0", ""};
  EXPECT_EQ(job_field(r, job), "(accepted)");
  r.accuracy->tolerance = 0.5;  // a generous claim
  EXPECT_EQ(job_field(r, job).rfind("result.accuracy.tolerance: is 0.5 where the rule gives", 0), 0u)
      << job_field(r, job);
  // float16 on CUDA: 3 x eager + 1e-2.
  job.dtype = Dtype::kFloat16;
  job.on_cuda = true;
  r.accuracy->tolerance = 3e-7 + 1e-2;
  EXPECT_EQ(job_field(r, job), "(accepted)");
  job.on_cuda = false;  // amp differs by device; float16's floor does not
  EXPECT_EQ(job_field(r, job), "(accepted)");
  job.dtype = Dtype::kAmp;  // amp on the CPU is bfloat16's 4e-2
  EXPECT_NE(job_field(r, job), "(accepted)");
}

// Text reaches operators' terminals (CLI, CSV, Markdown): a posted error or fingerprint value
// holding an escape sequence is refused, naming the field; the agent escapes what a job wrote
// first (escape_result_text), so a compiler's coloured stderr never costs the result.
TEST(CheckPostedResult, RefusesTextThatWouldDriveATerminal) {
  JobResult crash;
  crash.status = ResultStatus::kCrash;
  crash.signal = 11;
  crash.error = "worker was killed by signal 11; last stderr:\n\tframe #0\n";
  EXPECT_EQ(field_of(crash), "(accepted)");  // lines and tabs are a message's own
  crash.error = "segfault \x1b]0;owned\a\x1b[2J";
  EXPECT_EQ(field_of(crash), "result.error");

  JobResult ok = ok_result();
  ok.environment["torch_version"] = "2.6.0\x1b[41m";
  EXPECT_EQ(field_of(ok), "result.environment.torch_version");
  ok.environment = json::object({{"cpu\xe2\x80\xae", "x"}});
  EXPECT_EQ(field_of(ok), "result.environment");
  ok.environment = json::object();
  ok.telemetry["note"] = "bell\a";
  EXPECT_EQ(field_of(ok), "result.telemetry.note");

  escape_result_text(ok);
  EXPECT_EQ(ok.telemetry["note"], "bell\\x07");
  EXPECT_EQ(field_of(ok), "(accepted)");
  escape_result_text(crash);
  EXPECT_EQ(*crash.error, "segfault \\x1b]0;owned\\x07\\x1b[2J");
  EXPECT_EQ(field_of(crash), "(accepted)");
}

}  // namespace
}  // namespace benchfleet
