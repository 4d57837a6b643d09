// The supervisor against real /bin/sh children.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <thread>

#include "agent/daemon/process.h"
#include "tests/support/temp_dir.h"

namespace benchfleet::agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class ProcessTest : public ::testing::Test {
 protected:
  SpawnOptions sh(const std::string& script) {
    SpawnOptions o;
    o.argv = {"/bin/sh", "-c", script};
    o.stdout_path = (dir_ / "out").string();
    o.stderr_path = (dir_ / "err").string();
    return o;
  }
  std::string read(const char* name) {
    std::ifstream in(dir_ / name);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  testing::TempDir tmp_{"bf-proc"};
  const fs::path dir_ = tmp_.path();
};

TEST_F(ProcessTest, ExitCodeOutputAndEnvironment) {
  auto o = sh("echo out-$BF_X; echo err-line >&2; test -z \"$BF_GONE\" && exit 3");
  o.env_set["BF_X"] = "42";
  ::setenv("BF_GONE", "present", 1);
  o.env_unset.push_back("BF_GONE");
  auto child = Child::spawn(o);
  ::unsetenv("BF_GONE");
  ASSERT_TRUE(child.ok());
  auto info = supervise(*child, 10s, 1s, 1s, {});
  EXPECT_EQ(info.exit_code, 3);
  EXPECT_EQ(info.signal, 0);
  EXPECT_FALSE(info.timed_out);
  EXPECT_EQ(read("out"), "out-42\n");
  EXPECT_EQ(tail_of_file((dir_ / "err").string(), 5), "err-line");
}

TEST_F(ProcessTest, ASignalIsReported) {
  auto child = Child::spawn(sh("kill -SEGV $$"));
  ASSERT_TRUE(child.ok());
  auto info = supervise(*child, 10s, 1s, 1s, {});
  EXPECT_EQ(info.signal, SIGSEGV);
}

TEST_F(ProcessTest, ALauncherReportingSignalsAsExitStatusGivesTheSignal) {
  // bubblewrap (a build in its own root) exits 128+N when its command dies of signal N.
  auto o = sh("exit 139");
  o.signal_as_exit_status = true;
  auto child = Child::spawn(o);
  ASSERT_TRUE(child.ok());
  auto info = supervise(*child, 10s, 1s, 1s, {});
  EXPECT_EQ(info.signal, SIGSEGV);
  EXPECT_EQ(info.exit_code, -1);

  auto plain = sh("exit 139");  // any other program: an exit status is an exit status
  auto other = Child::spawn(plain);
  ASSERT_TRUE(other.ok());
  info = supervise(*other, 10s, 1s, 1s, {});
  EXPECT_EQ(info.exit_code, 139);
  EXPECT_EQ(info.signal, 0);

  auto ordinary = sh("exit 3");
  ordinary.signal_as_exit_status = true;
  auto third = Child::spawn(ordinary);
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(supervise(*third, 10s, 1s, 1s, {}).exit_code, 3);
}

TEST_F(ProcessTest, TimeoutKillsTheWholeGroup) {
  // The grandchild would outlive a kill of the shell alone.
  auto child = Child::spawn(sh("sleep 60 & echo $! > " + (dir_ / "grandchild").string() + "; wait"));
  ASSERT_TRUE(child.ok());
  auto info = supervise(*child, 500ms, 200ms, 1s, {});
  EXPECT_TRUE(info.timed_out);
  EXPECT_NE(info.signal, 0);
  const pid_t grandchild = std::stoi(read("grandchild"));
  // Dead means gone, or a zombie waiting for init to reap it (PID 1 in a container may not).
  auto dead = [&] {
    std::ifstream stat("/proc/" + std::to_string(grandchild) + "/stat");
    const std::string s((std::istreambuf_iterator<char>(stat)), {});
    return s.empty() || s.find(") Z") != std::string::npos;
  };
  bool gone = dead();
  for (int i = 0; i < 100 && !gone; ++i) {
    std::this_thread::sleep_for(20ms);
    gone = dead();
  }
  EXPECT_TRUE(gone) << "the grandchild " << grandchild << " survived the group kill";
}

TEST_F(ProcessTest, TickCanAbort) {
  auto child = Child::spawn(sh("sleep 60"));
  ASSERT_TRUE(child.ok());
  int ticks = 0;
  auto info = supervise(*child, 60s, 200ms, 50ms, [&] { return ++ticks < 3; });
  EXPECT_TRUE(info.aborted);
  EXPECT_FALSE(info.timed_out);
  EXPECT_EQ(ticks, 3);
}

TEST_F(ProcessTest, AMissingProgramIsAnErrorOrExit127) {
  SpawnOptions o;
  o.argv = {"/nonexistent/benchfleet-worker"};
  auto child = Child::spawn(o);
  if (child.ok()) {
    EXPECT_EQ(supervise(*child, 5s, 1s, 1s, {}).exit_code, 127);
  } else {
    EXPECT_NE(child.error().message.find("/nonexistent/benchfleet-worker"), std::string::npos);
  }
}

// A bare program name is looked up on PATH, as the agent's default `squeue` must be inside a
// Slurm allocation (it was taken as a path in the working directory, so the deadline was never read).
TEST_F(ProcessTest, ABareProgramNameIsFoundOnPath) {
  SpawnOptions o;
  o.argv = {"sh", "-c", "echo found"};
  o.stdout_path = (dir_ / "out").string();
  auto child = Child::spawn(o);
  ASSERT_TRUE(child.ok()) << child.error().describe();
  EXPECT_EQ(supervise(*child, 10s, 1s, 1s, {}).exit_code, 0);
  EXPECT_EQ(read("out"), "found\n");
}

// Whether `pid` is alive (a zombie is not).
bool alive(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const auto close = text.rfind(')');
  return close != std::string::npos && close + 2 < text.size() && text[close + 2] != 'Z';
}

// An exception thrown by the tick unwinds through supervise(); the child's group
// (the shell and what it started) is killed on the way and its record removed.
TEST_F(ProcessTest, AnExceptionUnwindingThroughSuperviseKillsTheGroup) {
  auto o = sh("sleep 60 & echo $! >" + (dir_ / "bg").string() + "; wait");
  o.record_dir = (dir_ / "records").string();
  pid_t leader = 0;
  try {
    auto child = Child::spawn(o);
    ASSERT_TRUE(child.ok());
    leader = child->pid();
    supervise(*child, 30s, 1s, 50ms, [&] {
      if (!fs::exists(dir_ / "bg") || fs::file_size(dir_ / "bg") == 0) return true;
      throw std::runtime_error("tick failed");
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error&) {
  }
  pid_t background = 0;
  std::ifstream(dir_ / "bg") >> background;
  ASSERT_GT(background, 0);
  EXPECT_FALSE(alive(leader));
  for (int i = 0; i < 100 && alive(background); ++i) std::this_thread::sleep_for(20ms);
  EXPECT_FALSE(alive(background)) << "the group outlived the exception";
  EXPECT_TRUE(fs::is_empty(o.record_dir)) << "the record outlived the child";
}

// A child left running by a dead agent (here: a Child never destroyed) is found through its
// record and killed with everything it started, also what left its process group.
TEST_F(ProcessTest, OrphanedChildrenAreFoundByTheirRecordAndKilled) {
  auto o = sh("setsid sleep 60 & echo $! >" + (dir_ / "bg").string() + "; sleep 60");
  o.record_dir = (dir_ / "records").string();
  auto child = Child::spawn(o);
  ASSERT_TRUE(child.ok());
  auto* left_behind = new Child(std::move(*child));  // as if the agent had died
  for (int i = 0; i < 100 && (!fs::exists(dir_ / "bg") || fs::file_size(dir_ / "bg") == 0); ++i) {
    std::this_thread::sleep_for(20ms);
  }
  pid_t escaped = 0;
  std::ifstream(dir_ / "bg") >> escaped;
  ASSERT_GT(escaped, 0);
  // Until setsid has made it a session of its own (it is the sleep then).
  auto comm = [&] {
    std::string name;
    std::ifstream("/proc/" + std::to_string(escaped) + "/comm") >> name;
    return name;
  };
  for (int i = 0; i < 100 && comm() != "sleep"; ++i) std::this_thread::sleep_for(20ms);
  const pid_t leader = left_behind->pid();

  const OrphanSweep sweep = kill_orphaned_children(o.record_dir, 10s);
  EXPECT_EQ(sweep.records, 1);
  EXPECT_TRUE(sweep.survivors.empty());
  EXPECT_TRUE(std::find(sweep.killed.begin(), sweep.killed.end(), escaped) != sweep.killed.end())
      << "escaped " << escaped << ", killed " << ::testing::PrintToString(sweep.killed);
  EXPECT_FALSE(alive(escaped)) << "a process that left the group but carries the token survived";
  std::optional<ExitInfo> exit;
  for (int i = 0; i < 250 && !exit; ++i) {
    exit = left_behind->poll();
    if (!exit) std::this_thread::sleep_for(20ms);
  }
  ASSERT_TRUE(exit.has_value()) << "the leader " << leader << " survived";
  EXPECT_EQ(exit->signal, SIGKILL);
  delete left_behind;
  EXPECT_TRUE(fs::is_empty(o.record_dir));
}

// A record whose pid now names an unrelated process (pid reuse: another start time, no token
// in its environment) kills nothing.
TEST_F(ProcessTest, ARecordedPidReusedByAnUnrelatedProcessIsLeftAlone) {
  auto unrelated = Child::spawn(sh("sleep 60"));
  ASSERT_TRUE(unrelated.ok());
  const std::string records = (dir_ / "records").string();
  fs::create_directories(records);
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  std::ofstream(records + "/0123456789abcdef0123456789abcdef.json")
      << R"({"token": "0123456789abcdef0123456789abcdef", "pid": )" << unrelated->pid()
      << R"(, "start_ticks": 1, "boot_id": ")" << boot << R"("})";
  std::ofstream(records + "/garbage.json") << "{not json";

  const OrphanSweep sweep = kill_orphaned_children(records, 2s);
  EXPECT_EQ(sweep.records, 2);
  EXPECT_TRUE(sweep.killed.empty());
  std::this_thread::sleep_for(100ms);
  EXPECT_FALSE(unrelated->poll().has_value()) << "an unrelated process was killed";
  EXPECT_TRUE(fs::is_empty(records));
}

}  // namespace
}  // namespace benchfleet::agent
