// The agent inside a batch allocation (agent/daemon/allocation.h, AllocationRules of
// agent_loops.h): the Slurm job read from its environment, squeue's time left, the estimate and
// the fit; then the loops with the fakes of agent_loops_test: a job that cannot finish before the
// deadline is given back untouched and the agent drains, the idle exit, the margin, and a worker
// killed from outside (a real child, SIGTERM from this test) releases its lease instead of
// reporting a crash.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "agent/daemon/agent_config.h"
#include "agent/daemon/agent_loops.h"
#include "agent/daemon/allocation.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/agent_loops_fakes.h"

namespace benchfleet::agent {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using namespace fakes;                 // NOLINT(google-build-using-namespace)
using namespace std::chrono_literals;  // NOLINT(google-build-using-namespace)
using TimePoint = std::chrono::steady_clock::time_point;

// ---- the Slurm job from its environment --------------------------------------------------------

TEST(SlurmAllocation, TheNameIsTheClusterAndTheJobIdOrTheArrayTask) {
  auto plain = slurm_allocation_from({{"SLURM_JOB_ID", "4242"}, {"SLURM_CLUSTER_NAME", "hpc"}});
  ASSERT_TRUE(plain.ok()) << plain.error().describe();
  EXPECT_EQ(plain->name, "slurm-hpc-4242");
  EXPECT_EQ(plain->job_id, "4242");

  auto task =
      slurm_allocation_from({{"SLURM_JOB_ID", "4245"}, {"SLURM_ARRAY_JOB_ID", "4242"}, {"SLURM_ARRAY_TASK_ID", "3"}});
  ASSERT_TRUE(task.ok());
  EXPECT_EQ(task->name, "slurm-4242_3");  // no cluster name: left out
  // What squeue -j is asked about: the task itself. `squeue -j 4242` would list every task of
  // the array for the task whose SLURM_JOB_ID is 4242, and its time left would be unreadable.
  EXPECT_EQ(task->job_id, "4242_3");
  EXPECT_EQ(task->raw_job_id, "4245");

  auto odd = slurm_allocation_from({{"SLURM_JOB_ID", "7"}, {"SLURM_CLUSTER_NAME", "my cluster/α"}});
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(odd->name, "slurm-my-cluster----7");  // the space, the slash and each byte of α
}

TEST(SlurmAllocation, WithoutSlurmJobIdItIsAnErrorNamingAllocation) {
  auto a = slurm_allocation_from({{"SLURM_CLUSTER_NAME", "hpc"}});
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().field, "allocation");
  EXPECT_THAT(a.error().message, HasSubstr("SLURM_JOB_ID"));
}

