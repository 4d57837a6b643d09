// Starting a child process the one way benchfleet's programs do (the agent's exporters and
// workers, agent/daemon/process.h; the Slurm launcher's sbatch, squeue..., slurm/command_runner.h):
//   - posix_spawnp, no shell: argv[0] is a path, or a bare name looked up on PATH as execvp does;
//   - in a new process group whose id is the child's pid, so a kill of the group reaches
//     everything the child starts;
//   - SIGTERM, SIGINT and SIGPIPE at their default actions and no signal blocked, whatever this
//     process does with them (the launcher blocks SIGTERM for its sigwait thread);
//   - stdin from /dev/null; stdout and stderr each to a file, a descriptor, or /dev/null.
//   SpawnSpec spec{.argv = {"squeue", "--me"}, .stdout_to = ChildOutput::to_fd(pipe_write)};
//   Result<pid_t> pid = spawn_in_own_group(spec);  // then waitpid(*pid, ...) / kill(-*pid, ...)
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace benchfleet {

// Where a child's stdout or stderr goes. Default: /dev/null.
struct ChildOutput {
  std::string path;  // created or truncated, mode 0600
  int fd = -1;       // duplicated onto the stream (its close-on-exec flag does not carry over)
  static ChildOutput to_file(std::string path) { return {std::move(path), -1}; }
  static ChildOutput to_fd(int fd) { return {{}, fd}; }
};

struct SpawnSpec {
  std::vector<std::string> argv;  // REQUIRES: not empty
  // The child's whole environment, "KEY=value" each; nullopt: this process's.
  std::optional<std::vector<std::string>> env;
  ChildOutput stdout_to;
  ChildOutput stderr_to;
};

// The child's pid (also its process group's id). The caller reaps it. Error (kUnavailable):
// "cannot start <argv[0]>: <why>" (not found, not executable...), or an empty argv.
// Thread-safe.
Result<pid_t> spawn_in_own_group(const SpawnSpec& spec);

// Runs `argv` to its end (no time limit: for short tools such as tar), its stderr kept in
// `stderr_file` meanwhile and removed after. Ok when it exited 0; else kInternal with
// "<argv[0]> failed (<how>): <the start of its stderr>"; kUnavailable when it cannot start.
Status run_to_end(std::vector<std::string> argv, const std::string& stderr_file);

}  // namespace benchfleet
