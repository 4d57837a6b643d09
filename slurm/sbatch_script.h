// The batch script the launcher submits for one GPU class (and `benchfleet slurm-script` prints
// for manual `sbatch`): #SBATCH lines from the class's config, then exec of the agent in
// allocation mode. Array sizes are not in the script: the launcher gives `--array=0-K` on the
// sbatch command line, so the printed script is exactly the one submitted.
#pragma once

#include <string>

#include "slurm/launcher_config.h"

namespace benchfleet::slurm {

// The job's --output pattern: <state_dir>/logs/slurm-%A_%a.out (the directory must exist when
// the job starts; the launcher creates it, a manual user must too).
std::string allocation_log_pattern(const LauncherConfig& config);

// REQUIRES: validate(config) passed and `cls` is one of config.classes.
// "#!/bin/bash", #SBATCH lines (job name, partition, gres, constraint, account, qos, time,
// cpus-per-task, mem, --signal=B:TERM@N, --output, --no-requeue, the extra sbatch_options), and
// `exec <agent_command> --allocation slurm --idle-exit-s N`.
std::string render_sbatch_script(const LauncherConfig& config, const ClassConfig& cls);

}  // namespace benchfleet::slurm
