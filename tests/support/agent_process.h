// Test support: the real benchfleet-agent daemon as a child process (started through
// ChildProcess, child_process.h), pointed at a coordinator URL, with its own state directory and
// log file.
//
//   AgentProcess a1({.binary = BENCHFLEET_AGENT_BIN, .name = "a1", .coordinator_url = coord.base_url(),
//                    .state_dir = coord.dir() + "/a1"});
//   a1.start();
//   ...
//   a1.sigterm();                      // drain
//   auto status = a1.wait_exit(60s);   // waitpid status, or nullopt
//   a1.kill_host();                    // kill -9 of the agent and of every worker it started
//
// The agent starts exporters and workers in process groups of their own, which a SIGKILL of the
// agent leaves running; kill_host() (and the destructor) kill those groups too, as a dead host
// would. On a test failure the destructor prints the end of the agent's log. The state directory
// is the caller's (put it under CoordinatorProcess::dir() to have it kept on failure).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "tests/support/child_process.h"

namespace benchfleet::testing {

struct AgentOptions {
  std::string binary;            // benchfleet-agent
  std::string name;              // --name
  std::string coordinator_url;   // --coordinator
  std::string state_dir;         // --state-dir (created by the agent)
  std::string config_file;       // --config when not empty
  std::string enrollment_token;  // $BENCHFLEET_ENROLLMENT_TOKEN
  std::string log_file;          // default: <state_dir>.log
  std::vector<std::string> extra_args;
  // A command the agent runs under, put before it on the command line ({"/usr/sbin/ip", "netns",
  // "exec", "<ns>"}); wrapper[0] is an absolute path. The wrapper must exec the agent in its own
  // place (same pid): signals, children() and kill_host() act on that pid.
  std::vector<std::string> wrapper;
};

class AgentProcess {
 public:
  explicit AgentProcess(AgentOptions options);
  ~AgentProcess();
  AgentProcess(const AgentProcess&) = delete;
  AgentProcess& operator=(const AgentProcess&) = delete;

  // Starts the daemon (appending to its log, so a restart keeps the earlier process's lines).
  // Throws when it cannot. REQUIRES: not running.
  void start();
  // Reaps the process if it exited meanwhile; whether it still runs.
  bool running();
  pid_t pid() const { return process_.pid(); }
  const std::string& name() const { return options_.name; }

  // SIGTERM: the first drains, the second aborts.
  void sigterm();
  // Waits up to `limit` for the exit: the waitpid status, or nullopt when it still runs.
  std::optional<int> wait_exit(std::chrono::milliseconds limit);
  // SIGKILL of the agent alone (its workers keep running in their own process groups).
  void kill9();
  // A dead host: stops the agent (SIGSTOP, so it starts nothing more), SIGKILLs it and then
  // every process group it had started (exporters, workers). Returns those groups' ids.
  std::vector<pid_t> kill_host();
  // SIGSTOP, returning once the agent is stopped: while frozen it neither starts, reaps nor
  // reports anything (its children run on). Signals sent meanwhile wait for thaw() (SIGCONT).
  void freeze();
  void thaw();

  // The agent's direct children (each the leader of its own process group): exporters, workers.
  std::vector<pid_t> children() const;
  // Its children whose command name (/proc/<pid>/comm) starts with `prefix`.
  std::vector<pid_t> children_named(const std::string& prefix) const;

  const std::string& state_dir() const { return options_.state_dir; }
  std::string spool_dir() const { return options_.state_dir + "/spool"; }
  // The result files waiting in the spool (file names, sorted).
  std::vector<std::string> spool_entries() const;
  const std::string& log_path() const { return options_.log_file; }
  std::string log_tail(std::size_t max_bytes = 8192) const;
  std::string log() const;

 private:
  AgentOptions options_;
  ChildProcess process_;
};

// The pids of the processes whose parent is `parent` (from /proc).
std::vector<pid_t> children_of(pid_t parent);
// /proc/<pid>/comm ("" when gone).
std::string command_name(pid_t pid);
// /proc/<pid>/cmdline, one element per argument (empty when gone).
std::vector<std::string> command_line(pid_t pid);
// Whether `pid` is a live process (a zombie, exited but not yet reaped, is not).
bool process_alive(pid_t pid);
// Whether any live process (zombies aside) is left in process group `pgid`.
bool process_group_alive(pid_t pgid);

}  // namespace benchfleet::testing
