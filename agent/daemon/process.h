// Child processes for exports and workers: own process group, output to files, bounded time,
// and a kill that reaches every process the child started.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"

namespace benchfleet::agent {

struct SpawnOptions {
  std::vector<std::string> argv;               // argv[0]: a path, or a bare name looked up on PATH
  std::map<std::string, std::string> env_set;  // added to / replacing this process's environment
  std::vector<std::string> env_unset;
  std::string stdout_path;  // created/truncated; empty: /dev/null
  std::string stderr_path;
  // The program is a launcher that reports its own child killed by signal N as exit status
  // 128+N (bubblewrap, for builds in their own root): ExitInfo then says `signal = N`.
  bool signal_as_exit_status = false;
  // When set, the child is recorded in this folder while it runs: a file naming its process
  // group and start time, and a random token also put in its environment (kChildTokenVariable,
  // inherited by everything it starts). An agent restarted after a crash (kill -9, an
  // exception that ended in std::terminate) finds what its previous life left running through
  // these records (kill_orphaned_children) and never mistakes an unrelated process that reuses
  // the pid for it. The record goes when the child is reaped.
  std::string record_dir;
};

inline constexpr const char* kChildTokenVariable = "BENCHFLEET_CHILD_TOKEN";

struct ExitInfo {
  int exit_code = -1;      // when the child exited
  int signal = 0;          // when a signal ended it
  bool timed_out = false;  // we killed it at the timeout
  bool aborted = false;    // we killed it because the tick asked to
  double seconds = 0;
};

// A running child in its own process group. Not copyable; the destructor kills the group if
// the child still runs (no orphaned workers), also when an exception unwinds past its owner
// (through supervise(), say).
class Child {
 public:
  static Result<Child> spawn(const SpawnOptions& options);
  Child(Child&& other) noexcept;
  Child& operator=(Child&&) = delete;
  Child(const Child&) = delete;
  ~Child();

  pid_t pid() const { return pid_; }
  // Reaps the child if it finished; nullopt while it runs.
  std::optional<ExitInfo> poll();
  // SIGTERM to the group, up to `grace` for it to exit, then SIGKILL to the group; reaps.
  ExitInfo kill_group(std::chrono::milliseconds grace);

 private:
  Child(pid_t pid, bool signal_as_exit_status, std::string record)
      : pid_(pid),
        signal_as_exit_status_(signal_as_exit_status),
        started_(std::chrono::steady_clock::now()),
        record_(std::move(record)) {}
  ExitInfo finish(int status);

  pid_t pid_ = -1;
  bool signal_as_exit_status_ = false;
  std::chrono::steady_clock::time_point started_;
  std::string record_;  // its record file (SpawnOptions::record_dir), removed once reaped
};

// What kill_orphaned_children found and did.
struct OrphanSweep {
  int records = 0;               // records left by an earlier life of the agent
  std::vector<pid_t> killed;     // processes confirmed as its children (or theirs) and SIGKILLed
  std::vector<pid_t> survivors;  // killed but still alive after `wait`
};

// For each record in `record_dir` (SpawnOptions::record_dir) left by a previous life of the
// agent: SIGKILLs the recorded process group when its leader is still the recorded process
// (same boot, same start time in /proc/<pid>/stat), and every live process whose environment
// carries the record's token; waits up to `wait` for them to be gone; removes the record.
// A pid now used by an unrelated process matches neither test and is left alone.
// REQUIRES: no child of this process is recorded in `record_dir` yet (call it at start).
OrphanSweep kill_orphaned_children(const std::string& record_dir, std::chrono::milliseconds wait);

// Waits for `child` while calling `tick` every `tick_every` (e.g. to renew a lease); kills the
// group when the timeout passes (timed_out) or when `tick` returns false (aborted). `each_poll`,
// when set, runs at every poll of the child (every 20 ms): for what the child waits on, such as
// the answer to a memory-cap request (job_memory_cap.h).
ExitInfo supervise(Child& child, std::chrono::milliseconds timeout, std::chrono::milliseconds grace,
                   std::chrono::milliseconds tick_every, const std::function<bool()>& tick,
                   const std::function<void()>& each_poll = {});

// The last `max_lines` lines of a text file (for crash reports).
std::string tail_of_file(const std::string& path, std::size_t max_lines);

}  // namespace benchfleet::agent
