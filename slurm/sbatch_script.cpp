#include "slurm/sbatch_script.h"

#include <sstream>

namespace benchfleet::slurm {
namespace {

void line_if(std::ostringstream& out, const char* option, const std::string& value) {
  if (!value.empty()) out << "#SBATCH " << option << '=' << value << '\n';
}

}  // namespace

std::string allocation_log_pattern(const LauncherConfig& config) { return config.state_dir + "/logs/slurm-%A_%a.out"; }

std::string render_sbatch_script(const LauncherConfig& config, const ClassConfig& cls) {
  std::ostringstream out;
  out << "#!/bin/bash\n";
  out << "# benchfleet agent allocation for GPU class " << cls.gpu_class << " (benchfleet-slurm-launcher)\n";
  line_if(out, "--job-name", cls.job_name);
  line_if(out, "--partition", cls.partition);
  line_if(out, "--gres", cls.gres);
  line_if(out, "--constraint", cls.constraint);
  line_if(out, "--account", cls.account);
  line_if(out, "--qos", cls.qos);
  line_if(out, "--time", cls.time_limit);
  if (cls.cpus_per_task > 0) out << "#SBATCH --cpus-per-task=" << cls.cpus_per_task << '\n';
  line_if(out, "--mem", cls.mem);
  // B: the signal goes to the batch shell, which exec has made the agent: it drains, its
  // workers are not signalled by Slurm before the end.
  if (cls.signal_s > 0) out << "#SBATCH --signal=B:TERM@" << cls.signal_s << '\n';
  out << "#SBATCH --output=" << allocation_log_pattern(config) << '\n';
  // A killed allocation's jobs are requeued by the coordinator's lease rules, not by Slurm; the
  // launcher submits new allocations while work is queued.
  out << "#SBATCH --no-requeue\n";
  for (const auto& option : cls.sbatch_options) out << "#SBATCH " << option << '\n';
  out << "exec " << cls.agent_command << " --allocation slurm --idle-exit-s " << cls.idle_exit_s << '\n';
  return out.str();
}

}  // namespace benchfleet::slurm
