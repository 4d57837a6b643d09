// noise_flags (common/noise_flags.h): which ok results the coordinator marks as noisy.
#include "common/noise_flags.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace benchfleet {
namespace {

using Flags = std::vector<std::string>;

JobResult quiet_result() {
  JobResult r;
  r.status = ResultStatus::kOk;
  r.samples_ms = {1, 1, 1};
  r.stats = Statistics{1, 1, 1, 1, 1, 1, 0, 0.02, 1, 1, 3};
  r.stop_reason = StopReason::kCiTarget;
  r.telemetry = {{"before_sm_clock_mhz", 1410}, {"after_sm_clock_mhz", 1410}, {"after_throttle_reasons", 0}};
  return r;
}

TEST(NoiseFlags, AQuietResultHasNone) { EXPECT_EQ(noise_flags(quiet_result(), NoiseSpec{}), Flags{}); }

TEST(NoiseFlags, HighCvAboveTheThresholdOnly) {
  JobResult r = quiet_result();
  r.stats->cv = 0.10;
  EXPECT_EQ(noise_flags(r, NoiseSpec{}), Flags{}) << "at the threshold is not above it";
  r.stats->cv = 0.11;
  EXPECT_EQ(noise_flags(r, NoiseSpec{}), Flags{"high_cv"});
  EXPECT_EQ(noise_flags(r, NoiseSpec{0.2, 0.1}), Flags{}) << "the run's own threshold";
}

// 100 samples of a quiet 9.4-9.6 ms loop: the CV of the samples themselves.
std::vector<double> tight_samples() {
  std::vector<double> x;
  for (int i = 0; i < 100; ++i) x.push_back(9.4 + 0.002 * i);
  return x;
}

// `n` samples around 10 ms (a deterministic +/-1% spread), the last `share` of them `factor` x
// slower: a second mode.
JobResult with_second_mode(std::size_t n, double share, double factor) {
  JobResult r = quiet_result();
  r.samples_ms.clear();
  const auto second = static_cast<std::size_t>(static_cast<double>(n) * share);
  for (std::size_t i = 0; i < n; ++i) {
    const double base = 9.9 + 0.2 * static_cast<double>(i % 17) / 16;
    r.samples_ms.push_back(i >= n - second ? base * factor : base);
  }
  return r;
}

// The cases the fences alone missed: fewer than a quarter of the samples in a second mode, the
// IQR the main mode's, the whole second mode outside the fences and out of the judged CV.
TEST(NoiseFlags, ASecondModeIsFlaggedThoughTheFencesHideItFromTheCv) {
  const JobResult twenty = with_second_mode(200, 0.20, 1.4);
  EXPECT_LT(judged_cv(twenty), 0.02);  // blind to it, as designed for spikes
  EXPECT_NEAR(outlier_share(twenty), 0.20, 1e-9);
  EXPECT_EQ(noise_flags(twenty, NoiseSpec{}), Flags{"second_mode"});
  const JobResult ten = with_second_mode(200, 0.10, 2.0);
  EXPECT_NEAR(outlier_share(ten), 0.10, 1e-9);
  EXPECT_EQ(noise_flags(ten, NoiseSpec{}), Flags{"second_mode"});
  // At 30% the IQR spans both modes: the spread is the CV's to judge.
  const JobResult thirty = with_second_mode(200, 0.30, 1.4);
  EXPECT_EQ(noise_flags(thirty, NoiseSpec{}), Flags{"high_cv"});
}

TEST(NoiseFlags, AFewIsolatedSpikesAreNotASecondMode) {
  JobResult r = with_second_mode(200, 0, 1);
  for (std::size_t i : {17u, 90u, 151u, 199u}) r.samples_ms[i] = 38.5;  // 2%: preemptions
  EXPECT_NEAR(outlier_share(r), 0.02, 1e-9);
  EXPECT_EQ(noise_flags(r, NoiseSpec{}), Flags{});
  // Too few samples for fences: no share.
  r.samples_ms = {9.4, 9.5, 38.5};
  EXPECT_EQ(outlier_share(r), 0);
}

TEST(NoiseFlags, IsolatedSpikesDoNotMakeATightResultNoisyAWideSpreadDoes) {
  JobResult r = quiet_result();
  r.samples_ms = tight_samples();
  r.samples_ms[10] = 38.5;  // a preemption: one call 4x the median, as measured on a 2-vCPU VM
  r.samples_ms[50] = 21.0;
  r.stats->cv = 0.33;  // what the worker reports over every sample
  EXPECT_LT(judged_cv(r), 0.02);
  EXPECT_EQ(noise_flags(r, NoiseSpec{0.25, 0.1}), Flags{});

  // A spread: a third of the calls 1.5x slower is not a spike but two regimes.
  for (int i = 0; i < 100; i += 3) r.samples_ms[static_cast<std::size_t>(i)] = 14.2;
  EXPECT_GT(judged_cv(r), 0.2);
  EXPECT_EQ(noise_flags(r, NoiseSpec{0.2, 0.1}), Flags{"high_cv"});

  // Too few samples to tell spikes from spread: the reported CV.
  r.samples_ms = {9.4, 9.5, 38.5};
  EXPECT_DOUBLE_EQ(judged_cv(r), 0.33);
  EXPECT_EQ(noise_flags(r, NoiseSpec{0.25, 0.1}), Flags{"high_cv"});
}

TEST(NoiseFlags, ABoundThatStoppedTheLoopAfterTheCiWasNarrowEnoughIsNotCiNotMet) {
  JobResult r = quiet_result();
  r.stats->median_ms = 3.1;
  r.stats->ci_low_ms = 3.09;
  r.stats->ci_high_ms = 3.12;                  // 1% wide
  r.stop_reason = StopReason::kMaxIterations;  // 300 calls of 3.1 ms end before min_duration_s 1
  EXPECT_EQ(noise_flags(r, NoiseSpec{}, 0.05), Flags{});
  r.stats->ci_high_ms = 3.30;  // 6.8% wide: the target was not met
  EXPECT_EQ(noise_flags(r, NoiseSpec{}, 0.05), Flags{"ci_not_met"});
  r.stop_reason = StopReason::kMaxTime;
  EXPECT_EQ(noise_flags(r, NoiseSpec{}, 0.05), Flags{"ci_not_met"});
  r.stats->ci_high_ms = 3.12;
  EXPECT_EQ(noise_flags(r, NoiseSpec{}, 0.05), Flags{});
  EXPECT_EQ(noise_flags(r, NoiseSpec{}), Flags{"ci_not_met"}) << "without the target, any bound stop";
}

TEST(NoiseFlags, ClockDropBeyondTheRunsFraction) {
  JobResult r = quiet_result();
  r.telemetry["after_sm_clock_mhz"] = 1300;  // 7.8% lower
  EXPECT_EQ(noise_flags(r, NoiseSpec{}), Flags{});
  EXPECT_EQ(noise_flags(r, NoiseSpec{0.1, 0.05}), Flags{"clock_drop"});
  r.telemetry["after_sm_clock_mhz"] = 1200;  // 14.9% lower
  EXPECT_EQ(noise_flags(r, NoiseSpec{}), Flags{"clock_drop"});
  r.telemetry.erase("before_sm_clock_mhz");  // a CPU job reads no clocks
  EXPECT_EQ(noise_flags(r, NoiseSpec{}), Flags{});
}

TEST(NoiseFlags, ThrottledOnlyForReasonsThatSlowKernels) {
  JobResult r = quiet_result();
  r.telemetry["after_throttle_reasons"] = 0x1 | 0x2 | 0x100;  // idle, application clocks, display
  EXPECT_EQ(noise_flags(r, NoiseSpec{}), Flags{});
  r.telemetry["after_throttle_reasons"] = 0x1 | 0x4;  // software power cap
  EXPECT_EQ(noise_flags(r, NoiseSpec{}), Flags{"throttled"});
  r.telemetry["after_throttle_reasons"] = 0x40;  // hardware thermal slowdown
  EXPECT_EQ(noise_flags(r, NoiseSpec{}), Flags{"throttled"});
  r.telemetry["after_throttle_reasons"] = "0x40";  // not a reading
  EXPECT_EQ(noise_flags(r, NoiseSpec{}), Flags{});
}

TEST(NoiseFlags, CiNotMetWhenABoundStoppedTheLoop) {
  JobResult r = quiet_result();
  for (StopReason s : {StopReason::kMaxIterations, StopReason::kMaxTime}) {
    r.stop_reason = s;
    EXPECT_EQ(noise_flags(r, NoiseSpec{}), Flags{"ci_not_met"}) << to_string(s);
  }
  r.stop_reason = StopReason::kFixedCount;
  EXPECT_EQ(noise_flags(r, NoiseSpec{}), Flags{});
}

TEST(NoiseFlags, AllInTheirOrderAndNoneForOtherStatuses) {
  JobResult r = quiet_result();
  r.stats->cv = 0.5;
  r.telemetry = {{"before_sm_clock_mhz", 1410}, {"after_sm_clock_mhz", 900}, {"after_throttle_reasons", 0x20}};
  r.stop_reason = StopReason::kMaxTime;
  EXPECT_EQ(noise_flags(r, NoiseSpec{}), (Flags{"high_cv", "clock_drop", "throttled", "ci_not_met"}));
  r.status = ResultStatus::kInvalid;
  EXPECT_EQ(noise_flags(r, NoiseSpec{}), Flags{});
}

}  // namespace
}  // namespace benchfleet