TEST(SlurmAllocation, BoundGpusComeFromSlurmJobGpusElseCudaVisibleDevices) {
  auto both =
      slurm_allocation_from({{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_GPUS", "2,3"}, {"CUDA_VISIBLE_DEVICES", "0,1"}});
  ASSERT_TRUE(both.ok());
  EXPECT_THAT(both->bound_gpus, ElementsAre("2", "3"));
  auto cuda = slurm_allocation_from({{"SLURM_JOB_ID", "1"}, {"CUDA_VISIBLE_DEVICES", "GPU-aa, GPU-bb"}});
  ASSERT_TRUE(cuda.ok());
  EXPECT_THAT(cuda->bound_gpus, ElementsAre("GPU-aa", "GPU-bb"));
  auto none = slurm_allocation_from({{"SLURM_JOB_ID", "1"}, {"CUDA_VISIBLE_DEVICES", "-1"}});
  ASSERT_TRUE(none.ok());
  EXPECT_THAT(none->bound_gpus, IsEmpty());
}

std::vector<GpuInfo> node_gpus(int n) {
  std::vector<GpuInfo> out;
  for (int i = 0; i < n; ++i) {
    GpuInfo g;
    g.index = i;
    g.uuid = "GPU-" + std::to_string(i);
    g.name = "NVIDIA A100-SXM4-40GB";
    out.push_back(g);
  }
  return out;
}

std::vector<int> indices(const std::vector<GpuInfo>& gpus) {
  std::vector<int> out;
  for (const auto& g : gpus) out.push_back(g.index);
  return out;
}

TEST(SlurmAllocation, OnlyTheBoundGpusOfTheNodeAreTaken) {
  EXPECT_THAT(indices(allocated_gpus(node_gpus(4), {"1", "3"})), ElementsAre(1, 3));
  EXPECT_THAT(indices(allocated_gpus(node_gpus(4), {"GPU-2"})), ElementsAre(2));
  // Nothing bound: a cpu slot, never the node's GPUs (they are other jobs').
  EXPECT_THAT(allocated_gpus(node_gpus(4), {}), IsEmpty());
  // A device cgroup: nvidia-smi lists the two bound GPUs only, numbered from 0.
  EXPECT_THAT(indices(allocated_gpus(node_gpus(2), {"5", "6"})), ElementsAre(0, 1));
  // Bound GPUs nvidia-smi cannot see, with others visible: none taken.
  EXPECT_THAT(allocated_gpus(node_gpus(3), {"5", "6"}), IsEmpty());
}

TEST(SlurmAllocation, TheAllocationOptionSetsTheNameAndPerAllocationDirectories) {
  AgentConfig c;
  c.allocation = "slurm";
  c.state_dir = "/var/lib/bf";
  ASSERT_TRUE(apply_allocation(c, false, {{"SLURM_JOB_ID", "4242"}}).ok());
  EXPECT_EQ(c.name, "slurm-4242");
  EXPECT_EQ(c.state_dir, "/var/lib/bf/slurm-4242");
  EXPECT_EQ(c.allocation_dir, "/var/lib/bf/slurm-4242");
  EXPECT_EQ(c.artifact_dir, "/var/lib/bf/artifacts");  // shared by the allocations
  ASSERT_TRUE(c.slurm.has_value());

  AgentConfig named;
  named.allocation = "slurm";
  named.name = "mine";
  ASSERT_TRUE(apply_allocation(named, true, {{"SLURM_JOB_ID", "1"}}).ok());
  EXPECT_EQ(named.name, "mine");

  AgentConfig resident;  // allocation none: nothing changes
  ASSERT_TRUE(apply_allocation(resident, false, {{"SLURM_JOB_ID", "1"}}).ok());
  EXPECT_FALSE(resident.slurm.has_value());
  EXPECT_EQ(resident.state_dir, "./benchfleet-agent");
}

TEST(SlurmAllocation, BadAllocationOptionsAreErrorsNamingTheOption) {
  const auto field_of = [](AgentConfig c, const std::map<std::string, std::string>& env = {{"SLURM_JOB_ID", "1"}}) {
    const Status s = apply_allocation(c, false, env);
    return s.ok() ? std::string("ok") : s.error().field;
  };
  AgentConfig c;
  c.allocation = "pbs";
  EXPECT_EQ(field_of(c), "allocation");
  c.allocation = "slurm";
  EXPECT_EQ(field_of(c, {}), "allocation");  // no SLURM_JOB_ID
  c = AgentConfig{};
  c.end_at = -1;
  EXPECT_EQ(field_of(c), "end_at");
  c.end_at = std::int64_t{1} << 50;  // milliseconds, not seconds
  EXPECT_EQ(field_of(c), "end_at");
  c = AgentConfig{};
  c.end_margin_s = -5;
  EXPECT_EQ(field_of(c), "end_margin_s");
  c = AgentConfig{};
  c.idle_exit_s = -1;
  EXPECT_EQ(field_of(c), "idle_exit_s");
}

// ---- squeue's time left, the estimate, the fit -------------------------------------------------

std::optional<std::int64_t> left(std::string_view text) {
  auto r = parse_slurm_time_left(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.error().describe();
  return r.ok() ? *r : std::optional<std::int64_t>(-1);
}

TEST(SlurmTimeLeft, EveryFormatSqueuePrints) {
  EXPECT_EQ(left("1-02:03:04"), 93784);
  EXPECT_EQ(left("02:03:04\n"), 7384);
  EXPECT_EQ(left("05:00"), 300);
  EXPECT_EQ(left("45"), 45);
  EXPECT_EQ(left("0:00"), 0);
  EXPECT_EQ(left("UNLIMITED"), std::nullopt);
  EXPECT_EQ(left("NOT_SET"), std::nullopt);
  for (const char* bad : {"INVALID", "", "1-02", "1:2:3:4", "ab:cd", "-5", "12:xx"}) {
    auto r = parse_slurm_time_left(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_EQ(r.error().field, "squeue");
    }
  }
}

TEST(JobEstimate, TheLongestMeasuredForTheCellElseTheTimeoutPlusTheKillGrace) {
  LeasedJob j = job(1);
  j.timeout_s = 600;
  EXPECT_EQ(estimated_duration(j, std::nullopt, 10), 610s);
  EXPECT_EQ(estimated_duration(j, 42s, 10), 52s);

  DurationRecord record;
  record.add(j.spec, 40s);
  record.add(j.spec, 90s);
  record.add(j.spec, 60s);
  EXPECT_EQ(record.longest(j.spec), std::optional<std::chrono::milliseconds>(90s));
  JobSpec repetition = j.spec;
  repetition.repetition = 3;  // another repetition: the same cell
  EXPECT_EQ(record.longest(repetition), std::optional<std::chrono::milliseconds>(90s));
  std::vector<JobSpec> others(6, j.spec);  // each differs from j.spec in one part of the cell
  others[0].batch = 2;
  others[1].mode = Mode::kTorchscript;
  others[2].dtype = Dtype::kFloat16;
  others[3].runtime = Runtime::kPython;
  others[4].torch_build = "nightly";
  others[5].model = "torchvision/resnet50";
  for (const auto& other : others) {
    EXPECT_EQ(record.longest(other), std::nullopt) << duration_cell(other);
  }
}

TEST(JobEstimate, AJobFitsWhenItEndsTheMarginBeforeTheDeadline) {
  const TimePoint now{};
  EXPECT_TRUE(fits_before(now, now + 100s, 70s, 30s));
  EXPECT_FALSE(fits_before(now, now + 100s, 71s, 30s));
  EXPECT_FALSE(fits_before(now, now - 1s, 0s, 0s));
}

TEST(KilledFromOutside, SigtermAlwaysAndSigkillOnlyWhileTheAgentStops) {
  JobResult crash;
  crash.status = ResultStatus::kCrash;
  crash.signal = SIGTERM;
  EXPECT_TRUE(killed_from_outside(crash, false));
  crash.signal = SIGKILL;  // the OOM killer, say: a crash unless the agent is stopping
  EXPECT_FALSE(killed_from_outside(crash, false));
  EXPECT_TRUE(killed_from_outside(crash, true));
  crash.signal = SIGSEGV;
  EXPECT_FALSE(killed_from_outside(crash, true));
  JobResult timeout;  // the agent's own kill at timeout_s is a timeout verdict
  timeout.status = ResultStatus::kTimeout;
  EXPECT_FALSE(killed_from_outside(timeout, true));
}

// ---- the loops in an allocation -----------------------------------------------------------------

class AllocationLoopsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    spool_ = std::make_unique<Spool>(dir_ + "/spool");
    ASSERT_TRUE(spool_->open().ok());
    rules_.end_margin = 30s;
    rules_.kill_grace_s = 10;
    rules_.read_deadline = [this] {
      ++deadline_reads_;
      return deadline_;
    };
  }

  // One cpu slot holding the token "t1"; `runner` replaces the fake runner.
  AgentLoops& loops(JobRunner* runner = nullptr) {
    if (loops_) return *loops_;
    AgentLoopParts parts;
    parts.connect = [this](AgentIdentity& identity) { return std::make_unique<FakeClient>(coordinator_, identity); };
    parts.runner = runner != nullptr ? runner : &runner_;
    parts.spool = spool_.get();
    parts.clock = &clock_;
    parts.uniform = [](std::int64_t, std::int64_t hi) { return hi; };
    parts.descriptor.name = "slurm-4242";
    parts.descriptor.slots = {SlotDescriptor{"cpu", "cpu", std::nullopt, std::nullopt}};
    parts.allocation = rules_;
    loops_ = std::make_unique<AgentLoops>(std::move(parts));
    coordinator_.on_runaway = [this] {
      loops_->request_stop();
      loops_->request_stop();
    };
    loops_->identity().set(1, "t1");
    return *loops_;
  }

  static TimePoint at(std::chrono::seconds s) { return TimePoint{} + s; }
  static LeaseResponse granted_job(std::int64_t id, int timeout_s, int batch = 1) {
    LeaseResponse r = granted(id);
    r.job->timeout_s = timeout_s;
    r.job->spec.batch = batch;
    return r;
  }
  std::vector<int> lease_waits() const {
    std::vector<int> out;
    for (const auto& r : coordinator_.requests) {
      if (r.rfind("lease cpu wait=", 0) == 0) out.push_back(std::stoi(r.substr(15)));
    }
    return out;
  }
  bool any_request_starting(const std::string& prefix) const {
    for (const auto& r : coordinator_.requests) {
      if (r.rfind(prefix, 0) == 0) return true;
    }
    return false;
  }

  FakeCoordinator coordinator_;
  FakeRunner runner_;
  FakeWaitClock clock_;
  AllocationRules rules_;
  std::optional<TimePoint> deadline_;
  int deadline_reads_ = 0;
  testing::TempDir tmp_{"agent_allocation_test"};
  const std::string dir_ = tmp_.str();
  std::unique_ptr<Spool> spool_;
  std::unique_ptr<AgentLoops> loops_;
};

TEST_F(AllocationLoopsTest, AJobWhoseTimeoutDoesNotFitIsGivenBackUntouchedNeverRunAndTheAgentDrains) {
  deadline_ = at(100s);  // 61 s + 10 s grace + 30 s margin is 101 s
  coordinator_.on_lease = [](int poll) -> Result<LeaseResponse> {
    if (poll > 1) return no_work();  // told of the drain, the coordinator withdrew the grant
    return granted_job(7, 61);
  };

  loops().serve_slot(0);

  EXPECT_THAT(runner_.ran, IsEmpty());
  // Withdrawn (same attempt), not released (which would use the attempt up).
  EXPECT_THAT(coordinator_.requests, ElementsAre("lease cpu wait=25 token=t1", "heartbeat [] draining=1 token=t1",
                                                 "lease cpu wait=0 token=t1"));
  EXPECT_TRUE(loops().draining());
  EXPECT_FALSE(loops().aborting());
  EXPECT_THAT(loops().exit_reason(), HasSubstr("job 7 (estimate 71 s, its timeout_s"));
  EXPECT_EQ(loops().jobs_run(), 0);
}

TEST_F(AllocationLoopsTest, AJobThatJustFitsRuns) {
  deadline_ = at(100s);  // 60 s + 10 s + 30 s
  coordinator_.on_lease = [this](int poll) -> Result<LeaseResponse> {
    if (poll == 1) return granted_job(7, 60);
    loops().request_stop();
    return no_work();
  };

  loops().serve_slot(0);

  EXPECT_THAT(runner_.ran, ElementsAre(7));
  EXPECT_TRUE(any_request_starting("upload 7:L7 attempt=1 ok"));
  EXPECT_EQ(loops().jobs_run(), 1);
}

TEST_F(AllocationLoopsTest, TheLongestMeasuredDurationOfTheCellReplacesTheTimeoutInTheEstimate) {
  deadline_ = at(1000s);
  coordinator_.on_lease = [](int poll) -> Result<LeaseResponse> {
    if (poll <= 2) return granted_job(poll, 600);  // the same cell twice
    if (poll == 3) return granted_job(3, 600, /*batch=*/2);
    return no_work();
  };
  runner_.body = [this](const LeasedJob&, const KeepGoing&) -> std::optional<JobResult> {
    clock_.advance(400s);
    return JobResult{};
  };

  loops().serve_slot(0);

  // Job 2 at 400 s: 400 + 410 + 30 fits (its timeout would not: 400 + 610 + 30). Job 3 at 800 s,
  // of another cell, has only its timeout to go by: given back.
  EXPECT_THAT(runner_.ran, ElementsAre(1, 2));
  EXPECT_FALSE(any_request_starting("release"));
  EXPECT_EQ(coordinator_.requests.back(), "lease cpu wait=0 token=t1");
  EXPECT_THAT(loops().exit_reason(), HasSubstr("job 3 (estimate 610 s"));
}

TEST_F(AllocationLoopsTest, TheDeadlineIsReadAgainAfterEachJob) {
  deadline_ = at(1000s);
  coordinator_.on_lease = [](int poll) -> Result<LeaseResponse> {
    if (poll <= 2) return granted_job(poll, 60, poll);
    return no_work();
  };
  runner_.body = [this](const LeasedJob&, const KeepGoing&) -> std::optional<JobResult> {
    deadline_ = at(100s);  // an admin shortens the time limit while job 1 runs
    clock_.advance(10s);
    return JobResult{};
  };

  loops().serve_slot(0);

  EXPECT_THAT(runner_.ran, ElementsAre(1));  // job 2 (10 + 70 + 30 > 100) was not started
  EXPECT_EQ(deadline_reads_, 2);
  EXPECT_TRUE(loops().draining());
}

TEST_F(AllocationLoopsTest, WithLessThanTheMarginLeftTheAgentDrainsWithoutLeasing) {
  deadline_ = at(20s);

  loops().serve_slot(0);

  EXPECT_THAT(coordinator_.requests, IsEmpty());
  EXPECT_THAT(loops().exit_reason(), HasSubstr("less than end_margin_s (30 s) left"));
}

TEST_F(AllocationLoopsTest, TheLeasePollEndsWhenTheMarginBeforeTheDeadlineBegins) {
  deadline_ = at(40s);
  coordinator_.on_lease = [this](int) -> Result<LeaseResponse> {
    clock_.advance(std::chrono::seconds(coordinator_.last_wait_s));  // no work within the wait
    return no_work();
  };

  loops().serve_slot(0);

  EXPECT_THAT(lease_waits(), ElementsAre(10));  // not the long poll's 25 s
  EXPECT_THAT(loops().exit_reason(), HasSubstr("less than end_margin_s"));
}

TEST_F(AllocationLoopsTest, TheAgentDrainsAfterIdleExitWithNoJobCountingFromTheLastJobsEnd) {
  rules_.read_deadline = nullptr;  // no deadline
  rules_.idle_exit = 60s;
  coordinator_.on_lease = [this](int poll) -> Result<LeaseResponse> {
    clock_.advance(std::chrono::seconds(coordinator_.last_wait_s));
    return poll == 2 ? granted(5) : no_work();
  };
  runner_.body = [this](const LeasedJob&, const KeepGoing&) -> std::optional<JobResult> {
    clock_.advance(100s);
    return JobResult{};
  };

  loops().serve_slot(0);

  // Idle from 0 to 50 s, job 5 until 150 s, idle again: 25 + 25 + 10 s of polls after it.
  EXPECT_THAT(lease_waits(), ElementsAre(25, 25, 25, 25, 10));
  EXPECT_EQ(clock_.now(), at(210s));
  EXPECT_THAT(runner_.ran, ElementsAre(5));
  EXPECT_EQ(loops().exit_reason(), "idle for 60 s (idle_exit_s 60)");
  EXPECT_FALSE(loops().aborting());
}

TEST_F(AllocationLoopsTest, DrainingByItselfIsNotAStopRequestASigtermAfterItDrainsAndTheSecondAborts) {
  loops().drain_by_itself("idle for 60 s");
  EXPECT_TRUE(loops().draining());
  EXPECT_FALSE(loops().aborting());
  loops().request_stop();  // Slurm's --signal before the end
  EXPECT_FALSE(loops().aborting());
  EXPECT_EQ(loops().exit_reason(), "idle for 60 s");
  loops().request_stop();
  EXPECT_TRUE(loops().aborting());
  EXPECT_EQ(loops().exit_reason(), "aborted on a second stop request");
}

// A worker's end by `signal`, `stop_first` with the agent stopping (drain) when it came.
class KilledWorkerTest : public AllocationLoopsTest {
 protected:
  void run_one_job_killed_by(int signal, bool stop_first) {
    rules_.read_deadline = nullptr;
    coordinator_.on_lease = [this](int poll) -> Result<LeaseResponse> {
      if (poll == 1) return granted(7);
      loops().request_stop();
      return no_work();
    };
    runner_.body = [this, signal, stop_first](const LeasedJob&, const KeepGoing&) -> std::optional<JobResult> {
      if (stop_first) loops().request_stop();
      JobResult r;
      r.status = ResultStatus::kCrash;
      r.signal = signal;
      return r;
    };
    loops().serve_slot(0);
  }
};

TEST_F(KilledWorkerTest, AWorkerEndedBySigtermReleasesItsLeaseAndReportsNoCrash) {
  run_one_job_killed_by(SIGTERM, false);
  EXPECT_THAT(coordinator_.requests,
              ElementsAre("lease cpu wait=25 token=t1", "release 7:L7 token=t1", "lease cpu wait=25 token=t1"));
  EXPECT_FALSE(any_request_starting("upload"));
  EXPECT_EQ(loops().jobs_run(), 0);
}

TEST_F(KilledWorkerTest, AWorkerSigkilledWhileTheAgentStopsReleasesItsLease) {
  run_one_job_killed_by(SIGKILL, true);
  EXPECT_THAT(coordinator_.requests, ElementsAre("lease cpu wait=25 token=t1", "release 7:L7 token=t1"));
}

TEST_F(KilledWorkerTest, AWorkerSigkilledWhileTheAgentServesIsACrash) {
  run_one_job_killed_by(SIGKILL, false);  // the OOM killer, say
  EXPECT_TRUE(any_request_starting("upload 7:L7 attempt=1 crash"));
  EXPECT_FALSE(any_request_starting("release"));
}

// The real runner and a real child: a python-runtime job whose "python" is /bin/sh running a
// script that records its pid and sleeps; the test kills it from outside, as Slurm would.
class RealWorkerKilledTest : public AllocationLoopsTest {
 protected:
  // The requests of one job whose child this test kills with `signal` once it runs.
  void run_job_killed_from_outside(int signal) {
    rules_.read_deadline = nullptr;
    const std::string script = dir_ + "/runner.sh";
    const std::string pid_file = dir_ + "/pid";
    std::ofstream(script) << "echo $$ > " << pid_file << ".tmp && mv " << pid_file << ".tmp " << pid_file
                          << "\nexec sleep 30\n";
    TorchBuild build;
    build.name = "local";
    build.python = "/bin/sh";
    BuildLauncher launcher("/nonexistent/in-root.sh", {}, {}, dir_ + "/inductor");
    JobEnvironment shared;
    shared.launcher = &launcher;
    shared.runner = script;
    shared.work_dir = dir_ + "/work";
    shared.kill_grace_s = 1;
    BuildJobRunner runner({build}, shared);
    coordinator_.on_lease = [this](int poll) -> Result<LeaseResponse> {
      if (poll > 1) {
        loops().request_stop();
        return no_work();
      }
      LeaseResponse r = granted(7);
      r.job->spec.runtime = Runtime::kPython;
      return r;
    };
    std::thread killer([&] {
      for (int i = 0; i < 1000 && !std::filesystem::exists(pid_file); ++i) std::this_thread::sleep_for(10ms);
      int pid = 0;
      std::ifstream(pid_file) >> pid;
      if (pid > 0) ::kill(pid, signal);
    });
    loops(&runner).serve_slot(0);
    killer.join();
  }
};

TEST_F(RealWorkerKilledTest, ARunnerKilledBySigtermFromOutsideReleasesItsLease) {
  run_job_killed_from_outside(SIGTERM);
  EXPECT_THAT(coordinator_.requests,
              ElementsAre("lease cpu wait=25 token=t1", "release 7:L7 token=t1", "lease cpu wait=25 token=t1"));
  EXPECT_TRUE(std::filesystem::is_empty(dir_ + "/spool"));
}

TEST_F(RealWorkerKilledTest, ARunnerKilledBySigkillFromOutsideWhileServingIsACrash) {
  run_job_killed_from_outside(SIGKILL);
  EXPECT_TRUE(any_request_starting("upload 7:L7 attempt=1 crash")) << ::testing::PrintToString(coordinator_.requests);
}

}  // namespace
}  // namespace benchfleet::agent
