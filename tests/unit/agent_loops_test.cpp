// The agent's rules (agent/daemon/agent_loops.h) against a coordinator, a job runner and a clock
// in memory: drain, abort, re-enrolment, backoff, lost and cancelled leases, the intervals the
// coordinator dictates. No process, socket or real wait: every test runs on one thread, the
// fakes calling back into the loops (a stop request, a heartbeat) where the real world would
// from another thread.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "agent/daemon/agent_loops.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/agent_loops_fakes.h"

namespace benchfleet::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using namespace fakes;  // NOLINT(google-build-using-namespace)

class AgentLoopsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    spool_ = std::make_unique<Spool>(spool_dir_);
    ASSERT_TRUE(spool_->open().ok());
  }

  // The loops of an agent with one slot, "cpu", holding the token "t1" the coordinator knows.
  AgentLoops& loops() {
    if (loops_) return *loops_;
    AgentLoopParts parts;
    parts.connect = [this](AgentIdentity& identity) { return std::make_unique<FakeClient>(coordinator_, identity); };
    parts.runner = &runner_;
    parts.spool = spool_.get();
    parts.clock = &clock_;
    // The top of each draw: the waits are exact. The bounds drawn from are kept.
    parts.uniform = [this](std::int64_t lo, std::int64_t hi) {
      draws_.emplace_back(lo, hi);
      return hi;
    };
    parts.enrolled = [this](const EnrollResponse& e) { saved_tokens_.push_back(e.agent_token); };
    parts.descriptor.name = "agent-under-test";
    parts.descriptor.slots = {SlotDescriptor{"cpu", "cpu", std::nullopt, std::nullopt}};
    parts.enrollment_token = "enrol-secret";
    parts.held_token = "saved-earlier";
    parts.agent_key = "key-of-this-agent";
    loops_ = std::make_unique<AgentLoops>(std::move(parts));
    coordinator_.on_runaway = [this] {
      loops_->request_stop();
      loops_->request_stop();
    };
    loops_->identity().set(1, "t1");
    return *loops_;
  }

  // Poll `last` of the slot drains the agent (as a SIGTERM meanwhile would) and gets no work.
  void drain_at_poll(int last, std::function<Result<LeaseResponse>(int)> before) {
    coordinator_.on_lease = [this, last, before = std::move(before)](int poll) -> Result<LeaseResponse> {
      if (poll < last) return before(poll);
      loops().request_stop();
      return no_work();
    };
  }

  // The files in the spool (a result the agent holds until the coordinator acknowledged it).
  std::vector<std::string> spooled() const {
    std::vector<std::string> out;
    for (const auto& f : std::filesystem::directory_iterator(spool_dir_)) out.push_back(f.path().filename().string());
    return out;
  }

  FakeCoordinator coordinator_;
  FakeRunner runner_;
  FakeWaitClock clock_;
  testing::TempDir tmp_{"agent_loops_test"};
  const std::string spool_dir_ = tmp_.str();
  std::unique_ptr<Spool> spool_;
  std::vector<std::pair<std::int64_t, std::int64_t>> draws_;
  std::vector<std::string> saved_tokens_;
  std::unique_ptr<AgentLoops> loops_;
};

// ---- drain and abort ---------------------------------------------------------------------------

TEST_F(AgentLoopsTest, DrainLetsTheRunningJobFinishPostsItsResultAndLeasesNothingNew) {
  coordinator_.on_lease = [](int) -> Result<LeaseResponse> { return granted(7); };
  std::vector<bool> asked;
  runner_.body = [&](const LeasedJob&, const KeepGoing& keep_going) -> std::optional<JobResult> {
    loops().request_stop();  // SIGTERM while the worker runs
    asked.push_back(keep_going());
    return JobResult{};
  };

  loops().serve_slot(0);

  EXPECT_THAT(asked, ElementsAre(true));  // the job was not stopped
  EXPECT_THAT(coordinator_.requests, ElementsAre("lease cpu wait=25 token=t1", "upload 7:L7 attempt=1 ok token=t1"));
  EXPECT_THAT(spooled(), IsEmpty());  // acknowledged, so gone from the spool
  // The heartbeat tells the coordinator once, then ends: nothing is held.
  EXPECT_FALSE(loops().heartbeat_once());
  EXPECT_EQ(coordinator_.requests.back(), "heartbeat [] draining=1 token=t1");
}

