#include "coordinator/rules/scheduler.h"

#include <gtest/gtest.h>

namespace benchfleet::rules {
namespace {

TorchBuildDescriptor build(std::string name, std::vector<Mode> libtorch_modes, std::vector<Mode> python_modes = {}) {
  TorchBuildDescriptor b{std::move(name), "2.11.0", {}};
  if (!libtorch_modes.empty()) b.runtimes.push_back({Runtime::kLibtorch, libtorch_modes});
  if (!python_modes.empty()) b.runtimes.push_back({Runtime::kPython, python_modes});
  return b;
}

JobSpec job(std::string model, int batch, Mode mode, std::string build = "stable", std::string gpu = "a100",
            Runtime rt = Runtime::kLibtorch) {
  return JobSpec{std::move(model), batch, mode, std::move(build), std::move(gpu), rt, 0};
}

JobSpec bfloat16(JobSpec j) {
  j.dtype = Dtype::kBfloat16;
  return j;
}

SlotOffer a100_slot(std::int64_t agent = 1, std::string slot = "gpu0") {
  return SlotOffer{agent,
                   std::move(slot),
                   "a100",
                   {build("stable", {Mode::kEager, Mode::kDefault}, {Mode::kEager}), build("nightly", {Mode::kEager})}};
}

TEST(CanRun, RequiresGpuClassBuildRuntimeAndMode) {
  const auto offer = a100_slot();
  EXPECT_TRUE(can_run(offer, job("m", 1, Mode::kEager)));
  EXPECT_TRUE(can_run(offer, job("m", 1, Mode::kDefault)));
  EXPECT_FALSE(can_run(offer, job("m", 1, Mode::kEager, "stable", "t4"))) << "wrong GPU class";
  EXPECT_FALSE(can_run(offer, job("m", 1, Mode::kEager, "nightly2"))) << "unknown build";
  EXPECT_FALSE(can_run(offer, job("m", 1, Mode::kDefault, "nightly"))) << "mode not offered by that build";
  EXPECT_TRUE(can_run(offer, job("m", 1, Mode::kEager, "stable", "a100", Runtime::kPython)));
  EXPECT_FALSE(can_run(offer, job("m", 1, Mode::kDefault, "stable", "a100", Runtime::kPython)))
      << "mode offered for libtorch only";
}

TEST(UnsupportedReason, OnlyForTheSlotsOwnClassBuildAndRuntime) {
  const auto offer = a100_slot();
  EXPECT_EQ(unsupported_reason(offer, job("m", 1, Mode::kEager)), std::nullopt) << "runnable";
  auto reason = unsupported_reason(offer, job("m", 1, Mode::kMaxAutotune));
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("max-autotune"), std::string::npos);
  EXPECT_NE(reason->find("stable"), std::string::npos);
  EXPECT_EQ(unsupported_reason(offer, job("m", 1, Mode::kMaxAutotune, "stable", "t4")), std::nullopt)
      << "another GPU class is not this slot's to judge";
  EXPECT_EQ(unsupported_reason(offer, job("m", 1, Mode::kMaxAutotune, "other-build")), std::nullopt);
  EXPECT_TRUE(unsupported_reason(offer, job("m", 1, Mode::kDefault, "stable", "a100", Runtime::kPython)).has_value());
}

TEST(PickJob, PrefersOwnGroupThenUnownedThenOthers) {
  const auto offer = a100_slot(1, "gpu0");
  const SlotRef me{1, "gpu0"}, other{2, "gpu0"};
  std::vector<Candidate> c = {
      {10, 0, job("a", 1, Mode::kEager), other},
      {11, 0, job("b", 1, Mode::kEager), std::nullopt},
      {12, 0, job("c", 1, Mode::kDefault), me},
  };
  EXPECT_EQ(pick_job(offer, c), 12) << "a job of my own group first, despite a higher id";
  c.pop_back();
  EXPECT_EQ(pick_job(offer, c), 11) << "then a group nobody owns";
  c.pop_back();
  EXPECT_EQ(pick_job(offer, c), 10) << "then another slot's group rather than idling";
}

TEST(PickJob, PriorityThenSubmissionOrderWithinATier) {
  const auto offer = a100_slot();
  std::vector<Candidate> c = {
      {5, 0, job("a", 1, Mode::kEager), std::nullopt},
      {7, 3, job("b", 1, Mode::kEager), std::nullopt},
      {6, 3, job("c", 1, Mode::kEager), std::nullopt},
  };
  EXPECT_EQ(pick_job(offer, c), 6);
}

TEST(PickJob, SkipsJobsTheSlotCannotRun) {
  const auto offer = a100_slot();
  std::vector<Candidate> c = {
      {1, 9, job("a", 1, Mode::kMaxAutotune), std::nullopt},
      {2, 0, job("a", 1, Mode::kEager, "stable", "t4"), std::nullopt},
  };
  EXPECT_EQ(pick_job(offer, c), std::nullopt);
  c.push_back({3, 0, job("a", 1, Mode::kEager), std::nullopt});
  EXPECT_EQ(pick_job(offer, c), 3);
}

TEST(Expiry, RequeuesUntilMaxAttemptsThenFails) {
  EXPECT_EQ(on_lease_expired(1, 3), ExpiryAction::kRequeue);
  EXPECT_EQ(on_lease_expired(2, 3), ExpiryAction::kRequeue);
  EXPECT_EQ(on_lease_expired(3, 3), ExpiryAction::kFail);
  EXPECT_EQ(lease_expiry(1000, 500), 1500);
}

TEST(Expiry, RestartGraceOnlyExtends) {
  EXPECT_EQ(expiry_after_restart(/*expires=*/1000, /*now=*/900, /*grace=*/500), 1400);
  EXPECT_EQ(expiry_after_restart(/*expires=*/5000, /*now=*/900, /*grace=*/500), 5000);
}

TEST(ImpliedOom, LargerBatchesOfTheSameCellOnly) {
  std::vector<QueuedJob> queued = {
      {1, job("detr", 16, Mode::kEager)},
      {2, job("detr", 16, Mode::kDefault)},                // other mode: not implied
      {3, job("detr", 2, Mode::kEager)},                   // smaller batch: not implied
      {4, job("detr", 32, Mode::kEager, "nightly")},       // other build: not implied
      {5, job("vit", 16, Mode::kEager)},                   // other model: not implied
      {6, job("detr", 16, Mode::kEager, "stable", "t4")},  // other GPU class: not implied
      {7, job("detr", 64, Mode::kEager)},
      {8, bfloat16(job("detr", 16, Mode::kEager))},  // other dtype: not implied
  };
  std::vector<JobSpec> oomed = {job("detr", 8, Mode::kEager), job("detr", 4, Mode::kEager)};
  auto implied = implied_oom(queued, oomed);
  ASSERT_EQ(implied.size(), 2u);
  EXPECT_EQ(implied[0], (std::pair<std::int64_t, int>{1, 4}));
  EXPECT_EQ(implied[1], (std::pair<std::int64_t, int>{7, 4}));
}

TEST(RunState, FromJobCounts) {
  using enum JobStatus;
  EXPECT_EQ(run_state({{kQueued, 3}}, false), RunState::kQueued);
  EXPECT_EQ(run_state({{kQueued, 3}, {kLeased, 1}}, false), RunState::kRunning);
  EXPECT_EQ(run_state({{kQueued, 3}, {kDone, 1}}, false), RunState::kRunning);
  EXPECT_EQ(run_state({{kDone, 3}, {kFailed, 1}}, false), RunState::kDone);
  EXPECT_EQ(run_state({{kQueued, 3}}, true), RunState::kCancelled);
}

}  // namespace
}  // namespace benchfleet::rules
