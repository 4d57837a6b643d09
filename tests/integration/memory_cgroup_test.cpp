// Integration: a job's memory cgroup on this machine's real cgroup tree (agent/daemon/
// memory_cgroup.h, job_memory_cap.h), with a real child process that speaks the job's end of the
// protocol through agent/python/benchfleet_memory_cgroup.py (no torch: it allocates with
// bytearray). Where this host lets no process make memory cgroups (not root, no delegation), the
// tests are skipped with the reason: the agent then falls back to the job's own RLIMIT_AS, which
// the worker and runner tests cover.
#include <signal.h>

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "agent/daemon/job_memory_cap.h"
#include "agent/daemon/memory_cgroup.h"
#include "agent/daemon/process.h"
#include "tests/support/temp_dir.h"

namespace benchfleet::agent {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

std::optional<CgroupLocation> usable_location(std::string& why_not) {
  auto where = this_process_memory_cgroup();
  if (!where) {
    why_not = "no memory cgroup hierarchy for this process";
    return std::nullopt;
  }
  if (auto s = probe_memory_cgroup(*where); !s) {
    why_not = s.error().message;
    return std::nullopt;
  }
  return where;
}

// A job's cap of `limit` bytes in a cgroup of this test's own, its files in `dir`; nullopt with
// `why_not` where this host lets no process make memory cgroups.
std::optional<JobMemoryCap> cap_for(const std::string& test, std::int64_t limit, const testing::TempDir& dir,
                                    std::string& why_not) {
  const auto where = usable_location(why_not);
  if (!where) return std::nullopt;
  auto cap = JobMemoryCap::start(*where, "benchfleet-test-" + std::to_string(::getpid()) + "-" + test, limit,
                                 dir.path().string());
  if (!cap.ok()) {
    ADD_FAILURE() << cap.error().message;  // the probe said it could
    why_not = cap.error().message;
    return std::nullopt;
  }
  return std::move(*cap);
}

const char* expected_kind() {
  const auto where = this_process_memory_cgroup();
  return where && where->version == CgroupVersion::kV2 ? "cgroup-v2" : "cgroup-v1";
}

// Runs `script` (python, with agent/python on its path) in the job's cgroup while the cap is
// served, as run_leased_job does; returns how it ended.
ExitInfo run_in_cap(JobMemoryCap& cap, const std::string& job_dir, const std::string& script) {
  SpawnOptions o;
  o.argv = joining_cgroup(cap.cgroup_path(), {"/usr/bin/python3", "-c", script});
  o.env_set[JobMemoryCap::environment_variable()] = job_dir;
  o.env_set["PYTHONPATH"] = std::string(BENCHFLEET_SOURCE_DIR) + "/agent/python";
  o.stderr_path = job_dir + "/stderr.txt";
  auto child = Child::spawn(o);
  EXPECT_TRUE(child.ok()) << child.error().message;
  if (!child.ok()) return {};
  return supervise(*child, 60s, 1s, 1s, {}, [&cap] { cap.serve(); });
}

std::string stderr_of(const std::string& job_dir) {
  std::ifstream in(job_dir + "/stderr.txt");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(JobMemoryCgroup, AJobPastItsCapIsKilledAndReportedAsOomInItsPhase) {
  testing::TempDir dir("benchfleet-cgroup");
  std::string why_not;
  auto cap = cap_for("oom", 64 << 20, dir, why_not);
  if (!cap) GTEST_SKIP() << "no memory cgroups here: " << why_not;
  const std::string path = cap->cgroup_path();
  ASSERT_TRUE(fs::is_directory(path));

  // Capped at 64 MiB beyond its start-up, the child touches 400 MiB: the kernel kills it.
  const ExitInfo exit = run_in_cap(*cap, dir.path().string(), R"(
import sys
import benchfleet_memory_cgroup as m
answer = m.ask_agent("cap")
print("answer:", answer, file=sys.stderr, flush=True)
assert answer.startswith("capped cgroup-v"), answer
m.note_phase("warmup")
held = bytearray(400 << 20)
print("not killed", file=sys.stderr, flush=True)
)");
  EXPECT_EQ(exit.signal, SIGKILL) << stderr_of(dir.path().string());

  JobResult r;
  r.status = ResultStatus::kCrash;
  r.signal = SIGKILL;
  r.error = "the python runner was killed by signal 9";
  r.environment = {{"host", "x"}};
  cap->finish(r);
  EXPECT_EQ(r.status, ResultStatus::kOom);
  ASSERT_TRUE(r.oom.has_value());
  EXPECT_EQ(r.oom->phase, OomPhase::kWarmup);  // the phase the job last wrote
  ASSERT_TRUE(r.error.has_value());
  EXPECT_NE(r.error->find("the kernel killed the job in phase warmup at its memory cap"), std::string::npos)
      << *r.error;
  EXPECT_NE(r.error->find("64 MiB over its start-up"), std::string::npos) << *r.error;
  EXPECT_NE(r.error->find("killed by signal 9"), std::string::npos) << "the job's own report is kept";
  ASSERT_TRUE(r.memory.has_value());
  EXPECT_EQ(r.memory->cap.value_or(""), expected_kind());
  EXPECT_EQ(r.memory->cap_bytes.value_or(0), 64 << 20);
  // It reached the cap: within a page cache's slack of it, never far beyond.
  EXPECT_GT(r.memory->peak_growth_bytes.value_or(0), 48 << 20);
  EXPECT_LT(r.memory->peak_growth_bytes.value_or(0), 96 << 20);
  EXPECT_EQ(r.environment, nlohmann::json({{"host", "x"}})) << "the fingerprint is kept";

  // The cgroup goes with its owner.
  cap.reset();
  EXPECT_FALSE(fs::exists(path));
}

TEST(JobMemoryCgroup, ALiftedCapLetsTheJobGrowAndKeepsThePeakUnderTheCap) {
  testing::TempDir dir("benchfleet-cgroup");
  std::string why_not;
  auto cap = cap_for("lift", 64 << 20, dir, why_not);
  if (!cap) GTEST_SKIP() << "no memory cgroups here: " << why_not;

  // 16 MiB under the cap, then 200 MiB once it is lifted (as the accuracy check does).
  const ExitInfo exit = run_in_cap(*cap, dir.path().string(), R"(
import sys
import benchfleet_memory_cgroup as m
assert m.ask_agent("cap").startswith("capped ")
m.note_phase("measure")
small = bytearray(16 << 20)
answer = m.ask_agent("lift")
assert answer == "lifted", answer
big = bytearray(200 << 20)
)");
  EXPECT_EQ(exit.signal, 0) << stderr_of(dir.path().string());
  EXPECT_EQ(exit.exit_code, 0) << stderr_of(dir.path().string());

  JobResult r;  // ok, as the runner reported it
  r.memory = MemoryInfo{};
  r.memory->peak_rss_bytes = 300 << 20;
  cap->finish(r);
  EXPECT_EQ(r.status, ResultStatus::kOk);
  ASSERT_TRUE(r.memory.has_value());
  EXPECT_EQ(r.memory->peak_rss_bytes.value_or(0), 300 << 20) << "the job's own figures are kept";
  EXPECT_EQ(r.memory->cap_bytes.value_or(0), 64 << 20);
  // The peak under the cap: the 16 MiB, not the 200 MiB held after lifting it.
  EXPECT_GT(r.memory->peak_growth_bytes.value_or(0), 15 << 20);
  EXPECT_LT(r.memory->peak_growth_bytes.value_or(0), 64 << 20);
  EXPECT_FALSE(r.telemetry.contains("memory_cap_oom_kills"));
}

TEST(JobMemoryCgroup, AJobThatNeverAsksRunsUncappedAndIsLeftAlone) {
  testing::TempDir dir("benchfleet-cgroup");
  std::string why_not;
  auto cap = cap_for("quiet", 8 << 20, dir, why_not);
  if (!cap) GTEST_SKIP() << "no memory cgroups here: " << why_not;
  const ExitInfo exit = run_in_cap(*cap, dir.path().string(), "held = bytearray(64 << 20)");
  EXPECT_EQ(exit.exit_code, 0) << stderr_of(dir.path().string());
  JobResult r;
  r.status = ResultStatus::kError;
  r.error = "something else";
  cap->finish(r);
  EXPECT_EQ(r.status, ResultStatus::kError);
  EXPECT_FALSE(r.memory.has_value()) << "no cap was applied, so none is named";
}

TEST(JobMemoryCgroup, AGoneAgentsEmptyCgroupsAreRemovedAndALiveOnesKept) {
  std::string why_not;
  const auto where = usable_location(why_not);
  if (!where) GTEST_SKIP() << "no memory cgroups here: " << why_not;
  // A pid that ran and is gone: a child of this test, reaped.
  SpawnOptions o;
  o.argv = {"/bin/true"};
  auto child = Child::spawn(o);
  ASSERT_TRUE(child.ok());
  const pid_t gone = child->pid();
  supervise(*child, 10s, 1s, 1s, {});
  const fs::path dead = fs::path(where->directory) / ("benchfleet-" + std::to_string(gone) + "-cpu-job7-1");
  const fs::path live = fs::path(where->directory) / ("benchfleet-" + std::to_string(::getpid()) + "-cpu-job7-1");
  const fs::path other = fs::path(where->directory) / "benchfleet-test-not-an-agents";
  for (const auto& p : {dead, live, other}) ASSERT_TRUE(fs::create_directory(p)) << p;
  EXPECT_GE(remove_stale_job_cgroups(*where), 1);
  EXPECT_FALSE(fs::exists(dead));
  EXPECT_TRUE(fs::exists(live)) << "its agent (this process) still runs";
  EXPECT_TRUE(fs::exists(other)) << "not named after an agent";
  fs::remove(live);
  fs::remove(other);
}

}  // namespace
}  // namespace benchfleet::agent
