// The supervisor against real /bin/sh children.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "agent/daemon/process.h"

namespace benchfleet::agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class ProcessTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("bf-proc-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
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
  fs::path dir_;
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

}  // namespace
}  // namespace benchfleet::agent
