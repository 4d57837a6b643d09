// Support for the real-Slurm tests: the single-node test cluster of
// tests/slurm/slurm-cluster.sh owned by the test process, the Slurm client commands run against
// it, benchfleet-slurm-launcher as a child process, and readers of what the launcher and Slurm
// recorded (the launcher's timeline.jsonl, the cluster's jobcomp file).
//
//   SlurmCluster cluster("/tmp/benchfleet-slurm-XXXXXX");  // starts it; SLURM_CONF set for us
//   auto rows = cluster.squeue("benchfleet-cpu");            // pending + running allocations
//   cluster.scancel("12_1");
//   ...                                                      // the destructor stops and removes it
//
// A reaper process started with the cluster runs `slurm-cluster.sh stop` when the test process
// goes away however it ends (SIGKILL included), so no daemon, job step or agent outlives a test.
#pragma once

#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/child_process.h"

namespace benchfleet::testing {

// `text` quoted for /bin/sh.
std::string sh_quote(const std::string& text);

struct Captured {
  int code = -1;       // exit code; 124 when `limit` passed (timeout(1))
  std::string output;  // stdout and stderr
};
// Runs `command` with /bin/sh under timeout(1); never throws.
Captured capture(const std::string& command, std::chrono::seconds limit = std::chrono::seconds(30));

// One row of squeue: the job id as Slurm prints it ("12", "12_1") and its state ("PENDING", ...).
struct SlurmJobRow {
  std::string id;
  std::string state;
};

// The Slurm "jobcomp" record of a finished job (jobcomp/filetxt: one line per job, key=value).
struct CompletedJob {
  std::string job_id;  // the raw job id (an array task has its own)
  std::string name;
  std::string state;  // COMPLETED, CANCELLED, TIMEOUT, FAILED, ...
  std::string start_time, end_time;
  std::string time_limit;  // minutes, or UNLIMITED
};

class SlurmCluster {
 public:
  // Starts the cluster in `dir` (created) with slurm-cluster.sh and points this process at it:
  // SLURM_CONF is set, every other SLURM_* variable removed (the children we start, the launcher
  // and through sbatch the agents, inherit that). Throws with the script's output on failure.
  explicit SlurmCluster(std::string dir);
  ~SlurmCluster();
  SlurmCluster(const SlurmCluster&) = delete;
  SlurmCluster& operator=(const SlurmCluster&) = delete;

  const std::string& dir() const { return dir_; }
  std::string conf() const { return dir_ + "/slurm.conf"; }

  // Pending and running jobs named `job_name` (array tasks one per row). nullopt when squeue
  // failed (its output is in `error` when given).
  std::optional<std::vector<SlurmJobRow>> squeue(const std::string& job_name, std::string* error = nullptr) const;
  // scancel of one job ("12" or "12_1"); whether scancel succeeded.
  bool scancel(const std::string& job_id) const;
  // Cancels every job and waits (bounded) until squeue lists none; whether it got there.
  bool cancel_all(std::chrono::seconds limit = std::chrono::seconds(30)) const;
  // The finished jobs Slurm wrote to its jobcomp file, by raw job id.
  std::map<std::string, CompletedJob> completed_jobs() const;
  // `scontrol show job -o ID` as key=value pairs (empty when Slurm no longer knows the job).
  std::map<std::string, std::string> show_job(const std::string& job_id) const;
  // The daemons' log tails, for failure messages.
  std::string log_tails() const;

 private:
  std::string dir_;
  FILE* reaper_ = nullptr;
};

// benchfleet-slurm-launcher --config `config` as a child process, its log in `log_file`.
class LauncherProcess {
 public:
  LauncherProcess(std::string config, std::string log_file, std::vector<std::string> extra_args = {});
  ~LauncherProcess();
  LauncherProcess(const LauncherProcess&) = delete;
  LauncherProcess& operator=(const LauncherProcess&) = delete;

  // SIGTERM, wait up to `grace`, then SIGKILL; the waitpid status (-1 when not running).
  int stop(std::chrono::milliseconds grace = std::chrono::seconds(15));
  // Waits up to `limit` for it to exit (for --once); the waitpid status or nullopt.
  std::optional<int> wait_exit(std::chrono::milliseconds limit);
  std::string log_tail(std::size_t max_bytes = 6000) const;

 private:
  std::string log_file_;
  ChildProcess child_;
};

// The launcher's timeline (<state_dir>/timeline.jsonl): its events in order; lines that are not
// JSON objects are reported as {"unparsed": "<line>"} so a test sees them.
std::vector<nlohmann::json> read_timeline(const std::string& path);
// The Slurm ids ("12", "12_1") of the events named `event` ("started", "ended").
std::vector<std::string> timeline_ids(const std::vector<nlohmann::json>& events, const std::string& event);
// The most allocations pending or running at once according to the timeline: the sum of the
// submitted counts minus the allocations seen ending, at each event.
int max_outstanding(const std::vector<nlohmann::json>& events);

// The numeric Slurm job id of an allocation's agent name ("slurm-bftest-12_1" -> "12_1"); nullopt
// when `agent_name` is not slurm-bftest-<id>[_<task>].
std::optional<std::string> allocation_of_agent(const std::string& agent_name);

}  // namespace benchfleet::testing