TEST_F(AgentLoopsTest, AbortStopsTheRunningJobAndReleasesItsLease) {
  coordinator_.on_lease = [](int) -> Result<LeaseResponse> { return granted(7); };
  std::vector<bool> asked;
  runner_.body = [&](const LeasedJob&, const KeepGoing& keep_going) -> std::optional<JobResult> {
    loops().request_stop();
    asked.push_back(keep_going());
    loops().request_stop();  // the second SIGTERM
    asked.push_back(keep_going());
    return std::nullopt;  // the runner stopped the worker as told
  };

  loops().serve_slot(0);

  EXPECT_THAT(asked, ElementsAre(true, false));
  EXPECT_THAT(coordinator_.requests, ElementsAre("lease cpu wait=25 token=t1", "release 7:L7 token=t1"));
  EXPECT_THAT(spooled(), IsEmpty());
}

TEST_F(AgentLoopsTest, ALeaseGrantedToAPollWaitingWhenTheDrainCameIsGivenBackUnrun) {
  coordinator_.on_lease = [this](int poll) -> Result<LeaseResponse> {
    if (poll > 1) return no_work();  // told of the drain, the coordinator withdrew the grant
    loops().request_stop();
    return granted(7);
  };

  loops().serve_slot(0);

  EXPECT_THAT(runner_.ran, IsEmpty());
  EXPECT_THAT(coordinator_.requests, ElementsAre("lease cpu wait=25 token=t1", "heartbeat [] draining=1 token=t1",
                                                 "lease cpu wait=0 token=t1"));
}

TEST_F(AgentLoopsTest, AGrantTheCoordinatorDoesNotWithdrawIsReleasedUnrun) {
  coordinator_.on_lease = [this](int) -> Result<LeaseResponse> {
    loops().request_stop();
    return granted(7);  // an older coordinator: the grant stands
  };

  loops().serve_slot(0);

  EXPECT_THAT(runner_.ran, IsEmpty());
  EXPECT_EQ(coordinator_.requests.back(), "release 7:L7 token=t1");
}

// ---- lost and cancelled leases -----------------------------------------------------------------

TEST_F(AgentLoopsTest, AHeartbeatSayingTheLeaseIsLostStopsItsJobWhichReportsNothing) {
  drain_at_poll(2, [](int) -> Result<LeaseResponse> { return granted(7); });
  coordinator_.on_heartbeat = [](const std::vector<LeaseRef>& leases) -> Result<HeartbeatResponse> {
    HeartbeatResponse r;
    for (const auto& l : leases) r.leases.push_back({l.job_id, l.lease_id, LeaseState::kLost, std::nullopt});
    return r;
  };
  std::vector<bool> asked;
  runner_.body = [&](const LeasedJob&, const KeepGoing& keep_going) -> std::optional<JobResult> {
    asked.push_back(keep_going());
    EXPECT_TRUE(loops().heartbeat_once());  // the heartbeat thread, meanwhile
    asked.push_back(keep_going());
    return std::nullopt;
  };

  loops().serve_slot(0);

  EXPECT_THAT(asked, ElementsAre(true, false));
  // Neither a result nor a release: the job is another attempt's now.
  EXPECT_THAT(coordinator_.requests, ElementsAre("lease cpu wait=25 token=t1", "heartbeat [7:L7 ] draining=0 token=t1",
                                                 "lease cpu wait=25 token=t1"));
}

TEST_F(AgentLoopsTest, TheJobRenewsItsLeaseOncePerHeartbeatIntervalAndStopsWhenTheRunWasCancelled) {
  drain_at_poll(2, [](int) -> Result<LeaseResponse> {
    LeaseResponse r = granted(7);
    r.intervals = Intervals{3, 9, 7};  // the lease answer's pace, adopted at once
    return r;
  });
  coordinator_.on_progress = []() -> Result<LeaseState> { return LeaseState::kCancelled; };
  std::vector<bool> asked;
  runner_.body = [&](const LeasedJob&, const KeepGoing& keep_going) -> std::optional<JobResult> {
    asked.push_back(keep_going());
    clock_.advance(std::chrono::milliseconds(2999));
    asked.push_back(keep_going());  // not yet due
    clock_.advance(std::chrono::milliseconds(1));
    asked.push_back(keep_going());  // due: renewed, and told the run was cancelled
    return std::nullopt;
  };

  loops().serve_slot(0);

  EXPECT_THAT(asked, ElementsAre(true, true, false));
  EXPECT_THAT(coordinator_.requests,
              ElementsAre("lease cpu wait=25 token=t1", "progress 7:L7 running token=t1", "lease cpu wait=7 token=t1"));
}

