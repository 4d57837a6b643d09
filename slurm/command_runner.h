// Running the Slurm client commands (sbatch, squeue, sacct, scontrol): a child process with
// its output captured and a deadline. Behind an interface so the launcher's logic is tested with
// canned outputs (the real commands are exercised by the tests against a real Slurm).
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/result.h"

namespace benchfleet::slurm {

struct CommandOutput {
  int exit_code = -1;  // the exit status; -1 when it was killed by a signal (then `signal` is set)
  int signal = 0;      // the signal that ended it, else 0
  std::string out;     // stdout (at most the limit; the rest is dropped)
  std::string err;     // stderr (at most the limit)
  bool succeeded() const { return exit_code == 0; }
  // "exit status N: <first line of stderr>" / "killed by signal N", for error messages.
  std::string describe_failure() const;
};

class CommandRunner {
 public:
  virtual ~CommandRunner() = default;
  // Runs argv[0] (found on PATH when it has no '/') with the rest as arguments, no shell. Any
  // exit status is a successful Result. Errors: the program cannot be started (kUnavailable,
  // "cannot start <argv[0]>: <why>"), or it ran past `timeout` (killed with its process group; kUnavailable saying
  // so). REQUIRES: !argv.empty().
  virtual Result<CommandOutput> run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) = 0;
};

// Runs real processes (common/process_spawn.h: own process group, empty signal mask, stdin
// /dev/null).
// Thread safety: safe for concurrent use.
class ProcessRunner final : public CommandRunner {
 public:
  explicit ProcessRunner(std::size_t output_limit = 16u << 20) : output_limit_(output_limit) {}
  Result<CommandOutput> run(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) override;

 private:
  std::size_t output_limit_;
};

// "sbatch --parsable --array=0-1 /x/a.sh" for logs; words with spaces quoted.
std::string command_line(const std::vector<std::string>& argv);

}  // namespace benchfleet::slurm
