// The Slurm launcher's reconcile loop (slurm/launcher.h) over an in-memory Slurm that answers
// sbatch, squeue, sacct and scontrol as Slurm 22.05 does (the formats the parsers' tests pin),
// and a queue the test sets. The real commands are exercised by the tests against a real Slurm
// (tests/slurm).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "slurm/launcher.h"
#include "slurm/sbatch_script.h"
#include "tests/support/temp_dir.h"

namespace benchfleet::slurm {
namespace {

namespace fs = std::filesystem;

struct FakeJob {
  static FakeJob named(std::string name, std::string state = "PENDING", std::string node = "") {
    FakeJob j;
    j.name = std::move(name);
    j.state = std::move(state);
    j.node = std::move(node);
    return j;
  }
  std::string name;
  std::string state = "PENDING";
  std::string node;
  std::string reason;
  bool forgotten = false;  // slurmctld dropped it (MinJobAge): scontrol no longer knows it
};

class FakeSlurm final : public CommandRunner {
 public:
  std::map<std::string, FakeJob> jobs;  // "7", "8_0", ...
  std::vector<std::vector<std::string>> sbatch_calls;
  bool accounting = true;
  bool squeue_fails = false;
  bool sbatch_fails = false;
  int next_id = 7;

  void start(const std::string& id, const std::string& node = "n1") {
    jobs.at(id).state = "RUNNING";
    jobs.at(id).node = node;
  }
  void end(const std::string& id, const std::string& state, const std::string& reason = "") {
    jobs.at(id).state = state;
    jobs.at(id).reason = reason;
  }

  Result<CommandOutput> run(const std::vector<std::string>& argv, std::chrono::milliseconds) override {
    CommandOutput out;
    out.exit_code = 0;
    const std::string& cmd = argv.at(0);
    if (cmd == "sbatch") {
      sbatch_calls.push_back(argv);
      if (sbatch_fails) {
        out.exit_code = 1;
        out.err = "sbatch: error: Batch job submission failed: Invalid account or account/partition combination\n";
        return out;
      }
      if (!fs::exists(argv.back())) {
        out.exit_code = 1;
        out.err = "sbatch: error: Unable to open file " + argv.back() + "\n";
        return out;
      }
      const std::string name = job_name_of(argv.back());
      const std::string id = std::to_string(next_id++);
      int count = 1;
      for (const auto& a : argv) {
        if (a.rfind("--array=0-", 0) == 0) count = std::stoi(a.substr(10)) + 1;
      }
      if (count == 1) {
        jobs[id] = FakeJob::named(name);
      } else {
        for (int i = 0; i < count; ++i) jobs[id + "_" + std::to_string(i)] = FakeJob::named(name);
      }
      out.out = id + "\n";
    } else if (cmd == "squeue") {
      if (squeue_fails) {
        out.exit_code = 1;
        out.err = "slurm_load_jobs error: Unable to contact slurm controller (connect failure)\n";
        return out;
      }
      std::string names;
      for (const auto& a : argv) {
        if (a.rfind("--name=", 0) == 0) names = "," + a.substr(7) + ",";
      }
      for (const auto& [id, j] : jobs) {
        if (is_final_state(j.state) || names.find("," + j.name + ",") == std::string::npos) continue;
        out.out +=
            id + "|" + j.state + "|" + j.name + "|" + j.node + "|" + (j.reason.empty() ? "None" : j.reason) + "\n";
      }
    } else if (cmd == "sacct") {
      if (!accounting) {
        out.exit_code = 1;
        out.err = "Slurm accounting storage is disabled\n";
        return out;
      }
      std::string ids = "," + argv.back() + ",";
      for (const auto& [id, j] : jobs) {
        if (ids.find("," + id + ",") == std::string::npos) continue;
        out.out += id + "|" + j.state + (j.reason.empty() ? "" : " " + j.reason) +
                   "|2026-11-25T12:00:01|2026-11-25T12:30:00|0:0\n";
      }
    } else if (cmd == "scontrol") {
      const auto it = jobs.find(argv.back());
      if (it == jobs.end() || it->second.forgotten) {
        out.exit_code = 1;
        out.err = "slurm_load_jobs error: Invalid job id specified\n";
        return out;
      }
      const auto us = it->first.find('_');
      out.out = "JobId=99 " +
                (us == std::string::npos
                     ? std::string()
                     : "ArrayJobId=" + it->first.substr(0, us) + " ArrayTaskId=" + it->first.substr(us + 1) + " ") +
                "JobName=" + it->second.name + " JobState=" + it->second.state +
                " Reason=None ExitCode=0:0 StartTime=2026-11-25T12:00:01 EndTime=2026-11-25T12:02:00 NodeList=" +
                (it->second.node.empty() ? "(null)" : it->second.node) + "\n";
      if (us == std::string::npos) out.out.replace(6, 2, it->first);
    } else {
      out.exit_code = 127;
    }
    return out;
  }

