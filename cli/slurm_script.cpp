#include "cli/slurm_script.h"

#include <filesystem>

#include "slurm/launcher_config.h"
#include "slurm/sbatch_script.h"

namespace benchfleet::cli {

Result<SlurmScript> slurm_script(const std::string& launcher_config, const std::string& gpu_class) {
  auto config = slurm::load_launcher_config(launcher_config);
  if (!config.ok()) {
    return Error::invalid("--launcher-config",
                          "--launcher-config " + launcher_config + ": " + config.error().describe());
  }
  const slurm::ClassConfig* cls = config->find_class(gpu_class);
  if (cls == nullptr) {
    std::string known;
    for (const auto& c : config->classes) known += (known.empty() ? "" : ", ") + c.gpu_class;
    return Error::invalid("--class",
                          "--class: no class \"" + gpu_class + "\" in " + launcher_config + "; configured: " + known);
  }
  SlurmScript out;
  out.script = slurm::render_sbatch_script(*config, *cls);
  out.log_dir = std::filesystem::path(slurm::allocation_log_pattern(*config)).parent_path().string();
  return out;
}

}  // namespace benchfleet::cli