TEST_F(AgentLoopsTest, AnUnreachableCoordinatorDoesNotStopTheJob) {
  drain_at_poll(2, [](int) -> Result<LeaseResponse> { return granted(7); });
  coordinator_.on_progress = []() -> Result<LeaseState> { return unavailable(); };
  coordinator_.on_heartbeat = [](const std::vector<LeaseRef>&) -> Result<HeartbeatResponse> { return unavailable(); };
  std::vector<bool> asked;
  runner_.body = [&](const LeasedJob&, const KeepGoing& keep_going) -> std::optional<JobResult> {
    EXPECT_TRUE(loops().heartbeat_once());
    clock_.advance(std::chrono::seconds(15));
    asked.push_back(keep_going());
    return JobResult{};
  };

  loops().serve_slot(0);

  EXPECT_THAT(asked, ElementsAre(true));
  EXPECT_EQ(coordinator_.requests.at(3), "upload 7:L7 attempt=1 ok token=t1");
}

// ---- intervals ---------------------------------------------------------------------------------

TEST_F(AgentLoopsTest, TheIntervalsOfALeaseAnswerAreAdopted) {
  std::optional<Intervals> in_force;
  coordinator_.on_lease = [&](int poll) -> Result<LeaseResponse> {
    if (poll == 2) {
      in_force = loops().current_intervals();
      loops().request_stop();
    }
    return LeaseResponse{std::nullopt, false, Intervals{3, 9, 7}};
  };

  loops().serve_slot(0);

  EXPECT_EQ(in_force, (Intervals{3, 9, 7}));
  EXPECT_THAT(coordinator_.requests, ElementsAre("lease cpu wait=25 token=t1", "lease cpu wait=7 token=t1"));
}

TEST_F(AgentLoopsTest, HeartbeatsComeEveryIntervalWithTenPercentJitter) {
  coordinator_.valid_token = "";  // enrolment dictates a 3 s heartbeat
  coordinator_.on_enroll = []() -> Result<EnrollResponse> { return EnrollResponse{1, "t2", Intervals{3, 9, 7}}; };
  loops().identity().set(0, "");
  ASSERT_TRUE(loops().ensure_enrolled());
  int beats = 0;
  coordinator_.on_heartbeat = [&](const std::vector<LeaseRef>&) -> Result<HeartbeatResponse> {
    if (++beats == 3) {
      loops().request_stop();
      loops().request_stop();
    }
    return HeartbeatResponse{};
  };

  loops().send_heartbeats();

  EXPECT_EQ(beats, 3);
  EXPECT_THAT(clock_.waits_ms, ElementsAre(3300, 3300, 3300));
  EXPECT_THAT(draws_, ElementsAre(std::pair<std::int64_t, std::int64_t>{-300, 300},
                                  std::pair<std::int64_t, std::int64_t>{-300, 300},
                                  std::pair<std::int64_t, std::int64_t>{-300, 300}));
}

// ---- re-enrolment ------------------------------------------------------------------------------

TEST_F(AgentLoopsTest, A401OnALeaseEnrolsAgainAndTheSlotCarriesOnWithTheNewToken) {
  loops().identity().set(1, "forgotten");
  drain_at_poll(2, [](int) -> Result<LeaseResponse> { return granted(7); });

  loops().serve_slot(0);

  EXPECT_THAT(coordinator_.requests,
              ElementsAre("lease cpu wait=25 token=forgotten", "enroll enrol-secret", "lease cpu wait=25 token=t1",
                          "upload 7:L7 attempt=1 ok token=t1", "lease cpu wait=25 token=t1"));
  EXPECT_THAT(saved_tokens_, ElementsAre("t1"));
  EXPECT_THAT(clock_.waits_ms, IsEmpty());  // a 401 is no failure to back off from
}

