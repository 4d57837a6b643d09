// Runs one leased job on one slot: prepare the artifact, start the worker in its own process
// group bound to the slot's GPU, supervise it (timeout, lease renewal) and turn whatever
// happened into a JobResult. A python-runtime job has no artifact: the build's python runs
// benchfleet_runner.py (same job JSON in, same result JSON out, same supervision).
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/daemon/artifact_cache.h"
#include "agent/daemon/build_launcher.h"
#include "agent/daemon/coordinator_client.h"
#include "agent/daemon/memory_cgroup.h"
#include "agent/daemon/model_files.h"
#include "common/types.h"

namespace benchfleet::agent {

struct JobEnvironment {
  const TorchBuild* build = nullptr;
  const SlotDescriptor* slot = nullptr;
  ArtifactCache* cache = nullptr;
  const ModelFiles* model_files = nullptr;  // resolves a job's model artifacts and paths; null: none
  const BuildLauncher* launcher = nullptr;  // starts the build's programs (in its root, if any)
  Exporter exporter;                        // python and launch filled from the build
  std::string runner;                       // benchfleet_runner.py, run with the build's python (python runtime)
  std::string work_dir;                     // per-slot scratch directory
  std::string record_dir;                   // where the exporter and worker are recorded while they run (SpawnOptions)
  int kill_grace_s = 10;                    // SIGTERM -> SIGKILL grace for a worker past its timeout
  // Intra-op threads per slot id (agent_config.h slot_threads), the same for every build and
  // runtime the slot runs: set in the worker and the runner (WorkerJob::threads) and in the
  // job's OMP_NUM_THREADS. A slot missing here gets torch's default.
  std::map<std::string, int> slot_threads;
  int threads = 0;       // this job's slot's (filled per job from slot_threads)
  int tick_every_s = 1;  // how often keep_going is asked while the worker runs
  // Where a CPU job with a memory cap gets its memory cgroup; nullopt: the job caps its own
  // address space (RLIMIT_AS) instead.
  std::optional<CgroupLocation> memory_cgroup;
};

// Called while the worker runs; false means stop (lease lost, run cancelled, agent aborting).
using KeepGoing = std::function<bool()>;

// The job's verdict, or nullopt when it was stopped by `keep_going` (nothing to report).
std::optional<JobResult> run_leased_job(const LeasedJob& job, const JobEnvironment& env, const KeepGoing& keep_going);

// What the agent's slot loops (agent_loops.h) run a leased job with. Every slot calls it from
// its own thread at once: implementations are thread-safe.
class JobRunner {
 public:
  virtual ~JobRunner() = default;
  // The verdict of `job` on `slot`, asking `keep_going` while it runs; nullopt when keep_going
  // said stop (nothing to report).
  virtual std::optional<JobResult> run(const LeasedJob& job, const SlotDescriptor& slot,
                                       const KeepGoing& keep_going) = 0;
};

// JobRunner over the agent's torch builds, each job in worker processes (run_leased_job). A job
// naming a build this agent lacks is `unsupported`; one on a build that cannot run here
// (TorchBuild::broken) is an `error` naming why, neither asking keep_going.
class BuildJobRunner final : public JobRunner {
 public:
  // `shared` is every job's environment but its build and slot; its work_dir is the agent's,
  // in which each slot gets a scratch directory named after it. The cache and launcher it
  // points to must outlive the runner.
  BuildJobRunner(std::vector<TorchBuild> builds, JobEnvironment shared);

  std::optional<JobResult> run(const LeasedJob& job, const SlotDescriptor& slot, const KeepGoing& keep_going) override;

 private:
  const std::vector<TorchBuild> builds_;
  const JobEnvironment shared_;
};

// The error verdict posted in place of a result the coordinator refused as invalid (400: its
// consistency checks; 413: over its max_body_bytes): status error, the refusal's `detail` in the
// message, and only the environment fingerprint kept from `refused` (whatever else it carries may
// be what was refused), so the job ends visibly instead of the upload being retried forever.
JobResult refused_result_verdict(const JobResult& refused, const std::string& detail);

}  // namespace benchfleet::agent
