// spawn_in_own_group (common/process_spawn.h), which the agent's children and the Slurm
// launcher's commands both start through: its own process group, output where asked, the
// environment given, signals at their defaults, and a program that cannot start named.
#include "common/process_spawn.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/support/temp_dir.h"

namespace benchfleet {
namespace {

int wait_for(pid_t pid) {
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(SpawnInOwnGroup, RunsInItsOwnGroupWithOutputInFiles) {
  testing::TempDir dir("bf-spawn");
  SpawnSpec spec;
  // $$ is the shell's pid; `ps -o pgid=` would need procps, /proc does not.
  spec.argv = {"sh", "-c", "echo out; echo err >&2; cut -d' ' -f5 /proc/$$/stat; test \"$(cat)\" = ''"};
  spec.stdout_to = ChildOutput::to_file(dir.file("out"));
  spec.stderr_to = ChildOutput::to_file(dir.file("err"));
  auto pid = spawn_in_own_group(spec);
  ASSERT_TRUE(pid.ok()) << pid.error().message;
  EXPECT_EQ(wait_for(*pid), 0);  // stdin is /dev/null: cat read nothing
  EXPECT_EQ(read_file(dir.file("out")), "out\n" + std::to_string(*pid) + "\n");
  EXPECT_EQ(read_file(dir.file("err")), "err\n");
}

TEST(SpawnInOwnGroup, TakesTheEnvironmentGivenAndADescriptor) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  SpawnSpec spec;
  spec.argv = {"/bin/sh", "-c", "echo \"$ONLY_THIS\" \"${HOME:-unset}\""};
  spec.env = std::vector<std::string>{"ONLY_THIS=yes"};
  spec.stdout_to = ChildOutput::to_fd(fds[1]);
  auto pid = spawn_in_own_group(spec);
  ::close(fds[1]);
  ASSERT_TRUE(pid.ok()) << pid.error().message;
  char buffer[64] = {};
  const auto got = ::read(fds[0], buffer, sizeof buffer - 1);
  ::close(fds[0]);
  EXPECT_EQ(wait_for(*pid), 0);
  EXPECT_EQ(std::string(buffer, got > 0 ? static_cast<std::size_t>(got) : 0), "yes unset\n");
}

TEST(SpawnInOwnGroup, UnblocksSignalsThisProcessBlocks) {
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ASSERT_EQ(::pthread_sigmask(SIG_BLOCK, &term, &old), 0);
  SpawnSpec spec;
  spec.argv = {"sh", "-c", "kill -TERM $$; sleep 5"};
  auto pid = spawn_in_own_group(spec);
  ::pthread_sigmask(SIG_SETMASK, &old, nullptr);
  ASSERT_TRUE(pid.ok()) << pid.error().message;
  EXPECT_EQ(wait_for(*pid), -SIGTERM);
}

TEST(SpawnInOwnGroup, NamesAProgramThatCannotStart) {
  SpawnSpec spec;
  spec.argv = {"/nonexistent/sbatch", "--parsable"};
  auto pid = spawn_in_own_group(spec);
  ASSERT_FALSE(pid.ok());
  EXPECT_EQ(pid.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(pid.error().message, "cannot start /nonexistent/sbatch: No such file or directory");
  EXPECT_FALSE(spawn_in_own_group(SpawnSpec{}).ok());
}

// A short tool run to its end (the tars of model artifacts): its stderr in the error, the file
// that held it gone either way.
TEST(RunToEnd, SaysHowAToolEndedWithTheStartOfItsStderr) {
  const std::string log = ::testing::TempDir() + "run-to-end-" + std::to_string(::getpid()) + ".log";
  EXPECT_TRUE(run_to_end({"/bin/sh", "-c", "echo fine >&2"}, log).ok());
  EXPECT_FALSE(std::filesystem::exists(log));
  const Status failed = run_to_end({"/bin/sh", "-c", "echo 'tar: bad member' >&2; exit 2"}, log);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().message, "/bin/sh failed (exit 2): tar: bad member\n");
  EXPECT_FALSE(std::filesystem::exists(log));
  const Status killed = run_to_end({"/bin/sh", "-c", "kill -9 $$"}, log);
  ASSERT_FALSE(killed.ok());
  EXPECT_NE(killed.error().message.find("(signal 9)"), std::string::npos) << killed.error().message;
  EXPECT_EQ(run_to_end({"/nonexistent/tool"}, log).error().code, ErrorCode::kUnavailable);
}

}  // namespace
}  // namespace benchfleet