 private:
  static std::string job_name_of(const std::string& script) {
    std::ifstream in(script);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("#SBATCH --job-name=", 0) == 0) return line.substr(19);
    }
    return "sbatch";
  }
};

class FakeQueue final : public QueueSource {
 public:
  std::vector<QueueCell> cells;
  bool fails = false;
  Result<std::vector<QueueCell>> fetch() override {
    if (fails) return Error{ErrorCode::kUnavailable, "GET /api/v1/queue: connection refused", {}};
    return cells;
  }
  void set_queued(const std::string& gpu_class, std::int64_t queued) { cells = {{gpu_class, "debian12", queued, 0}}; }
};

class SlurmLauncherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    config_.state_dir = dir_.string();
    config_.max_submissions_per_minute = 4;
    ClassConfig cpu;
    cpu.gpu_class = "cpu";
    cpu.max_allocations = 3;
    cpu.agent_command = "/opt/benchfleet/bin/benchfleet-agent --config /etc/benchfleet/agent.yaml";
    cpu.job_name = "benchfleet-cpu";
    config_.classes = {cpu};
    ASSERT_TRUE(validate(config_).ok());
  }

  std::unique_ptr<Launcher> make_launcher() {
    auto l = std::make_unique<Launcher>(config_, commands_, queue_, clock_);
    auto st = l->prepare();
    EXPECT_TRUE(st.ok()) << st.error().describe();
    return l;
  }

  std::vector<nlohmann::json> timeline() {
    auto events = Timeline((dir_ / "timeline.jsonl").string()).read();
    EXPECT_TRUE(events.ok());
    return events.ok() ? *events : std::vector<nlohmann::json>{};
  }
  std::vector<nlohmann::json> events_of(const std::string& kind) {
    std::vector<nlohmann::json> out;
    for (auto& e : timeline()) {
      if (e.value("event", "") == kind) out.push_back(e);
    }
    return out;
  }

  testing::TempDir tmp_{"slurm_launcher_test"};
  const fs::path dir_ = tmp_.path();
  LauncherConfig config_;
  FakeSlurm slurm_;
  SlurmCommands commands_{config_, slurm_};
  FakeQueue queue_;
  ManualClock clock_;
};

