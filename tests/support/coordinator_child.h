// The real benchfleet-coordinator binary as a child process on 127.0.0.1:0 (or a given port; or
// another address under a wrapper such as `ip netns exec`, see LaunchOptions), its port read from
// --port-file; started through ChildProcess (child_process.h). Shared by the
// integration tests (CoordinatorProcess in coordinator_process.h adds a temporary directory,
// clients and gtest reporting on top) and bench/coordinator_load; it does not use gtest.
//
// The child gets SIGKILL if the thread that started it dies (PR_SET_PDEATHSIG), so a crashed or
// killed test or benchmark leaves no coordinator behind: start children from the main thread.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "tests/support/child_process.h"

namespace benchfleet::testing {

// The path of the benchfleet-coordinator binary: $BENCHFLEET_COORDINATOR_BIN, else the build's.
std::string coordinator_binary();

struct LaunchOptions {
  std::string binary = coordinator_binary();
  // Command-line flags and their values ("--db" -> path). start() adds --listen
  // <listen_address>:<port> and --port-file `port_file`; REQUIRES: `flags` names neither.
  std::map<std::string, std::string> flags;
  int port = 0;  // 0: any free port (the coordinator picks one and writes it to `port_file`)
  // The address it binds: loopback unless a test gives it one of its own (e.g. a veth address
  // in a network namespace, tests/fault/netns.h). Never a host's public interface.
  std::string listen_address = "127.0.0.1";
  // A command the binary runs under, put before it on the command line ({"/usr/sbin/ip",
  // "netns", "exec", "<ns>"}); wrapper[0] is an absolute path. The wrapper must exec the binary
  // in its own place (same pid), so signals, stop() and PR_SET_PDEATHSIG reach the coordinator.
  std::vector<std::string> wrapper;
  std::string port_file;
  std::string log_file;     // the child's stdout and stderr
  bool append_log = false;  // keep what an earlier process wrote there (restarts); else truncate
  // Drop $BENCHFLEET_* from the child's environment, so a developer's settings cannot change a
  // test. Off, the child sees the same $BENCHFLEET_CATALOG as its parent.
  bool clean_environment = false;
  std::chrono::milliseconds start_timeout = std::chrono::seconds(15);
};

// One running coordinator process. Not thread-safe.
class CoordinatorChild {
 public:
  // Starts the binary and waits (up to options.start_timeout) until it wrote its port file. On
  // failure the child is killed and reaped, and the error quotes the end of its log.
  static Result<std::unique_ptr<CoordinatorChild>> start(const LaunchOptions& options);

  CoordinatorChild(const CoordinatorChild&) = delete;
  CoordinatorChild& operator=(const CoordinatorChild&) = delete;
  // SIGKILL (as kill9()) if it is still running.
  ~CoordinatorChild();

  int port() const { return port_; }
  pid_t pid() const { return process_.pid(); }
  bool running() const { return process_.running(); }

  struct Exit {
    int status = -1;                  // as waitpid reports it; -1 when it was not running
    bool killed_after_grace = false;  // it outlived the grace period and got SIGKILL
  };
  // SIGTERM, then waits up to `grace` for the exit; SIGKILL after that.
  Exit stop(std::chrono::milliseconds grace = std::chrono::seconds(10));
  // SIGKILL now (a crash: nothing is flushed or finished).
  void kill9();

 private:
  explicit CoordinatorChild(ChildProcess process) : process_(std::move(process)) {}

  ChildProcess process_;
  int port_ = 0;
};

// Options for a coordinator whose database (coordinator.db), port file and log live in `dir`,
// with `flags` added (they may override --db) and the environment cleaned: what the benchmarks and
// fault programs start.
LaunchOptions launch_in(const std::string& dir, std::map<std::string, std::string> flags);

// A coordinator for a benchmark that talks to it with `operator_token` and `enrollment_token`:
// its files in `dir` (created), `binary` run with warnings only in its log.
Result<std::unique_ptr<CoordinatorChild>> start_bench_coordinator(const std::string& dir, const std::string& binary,
                                                                  const std::string& operator_token,
                                                                  const std::string& enrollment_token);

// A work directory: `requested` (created if missing), or, when it is empty, a new one made as
// TempDir does ($TMPDIR/<prefix>.XXXXXX, else under /tmp) but kept: `made` says whether a new one
// was made (the caller removes it when done). An Error naming the path when it cannot be made.
Result<std::string> work_directory(const std::string& requested, const std::string& prefix, bool& made);

// A port on 127.0.0.1 that nothing listens on now, below the kernel's ephemeral range (so no
// outgoing connection takes it while a coordinator on it is down and restarting). 0 if none found.
int free_loopback_port();

}  // namespace benchfleet::testing
