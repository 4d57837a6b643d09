// A program of the project started as a child process for a test or a benchmark: argv, a chosen
// environment, stdout and stderr to a log file. The coordinator launcher (coordinator_child.h) and
// the agent launcher (agent_process.h) both start their binaries through it. It does not use gtest.
//
// The child gets SIGKILL if the thread that started it dies (PR_SET_PDEATHSIG), so a crashed or
// killed test leaves no child behind: start children from the main thread. Processes the child
// puts in process groups of their own (the agent's workers) are not covered; see agent_process.h.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace benchfleet::testing {

struct ChildOptions {
  std::vector<std::string> argv;  // argv[0]: the program's path
  std::string log_file;           // the child's stdout and stderr
  bool append_log = false;        // keep what an earlier process wrote there (restarts); else truncate
  // Drop $BENCHFLEET_* from the child's environment, so a developer's settings cannot change a
  // test; `env_set` is applied after that (and may set BENCHFLEET_* variables of its own).
  bool clean_environment = false;
  std::map<std::string, std::string> env_set;
};

// One running child. Not thread-safe. The destructor kills it (SIGKILL) if it still runs.
class ChildProcess {
 public:
  ChildProcess() = default;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ChildProcess(ChildProcess&& other) noexcept;
  ChildProcess& operator=(ChildProcess&& other) noexcept;
  ~ChildProcess();

  // Forks and execs options.argv[0]. An error when the binary is not executable or fork fails.
  static Result<ChildProcess> start(const ChildOptions& options);

  pid_t pid() const { return pid_; }
  // Started and not yet reaped (it may have exited meanwhile: see poll()).
  bool running() const { return pid_ > 0; }

  // Sends `signo` (no reaping). False when it is not running.
  bool signal(int signo) const;
  // Reaps the child if it exited; its waitpid status then, else nullopt.
  std::optional<int> poll();
  // Waits up to `limit` for the exit; the waitpid status, or nullopt when it still runs.
  std::optional<int> wait_exit(std::chrono::milliseconds limit);
  struct Exit {
    int status = -1;                  // as waitpid reports it; -1 when it was not running
    bool killed_after_grace = false;  // it outlived the grace period and got SIGKILL
  };
  // SIGTERM, then waits up to `grace` for the exit; SIGKILL after that.
  Exit stop(std::chrono::milliseconds grace);
  // SIGKILL now and reap (a crash: nothing is flushed or finished). Its waitpid status.
  int kill9();

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_ = -1;
};

// The exit code a waitpid status stands for: the code, or 128 + signal when killed by one.
int exit_code(int wait_status);
// "exit code 3" or "signal 9", for messages.
std::string describe_wait_status(int wait_status);
// The last `max_bytes` of a text file ("..." in front when cut; "" when unreadable).
std::string file_tail(const std::string& path, std::size_t max_bytes);

}  // namespace benchfleet::testing