TEST_F(SlurmLauncherTest, SubmitsOneArrayUpToMaxAllocations) {
  auto launcher = make_launcher();
  // The script was written and is the rendered one.
  std::ifstream script(dir_ / "scripts" / "cpu.sh");
  std::stringstream text;
  text << script.rdbuf();
  EXPECT_EQ(text.str(), render_sbatch_script(config_, config_.classes[0]));
  EXPECT_TRUE(fs::is_directory(dir_ / "logs"));

  queue_.set_queued("cpu", 10);
  auto report = launcher->reconcile();
  ASSERT_TRUE(report.status.ok()) << report.status.error().describe();
  EXPECT_EQ(report.sbatch_calls, 1);
  EXPECT_EQ(report.allocations_submitted, 3);
  ASSERT_EQ(slurm_.sbatch_calls.size(), 1u);
  EXPECT_EQ(slurm_.sbatch_calls[0],
            (std::vector<std::string>{"sbatch", "--parsable", "--array=0-2", (dir_ / "scripts" / "cpu.sh").string()}));
  EXPECT_EQ(launcher->tracked().size(), 3u);
  auto submitted = events_of("submitted");
  ASSERT_EQ(submitted.size(), 1u);
  EXPECT_EQ(submitted[0]["slurm_job_id"], "7");
  EXPECT_EQ(submitted[0]["count"], 3);
  EXPECT_EQ(submitted[0]["queued"], 10);
  EXPECT_EQ(submitted[0]["gpu_class"], "cpu");
  EXPECT_EQ(submitted[0]["time"], "2023-11-14T22:13:20.000Z");  // ManualClock's start

  // Still pending: the next passes submit nothing more.
  for (int i = 0; i < 5; ++i) {
    clock_.advance_ms(15'000);
    report = launcher->reconcile();
    ASSERT_TRUE(report.status.ok());
    EXPECT_EQ(report.sbatch_calls, 0);
  }
  // A restart after Slurm forgot the 3 (no accounting, past MinJobAge): they ended; one queued
  // job gets one allocation, not an array, and only once.
  config_.classes[0].max_allocations = 5;
  slurm_.jobs.clear();
  launcher = make_launcher();
  queue_.set_queued("cpu", 1);
  clock_.advance_ms(60'000);
  report = launcher->reconcile();
  EXPECT_EQ(events_of("ended").size(), 3u);
  EXPECT_EQ(report.allocations_submitted, 1);
  EXPECT_EQ(slurm_.sbatch_calls.back().size(), 3u);  // sbatch --parsable SCRIPT
  clock_.advance_ms(60'000);
  report = launcher->reconcile();
  EXPECT_EQ(report.allocations_submitted, 0);
}

TEST_F(SlurmLauncherTest, RecordsStartsAndEndsAndReplacesEndedAllocations) {
  auto launcher = make_launcher();
  queue_.set_queued("cpu", 10);
  ASSERT_TRUE(launcher->reconcile().status.ok());
  slurm_.start("7_0", "n1");
  slurm_.start("7_1", "n2");
  clock_.advance_ms(15'000);
  auto report = launcher->reconcile();
  ASSERT_TRUE(report.status.ok());
  EXPECT_EQ(report.sbatch_calls, 0);
  auto started = events_of("started");
  ASSERT_EQ(started.size(), 2u);
  EXPECT_EQ(started[0]["slurm_job_id"], "7_0");
  EXPECT_EQ(started[0]["node"], "n1");
  EXPECT_EQ(started[1]["node"], "n2");
  // A start is recorded once.
  clock_.advance_ms(15'000);
  ASSERT_TRUE(launcher->reconcile().status.ok());
  EXPECT_EQ(events_of("started").size(), 2u);

  slurm_.end("7_1", "CANCELLED", "by 0");  // scancel
  slurm_.end("7_2", "TIMEOUT");            // ended while pending? no: never started, still an end
  clock_.advance_ms(15'000);
  report = launcher->reconcile();
  ASSERT_TRUE(report.status.ok());
  auto ended = events_of("ended");
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[0]["slurm_job_id"], "7_1");
  EXPECT_EQ(ended[0]["state"], "CANCELLED");
  EXPECT_EQ(ended[0]["reason"], "by 0");
  EXPECT_EQ(ended[0]["node"], "n2");
  EXPECT_EQ(ended[0]["start"], "2026-11-25T12:00:01");
  EXPECT_EQ(ended[1]["state"], "TIMEOUT");
  // Queue still full: the two are replaced by one array of two.
  EXPECT_EQ(report.allocations_submitted, 2);
  EXPECT_EQ(launcher->tracked().size(), 3u);
  EXPECT_EQ(slurm_.sbatch_calls.back()[2], "--array=0-1");
}

TEST_F(SlurmLauncherTest, WithoutAccountingAsksScontrolThenCallsItUnknown) {
  slurm_.accounting = false;
  auto launcher = make_launcher();
  queue_.set_queued("cpu", 3);
  ASSERT_TRUE(launcher->reconcile().status.ok());
  queue_.set_queued("cpu", 0);
  slurm_.start("7_0");
  slurm_.end("7_0", "COMPLETED");
  slurm_.end("7_1", "CANCELLED");
  slurm_.jobs.at("7_1").forgotten = true;
  clock_.advance_ms(15'000);
  auto report = launcher->reconcile();
  ASSERT_TRUE(report.status.ok()) << report.status.error().describe();
  EXPECT_EQ(report.sbatch_calls, 0);  // the queue is empty
  auto ended = events_of("ended");
  ASSERT_EQ(ended.size(), 2u);
  EXPECT_EQ(ended[0]["slurm_job_id"], "7_0");
  EXPECT_EQ(ended[0]["state"], "COMPLETED");
  EXPECT_EQ(ended[0]["node"], "n1");
  EXPECT_EQ(ended[1]["slurm_job_id"], "7_1");
  EXPECT_EQ(ended[1]["state"], "UNKNOWN");
  EXPECT_EQ(ended[1]["reason"], "ended, state unknown");
  EXPECT_EQ(launcher->tracked().size(), 1u);  // 7_2 still pending
}

TEST_F(SlurmLauncherTest, ARestartAdoptsWhatIsRunningAndRecordsWhatEndedMeanwhile) {
  {
    auto first = make_launcher();
    queue_.set_queued("cpu", 10);
    ASSERT_TRUE(first->reconcile().status.ok());
    slurm_.start("7_0");
    slurm_.start("7_1");
    clock_.advance_ms(15'000);
    ASSERT_TRUE(first->reconcile().status.ok());
  }
  // While no launcher runs: one ends, and someone submits the printed script by hand.
  slurm_.end("7_1", "COMPLETED");
  slurm_.jobs["42"] = FakeJob::named("benchfleet-cpu", "RUNNING", "n5");
  slurm_.jobs["43"] = FakeJob::named("someone-else", "RUNNING", "n6");  // not ours
  auto second = make_launcher();
  EXPECT_EQ(second->tracked().size(), 3u);  // from the timeline
  clock_.advance_ms(15'000);
  auto report = second->reconcile();
  ASSERT_TRUE(report.status.ok());
  EXPECT_EQ(events_of("started").size(), 3u);  // 7_0 and 7_1 before, 42 now; none twice
  EXPECT_EQ(events_of("ended").size(), 1u);
  EXPECT_EQ(second->tracked().size(), 3u);  // 7_0, 7_2, 42
  EXPECT_TRUE(second->tracked().contains("42"));
  EXPECT_FALSE(second->tracked().contains("43"));
  EXPECT_EQ(report.allocations_submitted, 0);  // 3 active = max_allocations
  EXPECT_EQ(slurm_.sbatch_calls.size(), 1u);
}

TEST_F(SlurmLauncherTest, ARestartCountsTheLastMinutesSubmissions) {
  config_.max_submissions_per_minute = 1;
  {
    auto first = make_launcher();
    queue_.set_queued("cpu", 10);
    EXPECT_EQ(first->reconcile().sbatch_calls, 1);
  }
  slurm_.end("7_0", "FAILED");  // the agent could not start, say; the launcher restarts at once
  clock_.advance_ms(5'000);
  auto second = make_launcher();
  auto report = second->reconcile();
  EXPECT_EQ(report.sbatch_calls, 0);
  ASSERT_EQ(report.decisions.size(), 1u);
  EXPECT_TRUE(report.decisions[0].rate_limited);
  clock_.advance_ms(55'000);
  EXPECT_EQ(second->reconcile().allocations_submitted, 1);
}

TEST_F(SlurmLauncherTest, SubmitsNothingBlind) {
  auto launcher = make_launcher();
  queue_.set_queued("cpu", 10);
  slurm_.squeue_fails = true;
  auto report = launcher->reconcile();
  ASSERT_FALSE(report.status.ok());
  EXPECT_NE(report.status.error().message.find("Unable to contact slurm controller"), std::string::npos);
  EXPECT_TRUE(slurm_.sbatch_calls.empty());
  slurm_.squeue_fails = false;
  queue_.fails = true;
  report = launcher->reconcile();
  ASSERT_FALSE(report.status.ok());
  EXPECT_NE(report.status.error().message.find("/api/v1/queue"), std::string::npos);
  EXPECT_TRUE(slurm_.sbatch_calls.empty());
  EXPECT_TRUE(timeline().empty());
}

TEST_F(SlurmLauncherTest, AFailedSbatchIsReportedAndStillCountsAgainstTheRate) {
  config_.max_submissions_per_minute = 1;
  auto launcher = make_launcher();
  queue_.set_queued("cpu", 10);
  slurm_.sbatch_fails = true;
  auto report = launcher->reconcile();
  ASSERT_FALSE(report.status.ok());
  EXPECT_NE(report.status.error().message.find("Invalid account"), std::string::npos);
  EXPECT_TRUE(launcher->tracked().empty());
  EXPECT_TRUE(timeline().empty());
  slurm_.sbatch_fails = false;
  clock_.advance_ms(30'000);
  report = launcher->reconcile();
  EXPECT_EQ(report.sbatch_calls, 0);
  ASSERT_EQ(report.decisions.size(), 1u);
  EXPECT_TRUE(report.decisions[0].rate_limited);
  clock_.advance_ms(30'000);
  report = launcher->reconcile();
  EXPECT_EQ(report.allocations_submitted, 3);
}

}  // namespace
}  // namespace benchfleet::slurm
