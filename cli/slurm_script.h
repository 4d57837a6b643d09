// `benchfleet slurm-script --launcher-config FILE --class GPU_CLASS`: the batch script
// benchfleet-slurm-launcher would submit for one GPU class, for a manual `sbatch`. It reads only
// the launcher's YAML config: no coordinator is asked.
#pragma once

#include <string>

#include "common/result.h"

namespace benchfleet::cli {

struct SlurmScript {
  std::string script;   // slurm::render_sbatch_script's text, submitted as is
  std::string log_dir;  // where the job's --output goes: must exist before sbatch
};

// The script for `gpu_class` of the launcher config at `launcher_config`. Errors: the config's
// own (naming its key, e.g. "classes[1].gres", and the file), or field "--class" naming the
// configured classes when `gpu_class` is not one of them.
Result<SlurmScript> slurm_script(const std::string& launcher_config, const std::string& gpu_class);

}  // namespace benchfleet::cli
