// benchfleet-agent configuration: defaults < YAML file (--config) < environment < flags.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "agent/daemon/allocation.h"
#include "agent/daemon/job_runner.h"
#include "common/result.h"

namespace benchfleet::agent {

struct AgentConfig {
  std::string coordinator = "http://127.0.0.1:8080";
  std::string enrollment_token;  // BENCHFLEET_ENROLLMENT_TOKEN; or enrollment_token_file
  std::string enrollment_token_file;
  std::string name;                              // default: the host name
  std::string state_dir = "./benchfleet-agent";  // token; default parent of the three below
  std::string spool_dir;                         // default <state_dir>/spool
  std::string artifact_dir;                      // default <state_dir>/artifacts
  std::string work_dir;                          // default <state_dir>/work
  std::vector<std::string> gpus;                 // UUIDs or indices; empty: all found
  std::int64_t memory_limit_mb = 0;              // per slot, 0: none (a run's own limit wins)
  // How a CPU job's memory cap is applied: "auto" (a memory cgroup per job where this agent can
  // make one, agent/daemon/memory_cgroup.h; else the job's own address-space limit) or
  // "address_space" (always the latter).
  std::string memory_cap = "auto";
  // Intra-op threads of every job on a slot, the same for each build and runtime it runs
  // (WorkerJob::threads): cpu_threads for every slot (0: the slot's cores, this process's CPUs
  // shared out among the slots), and per slot "SLOT=N" entries that override it.
  int cpu_threads = 0;
  std::vector<std::string> slot_threads;
  int kill_grace_s = 10;
  int export_timeout_s = 3600;
  std::string exporter;  // benchfleet_export.py; default: found next to the binary or in the source tree
  std::string runner;    // benchfleet_runner.py (python runtime); default: beside the exporter
  std::string catalog;   // default: the shipped catalog
  // Directories a model definition's `path` may name on this host (docs/models.md); none: a
  // job naming a path is an error.
  std::vector<std::string> model_roots;
  std::string in_root;  // scripts/in-root.sh (builds with a root); default: beside the exporter
  std::string log_level = "info";
  // A batch allocation (docs/design.md §10.1): "none", or "slurm" (name, GPUs and deadline from
  // the Slurm job the agent runs in; per-allocation state, spool and work directories).
  std::string allocation = "none";
  std::int64_t end_at = 0;  // unix seconds; 0: none (slurm: squeue's time left)
  int end_margin_s = 30;    // a job starts only if it ends this long before the deadline
  int idle_exit_s = 0;      // drain and exit after this long with no job; 0: never
  std::string squeue = "squeue";
  // Filled by parse_agent_config, not options: the Slurm job (allocation "slurm"), and the
  // per-allocation directory removed at a clean exit when its spool is empty.
  std::optional<SlurmAllocation> slurm;
  std::string allocation_dir;
  // Torch builds, from the YAML file only (a list of {name, python, worker, root}). None: one
  // build `local` = /usr/bin/python3 + the benchfleet-worker next to this binary. A build with a
  // root runs its python and worker inside that root filesystem (scripts/torch-root.sh).
  std::vector<TorchBuild> builds;
};

struct AgentConfigParse {
  AgentConfig config;
  bool exit_now = false;
  int exit_code = 0;
};

// The thread count of each slot (by slot id) from cpu_threads and slot_threads, given the CPUs
// this process may use. An entry naming no slot, or not SLOT=N with N >= 1, is an error naming
// slot_threads.
Result<std::map<std::string, int>> slot_thread_counts(const AgentConfig& config,
                                                      const std::vector<SlotDescriptor>& slots, int cpus);

// argv + environment + --config file. Errors name the option or the YAML key.
Result<AgentConfigParse> parse_agent_config(int argc, char** argv);

// The allocation mode applied to a parsed config, with the Slurm variables of `env`: for
// "slurm", the Slurm job (`slurm`), the name unless `name_given`, and the per-allocation
// directories (state, spool and work under <state_dir>/<name>/ unless given; the artifact cache
// stays shared at <state_dir>/artifacts). Errors name the option (`allocation`, `end_at`...).
// REQUIRES: spool_dir, artifact_dir and work_dir are still empty unless the user set them.
Status apply_allocation(AgentConfig& config, bool name_given, const std::map<std::string, std::string>& env);

// The worker and exporter to use when the config names none, looked up from the agent's own
// executable path: beside it, in <bin>/../share/benchfleet (the exporter, installed), or where
// the build tree has them (the exporter: the source tree's agent/python/, only for an agent
// inside its build tree, see common/install_dirs.h). None found: the first candidate.
std::string default_worker_path(const std::string& agent_executable);
std::string default_exporter_path(const std::string& agent_executable);
// The python runtime's runner: benchfleet_runner.py in the exporter's directory.
std::string default_runner_path(const std::string& exporter);
// in-root.sh: beside the exporter (a release), else the source tree's scripts/.
std::string default_in_root_path(const std::string& exporter);
// The rules the python modules beside `python_module` read (benchfleet_rules.py): a build in its
// own root must see them bound, as it sees the modules.
std::string shipped_rules_dir(const std::string& python_module);

}  // namespace benchfleet::agent
