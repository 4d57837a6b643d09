// A real benchfleet-coordinator child process for benchmarks: started on 127.0.0.1:0, its port
// read from --port-file, stopped with SIGTERM. The child gets SIGKILL if this process dies
// (PR_SET_PDEATHSIG), so no coordinator outlives a crashed or killed benchmark.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

namespace benchfleet::bench {

struct CoordinatorOptions {
  std::string binary;  // path of benchfleet-coordinator
  std::string db;      // SQLite file (its directory also holds the port file and the log)
  std::string log_file;
  std::string operator_token;
  std::string enrollment_token;
  int threads = 2;
  std::vector<std::string> extra_args;  // appended to the command line
};

class CoordinatorProcess {
 public:
  // Starts the coordinator and waits (up to `timeout`) until it wrote its port file. On failure
  // the child is killed and reaped, and the error quotes the end of its log.
  static Result<std::unique_ptr<CoordinatorProcess>> start(const CoordinatorOptions& options,
                                                           std::chrono::milliseconds timeout);

  CoordinatorProcess(const CoordinatorProcess&) = delete;
  CoordinatorProcess& operator=(const CoordinatorProcess&) = delete;
  // Stops the child (as stop()) if it is still running.
  ~CoordinatorProcess();

  unsigned short port() const { return port_; }
  pid_t pid() const { return pid_; }

  // SIGTERM, then waits up to `grace` for the exit; SIGKILL after that. Returns the exit code
  // (128 + signal when killed by a signal). Idempotent: later calls return the same code.
  int stop(std::chrono::milliseconds grace = std::chrono::seconds(10));

 private:
  CoordinatorProcess(pid_t pid, std::string log_file) : pid_(pid), log_file_(std::move(log_file)) {}

  pid_t pid_ = -1;
  unsigned short port_ = 0;
  std::string log_file_;
  bool reaped_ = false;
  int exit_code_ = 0;
};

// The last `max_bytes` of a text file ("" when unreadable), for error messages.
std::string file_tail(const std::string& path, std::size_t max_bytes = 2000);

}  // namespace benchfleet::bench
