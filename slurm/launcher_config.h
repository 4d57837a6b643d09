// The Slurm launcher's configuration (benchfleet-slurm-launcher --config FILE): where the
// coordinator is, how fast it may submit, and one entry per GPU class saying how to ask Slurm for
// an allocation whose agent serves that class. See docs/design.md "The Slurm launcher".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace benchfleet::slurm {

// How to get allocations for one GPU class. Empty strings and 0 mean "not given to sbatch".
struct ClassConfig {
  std::string gpu_class;                    // required: the class these allocations' agents serve
  std::vector<std::string> builds;          // queued jobs of these torch builds count; empty: all builds
  std::string partition;                    // --partition
  std::string gres;                         // --gres, e.g. "gpu:a100:1"
  std::string constraint;                   // --constraint
  std::string account;                      // --account
  std::string qos;                          // --qos
  std::string time_limit = "02:00:00";      // --time, any Slurm format ("MM", "D-HH:MM:SS", ...)
  int cpus_per_task = 0;                    // --cpus-per-task; 0: not given
  std::string mem;                          // --mem
  int max_allocations = 4;                  // pending + running at once
  int signal_s = 300;                       // --signal=B:TERM@signal_s (the agent drains on it)
  int idle_exit_s = 120;                    // the agent's --idle-exit-s
  std::string agent_command;                // required: the agent's command line (a shell line)
  std::string job_name;                     // --job-name; the loader fills benchfleet-<gpu_class>
  std::vector<std::string> sbatch_options;  // extra "#SBATCH" options, e.g. "--exclusive"

  // True when queued jobs of `torch_build` count for this class.
  bool counts_build(std::string_view torch_build) const;
};

struct LauncherConfig {
  std::string coordinator = "http://127.0.0.1:8080";  // base URL of the coordinator's REST API
  std::string api_token_file;                         // bearer token for the API; "" for none
  int poll_s = 15;                                    // reconcile period
  int max_submissions_per_minute = 4;                 // sbatch calls in any 60 s window
  std::string state_dir = "./benchfleet-slurm";       // made absolute by the loader
  std::string sbatch = "sbatch";                      // commands (names on PATH or paths)
  std::string squeue = "squeue";
  std::string sacct = "sacct";
  std::string scontrol = "scontrol";
  std::vector<ClassConfig> classes;

  // The class configured for `gpu_class`, or nullptr.
  const ClassConfig* find_class(std::string_view gpu_class) const;
};

// Reads and validates the YAML file at `path`. Errors name the key, e.g. field
// "classes[1].gres" or "poll_s"; unknown keys are errors. A relative state_dir is made absolute
// against the current directory (the job's --output must not depend on where sbatch runs).
Result<LauncherConfig> load_launcher_config(const std::string& path);

// As load_launcher_config, from YAML text; `origin` names it in messages.
Result<LauncherConfig> parse_launcher_config(std::string_view yaml_text, std::string_view origin);

// The checks load_launcher_config applies (after defaults are filled): at least one class,
// unique gpu_class and job_name, max_allocations >= 1, poll_s >= 1, agent_command not empty,
// time_limit in a Slurm format, no line breaks in anything written into the script.
Status validate(const LauncherConfig& config);

// A Slurm time limit in seconds: "minutes", "minutes:seconds", "hours:minutes:seconds",
// "days-hours", "days-hours:minutes", "days-hours:minutes:seconds"; "UNLIMITED"/"INFINITE" and
// "0" are no limit (returned as 0). std::nullopt when `text` is none of these.
std::optional<std::int64_t> parse_slurm_time_limit(std::string_view text);

}  // namespace benchfleet::slurm