TEST_F(AgentLoopsTest, A401OnAHeartbeatEnrolsAgainAndTheNextHeartbeatCarriesTheNewToken) {
  loops().identity().set(1, "forgotten");

  EXPECT_TRUE(loops().heartbeat_once());
  EXPECT_TRUE(loops().heartbeat_once());

  EXPECT_THAT(coordinator_.requests, ElementsAre("heartbeat [] draining=0 token=forgotten", "enroll enrol-secret",
                                                 "heartbeat [] draining=0 token=t1"));
  EXPECT_EQ(loops().identity().get(), (std::pair<std::int64_t, std::string>{1, "t1"}));
  // The token it held goes along: the coordinator lets an agent that shows it keep its name.
  EXPECT_THAT(coordinator_.held_tokens, ElementsAre("forgotten"));
}

TEST_F(AgentLoopsTest, A401OnAnUploadEnrolsAgainAndTheResultIsPostedWithTheNewToken) {
  loops().identity().set(1, "forgotten");
  const SpoolEntry entry{7, "L7", 1, JobResult{}};
  ASSERT_TRUE(spool_->put(entry).ok());

  loops().upload(entry);

  EXPECT_THAT(coordinator_.requests, ElementsAre("upload 7:L7 attempt=1 ok token=forgotten", "enroll enrol-secret",
                                                 "upload 7:L7 attempt=1 ok token=t1"));
  EXPECT_THAT(spooled(), IsEmpty());
}

TEST_F(AgentLoopsTest, ATokenAnotherThreadAlreadyReplacedIsNotEnrolledAgain) {
  loops().identity().set(1, "t1");

  EXPECT_TRUE(loops().ensure_enrolled(/*rejected=*/"forgotten"));

  EXPECT_THAT(coordinator_.requests, IsEmpty());
}

TEST_F(AgentLoopsTest, ADrainBeforeTheFirstEnrolmentEndsTheAttempts) {
  loops().identity().set(0, "");
  coordinator_.on_enroll = [this]() -> Result<EnrollResponse> {
    loops().request_stop();
    return unavailable();
  };

  EXPECT_FALSE(loops().ensure_enrolled());

  EXPECT_THAT(coordinator_.requests, ElementsAre("enroll enrol-secret"));
  // With no token of this run yet, the one an earlier run saved is the proof shown.
  EXPECT_THAT(coordinator_.held_tokens, ElementsAre("saved-earlier"));
  EXPECT_THAT(coordinator_.keys, ElementsAre("key-of-this-agent"));
}

// ---- backoff -----------------------------------------------------------------------------------

TEST_F(AgentLoopsTest, LeaseFailuresBackOffDoublingUpTo30sAndASuccessStartsOver) {
  // Polls 1-10 fail, 11 gets an answer, 12-13 fail, 14 finds the agent draining.
  drain_at_poll(14, [](int poll) -> Result<LeaseResponse> {
    if (poll == 11) return no_work();
    return unavailable();
  });

  loops().serve_slot(0);

  EXPECT_THAT(clock_.waits_ms,
              ElementsAre(250, 500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000, /*reset*/ 250, 500));
  for (const auto& [lo, hi] : draws_) EXPECT_EQ(lo, hi / 2) << "each wait is drawn between half and all of its bound";
  EXPECT_EQ(coordinator_.polls, 14);
}

TEST_F(AgentLoopsTest, EnrolmentFailuresBackOff) {
  loops().identity().set(0, "");
  int tries = 0;
  coordinator_.on_enroll = [&]() -> Result<EnrollResponse> {
    if (++tries <= 3) return unavailable();
    return EnrollResponse{4, "t9", {}};
  };

  EXPECT_TRUE(loops().ensure_enrolled());

  EXPECT_THAT(clock_.waits_ms, ElementsAre(250, 500, 1000));
  EXPECT_EQ(loops().identity().get(), (std::pair<std::int64_t, std::string>{4, "t9"}));
  EXPECT_THAT(saved_tokens_, ElementsAre("t9"));
}

