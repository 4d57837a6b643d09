// The reconcile loop of benchfleet-slurm-launcher. Every poll_s: list this launcher's
// allocations (squeue by job name, so a restart adopts what an earlier run submitted), record
// the ones that started or ended (sacct, else scontrol, else "ended, state unknown"), read the
// queue from the coordinator, and submit what the planner allows (one sbatch per class, an
// array when several allocations are wanted). Stopping the launcher leaves allocations alone:
// their agents exit when idle or at their time limit.
#pragma once

#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/result.h"
#include "slurm/launcher_config.h"
#include "slurm/planner.h"
#include "slurm/queue_source.h"
#include "slurm/slurm_commands.h"
#include "slurm/timeline.h"

namespace benchfleet::slurm {

// An allocation the launcher counts against its class's max_allocations.
struct TrackedAllocation {
  std::string gpu_class;
  std::string state = "PENDING";  // as squeue last showed it
  std::string node;
  std::string pending_reason;   // the last one squeue showed (warned about once per change)
  bool started_logged = false;  // a "started" event is in the timeline
  int unseen_passes = 0;        // passes in which squeue did not list it and Slurm said it is not over
};

struct PassReport {
  Status status;  // the first error (squeue, the queue, sbatch); the pass did what it safely could
  std::vector<ClassDecision> decisions;  // empty when squeue or the queue could not be read
  int sbatch_calls = 0;
  int allocations_submitted = 0;
};

// Thread safety: reconcile()/run() from one thread; stop() from any thread.
class Launcher {
 public:
  // Borrows everything; all must outlive the Launcher.
  Launcher(const LauncherConfig& config, SlurmCommands& slurm, QueueSource& queue, const Clock& clock);
  Launcher(const Launcher&) = delete;
  Launcher& operator=(const Launcher&) = delete;

  // Creates state_dir, its logs/ and scripts/, writes each class's script to
  // scripts/<gpu_class>.sh, tracks again the allocations the timeline shows submitted and not
  // ended, and counts the timeline's sbatch calls of the last minute against the rate limit.
  // REQUIRES: called once, before reconcile().
  Status prepare();

  // One pass (see the top of this file). Never throws.
  PassReport reconcile();

  // Passes every poll_s until stop(). Never throws.
  void run();
  void stop();

  // The allocations counted now, by Slurm job id ("123", "123_4").
  const std::map<std::string, TrackedAllocation>& tracked() const { return tracked_; }
  std::string script_path(const ClassConfig& cls) const;

 private:
  PassReport reconcile_unguarded();
  Status observe_allocations();  // squeue + the ended ones
  void record_ended(const std::string& job_id, const SlurmJob& how);
  Status submit(const ClassConfig& cls, const ClassDecision& decision, PassReport& report);
  void emit(const nlohmann::ordered_json& event);

  const LauncherConfig& config_;
  SlurmCommands& slurm_;
  QueueSource& queue_;
  const Clock& clock_;
  Timeline timeline_;
  RateLimiter limiter_;
  std::map<std::string, TrackedAllocation> tracked_;
  std::map<std::string, std::string> class_of_name_;  // job name -> gpu_class
  std::set<std::string> rate_limited_;                // classes waiting for the rate limit (logged once)
  std::set<std::string> too_long_warned_;             // classes with queued jobs too long for their time_limit

  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;
};

}  // namespace benchfleet::slurm