TEST_F(AgentLoopsTest, UploadFailuresBackOffUntilTheResultIsAcknowledged) {
  int posts = 0;
  coordinator_.on_upload = [&](const SpoolEntry&) -> Result<UploadAnswer> {
    if (++posts <= 3) return unavailable();
    return UploadAnswer{Upload::kAcknowledged, ""};
  };
  const SpoolEntry entry{7, "L7", 1, JobResult{}};
  ASSERT_TRUE(spool_->put(entry).ok());

  loops().upload(entry);

  EXPECT_EQ(posts, 4);
  EXPECT_THAT(clock_.waits_ms, ElementsAre(250, 500, 1000));
  EXPECT_THAT(spooled(), IsEmpty());
}

// ---- results -----------------------------------------------------------------------------------

TEST_F(AgentLoopsTest, AResultRefusedAsInvalidIsReplacedByAnErrorVerdict) {
  coordinator_.on_upload = [](const SpoolEntry& e) -> Result<UploadAnswer> {
    if (e.result.status == ResultStatus::kOk) return UploadAnswer{Upload::kInvalid, "samples: too few"};
    return UploadAnswer{Upload::kAcknowledged, ""};
  };
  const SpoolEntry entry{7, "L7", 1, JobResult{}};
  ASSERT_TRUE(spool_->put(entry).ok());

  loops().upload(entry);

  EXPECT_THAT(coordinator_.requests,
              ElementsAre("upload 7:L7 attempt=1 ok token=t1", "upload 7:L7 attempt=1 error token=t1"));
  EXPECT_THAT(spooled(), IsEmpty());
}

TEST_F(AgentLoopsTest, AResultIsSpooledBeforeItsFirstUpload) {
  drain_at_poll(2, [](int) -> Result<LeaseResponse> { return granted(7); });
  std::vector<std::string> at_upload;
  coordinator_.on_upload = [&](const SpoolEntry&) -> Result<UploadAnswer> {
    at_upload = spooled();
    return UploadAnswer{Upload::kRefused, "lease_lost"};  // refused for good: dropped too
  };

  loops().serve_slot(0);

  EXPECT_THAT(at_upload, ElementsAre("job-7-attempt-1.json"));
  EXPECT_THAT(spooled(), IsEmpty());
}

TEST_F(AgentLoopsTest, AnExceptionInTheRunnerGivesTheLeaseBackAndTheSlotServesOn) {
  drain_at_poll(3, [](int poll) -> Result<LeaseResponse> { return granted(6 + poll); });
  runner_.body = [](const LeasedJob& j, const KeepGoing&) -> std::optional<JobResult> {
    if (j.job_id == 7) throw std::runtime_error("a bug");
    return JobResult{};
  };

  loops().serve_slot(0);

  EXPECT_THAT(coordinator_.requests,
              ElementsAre("lease cpu wait=25 token=t1", "release 7:L7 token=t1", "lease cpu wait=25 token=t1",
                          "upload 8:L8 attempt=1 ok token=t1", "lease cpu wait=25 token=t1"));
  EXPECT_THAT(clock_.waits_ms, ElementsAre(5000));
}

// ---- the real runner's verdicts without a worker ------------------------------------------------

TEST(BuildJobRunnerTest, AJobForABuildThisAgentLacksIsUnsupportedAndABrokenBuildsIsAnError) {
  TorchBuild broken;
  broken.name = "nightly";
  broken.broken = "its root is missing";
  BuildJobRunner runner({broken}, JobEnvironment{});
  const SlotDescriptor slot{"cpu", "cpu", std::nullopt, std::nullopt};
  int asked = 0;
  const KeepGoing keep_going = [&] { return ++asked > 0; };

  LeasedJob j = job(7);
  j.spec.torch_build = "stable";
  auto lacking = runner.run(j, slot, keep_going);
  j.spec.torch_build = "nightly";
  auto on_broken = runner.run(j, slot, keep_going);

  ASSERT_TRUE(lacking && on_broken);
  EXPECT_EQ(lacking->status, ResultStatus::kUnsupported);
  EXPECT_EQ(lacking->error, "this agent has no torch build named stable");
  EXPECT_EQ(on_broken->status, ResultStatus::kError);
  EXPECT_EQ(on_broken->error, "torch build nightly cannot run jobs on this agent: its root is missing");
  EXPECT_EQ(asked, 0);
}

}  // namespace
}  // namespace benchfleet::agent
