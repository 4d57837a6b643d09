#include "agent/daemon/agent_config.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

extern char** environ;  // NOLINT(readability-redundant-declaration): POSIX, for the Slurm variables

#include "common/catalog.h"
#include "common/codecs.h"
#include "common/config_options.h"
#include "common/install_dirs.h"

namespace benchfleet::agent {
namespace {

namespace fs = std::filesystem;
using config::option;

std::vector<config::Option> options(AgentConfig& c) {
  return {
      option("coordinator", c.coordinator, "coordinator base URL"),
      option("enrollment_token", c.enrollment_token, "enrolment token (exchanged once for this agent's own token)"),
      option("enrollment_token_file", c.enrollment_token_file, "file holding the enrolment token"),
      option("name", c.name, "this agent's name, unique in the fleet (default: the host name)"),
      option("state_dir", c.state_dir, "agent token (0600); default parent of the spool, artifact and work dirs"),
      option("spool_dir", c.spool_dir, "results waiting for upload (default: <state_dir>/spool)"),
      option("artifact_dir", c.artifact_dir, "exported model cache (default: <state_dir>/artifacts)"),
      option("work_dir", c.work_dir, "per-job scratch space (default: <state_dir>/work)"),
      option("gpus", c.gpus, "GPUs to use, by UUID or index (default: all found; none found: one cpu slot)"),
      option("memory_limit_mb", c.memory_limit_mb, "memory cap per slot passed to the worker (0: none)"),
      option("memory_cap", c.memory_cap,
             "how a CPU job's memory cap is applied: auto (a memory cgroup per job, RAM the job adds after its "
             "start-up, where this agent can make one; else the job's address-space growth, RLIMIT_AS) or "
             "address_space"),
      option("cpu_threads", c.cpu_threads,
             "intra-op threads of every job (torch's set_num_threads, OMP_NUM_THREADS), the same for each build and "
             "runtime of a slot so their results compare (0: the slot's cores, this agent's CPUs shared out among "
             "its slots)"),
      option("slot_threads", c.slot_threads, "per-slot thread counts overriding cpu_threads, as SLOT=N (cpu=2,gpu0=8)"),
      option("kill_grace_s", c.kill_grace_s, "seconds between SIGTERM and SIGKILL for a worker past its timeout"),
      option("export_timeout_s", c.export_timeout_s, "longest model export"),
      option("exporter", c.exporter, "path of benchfleet_export.py (default: found next to the binary)"),
      option("runner", c.runner,
             "path of benchfleet_runner.py, the python runtime's runner (default: beside the exporter)"),
      option("catalog", c.catalog,
             "model catalog YAML for jobs from a coordinator that sends no model definition (default: the shipped "
             "one)"),
      option("model_roots", c.model_roots,
             "directories a model definition's path may name on this host (none: such jobs are errors; artifacts "
             "need none)"),
      option("in_root", c.in_root,
             "path of in-root.sh, which runs the programs of a build that has a root (default: beside the exporter)"),
      option("log_level", c.log_level, "trace, debug, info, warn, error"),
      option("allocation", c.allocation,
             "none, or slurm: run inside one Slurm job (name slurm-<cluster>-<job id>, the job's GPUs or one "
             "cpu slot, its time limit as the deadline, per-allocation state under <state_dir>/<name>)"),
      option("end_at", c.end_at,
             "deadline, unix seconds (0: none; slurm: squeue's time left, read again after each job): no job "
             "starts that cannot finish before it"),
      option("end_margin_s", c.end_margin_s,
             "a job starts only if its estimate (longest measured for its cell, else timeout_s, plus "
             "kill_grace_s) ends this long before the deadline; with less left the agent drains"),
      option("idle_exit_s", c.idle_exit_s, "drain and exit 0 after this many seconds with no job (0: never)"),
      option("squeue", c.squeue, "squeue command (a name on PATH or a path), for the time left in slurm mode"),
  };
}

Status read_builds(const YAML::Node& node, const std::string& origin, std::vector<TorchBuild>& out) {
  if (!node.IsSequence()) return Error::invalid("builds", origin + ": must be a list of {name, python, worker, root}");
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string path = "builds[" + std::to_string(i) + "]";
    const YAML::Node& b = node[i];
    if (!b.IsMap()) return Error::invalid(path, origin + ": must be a mapping");
    TorchBuild build;
    for (const auto& kv : b) {
      const auto key = kv.first.as<std::string>();
      if (key == "name")
        build.name = kv.second.as<std::string>();
      else if (key == "python")
        build.python = kv.second.as<std::string>();
      else if (key == "worker")
        build.worker = kv.second.as<std::string>();
      else if (key == "root")
        build.root = kv.second.as<std::string>();
      else
        return Error::invalid(path + "." + key, origin + ": unknown key (allowed: name, python, worker, root)");
    }
    if (!is_valid_identifier(build.name)) return Error::invalid(path + ".name", origin + ": not a valid build name");
    // Without a worker the build offers the python runtime only (a root whose worker was not
    // built yet: the quick start's torch.compile matrices need none).
    if (build.python.empty()) return Error::invalid(path + ".python", origin + ": is required");
    for (std::size_t j = 0; j < out.size(); ++j) {
      if (out[j].name == build.name) {
        return Error::invalid(path + ".name",
                              origin + ": build " + build.name + " is already builds[" + std::to_string(j) + "]");
      }
    }
    out.push_back(std::move(build));
  }
  return Status::Ok();
}

std::map<std::string, std::string> process_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq != std::string::npos) env.emplace(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return env;
}

std::string first_existing(const std::vector<fs::path>& candidates) {
  for (const auto& p : candidates) {
    if (fs::exists(p)) return fs::weakly_canonical(p).string();
  }
  return candidates.front().string();
}

}  // namespace

Status apply_allocation(AgentConfig& c, bool name_given, const std::map<std::string, std::string>& env) {
  if (c.allocation != "none" && c.allocation != "slurm") {
    return Error::invalid("allocation", "must be none or slurm, got \"" + c.allocation + "\"");
  }
  if (c.end_at < 0 || c.end_at > (std::int64_t{1} << 40)) {
    return Error::invalid("end_at", "must be unix seconds (0: none), got " + std::to_string(c.end_at));
  }
  if (c.end_margin_s < 0) return Error::invalid("end_margin_s", "must be >= 0");
  if (c.idle_exit_s < 0) return Error::invalid("idle_exit_s", "must be >= 0 (0: never)");
  if (c.allocation != "slurm") return Status::Ok();
  if (c.squeue.empty()) return Error::invalid("squeue", "must name the squeue command");
  BF_ASSIGN_OR_RETURN(SlurmAllocation a, slurm_allocation_from(env));
  if (!name_given) c.name = a.name;
  if (c.artifact_dir.empty()) c.artifact_dir = c.state_dir + "/artifacts";  // shared by the allocations
  c.state_dir = (fs::path(c.state_dir) / sanitized_agent_name(c.name)).string();
  c.allocation_dir = c.state_dir;
  c.slurm = std::move(a);
  return Status::Ok();
}

std::string default_worker_path(const std::string& agent_executable) {
  const fs::path dir = fs::path(agent_executable).parent_path();
  return first_existing({dir / "benchfleet-worker", dir / ".." / "worker" / "benchfleet-worker"});
}

std::string default_exporter_path(const std::string& agent_executable) {
  const fs::path dir = fs::path(agent_executable).parent_path();
  std::vector<fs::path> candidates = {dir / "benchfleet_export.py",
                                      installed_share_dir(agent_executable) / "benchfleet_export.py"};
  // The source tree only for an agent of the build tree (install_dirs.h), never for a release.
  if (const auto tree = build_tree_of(agent_executable)) {
    candidates.push_back(tree->source_dir / "agent" / "python" / "benchfleet_export.py");
  }
  return first_existing(candidates);
}

std::string default_runner_path(const std::string& exporter) {
  return (fs::path(exporter).parent_path() / "benchfleet_runner.py").string();
}

std::string default_in_root_path(const std::string& exporter) {
  const fs::path dir = fs::path(exporter).parent_path();
  // A release keeps it beside the exporter (share/benchfleet/); the source tree in scripts/.
  return first_existing({dir / "in-root.sh", dir / ".." / ".." / "scripts" / "in-root.sh"});
}

std::string shipped_rules_dir(const std::string& python_module) {
  const fs::path dir = fs::path(python_module).parent_path();
  // Where benchfleet_rules.py looks: beside the modules in a release, common/rules in the sources.
  return first_existing({dir / "rules", dir / ".." / ".." / "common" / "rules"});
}

Result<std::map<std::string, int>> slot_thread_counts(const AgentConfig& config,
                                                      const std::vector<SlotDescriptor>& slots, int cpus) {
  std::map<std::string, int> out;
  const int share = std::max(1, cpus / std::max(1, static_cast<int>(slots.size())));
  for (const SlotDescriptor& s : slots) out[s.id] = config.cpu_threads > 0 ? config.cpu_threads : share;
  for (const std::string& entry : config.slot_threads) {
    const auto eq = entry.find('=');
    const std::string slot = entry.substr(0, eq);
    int n = 0;
    const bool number = eq != std::string::npos && eq + 1 < entry.size() &&
                        std::all_of(entry.begin() + static_cast<std::ptrdiff_t>(eq) + 1, entry.end(),
                                    [](char ch) { return ch >= '0' && ch <= '9'; }) &&
                        entry.size() - eq - 1 <= 4 && (n = std::stoi(entry.substr(eq + 1))) >= 1;
    if (!number) return Error::invalid("slot_threads", "\"" + entry + "\": must be SLOT=N with N from 1 to 4096");
    if (!out.contains(slot)) {
      std::string known;
      for (const auto& [id, threads] : out) known += (known.empty() ? "" : ", ") + id;
      return Error::invalid("slot_threads",
                            "\"" + entry + "\": this agent has no slot " + slot + " (its slots: " + known + ")");
    }
    out[slot] = std::min(n, 4096);
  }
  return out;
}

Result<AgentConfigParse> parse_agent_config(int argc, char** argv) {
  AgentConfigParse out;
  AgentConfig& c = out.config;
  if (const std::string path = config::config_path(argc, argv); !path.empty()) {
    BF_ASSIGN_OR_RETURN(YAML::Node root, config::load_yaml_mapping_file(path));
    BF_RETURN_IF_ERROR(config::apply_yaml(root, path, options(c), {"builds"}));
    if (root["builds"]) BF_RETURN_IF_ERROR(read_builds(root["builds"], path, c.builds));
  }
  CLI::App app{
      "benchfleet-agent: runs on each GPU host. Enrols with the coordinator, leases jobs for each GPU (or the CPU),\n"
      "exports models with each torch build's python, runs every job in a fresh benchfleet-worker process\n"
      "bound to its GPU (python-runtime jobs: benchfleet_runner.py in the build's python, no export),\n"
      "and uploads the results (spooled to disk first, so none is lost).\n"
      "SIGTERM drains (running jobs finish and report, then exit 0); a second SIGTERM aborts.\n"
      "In a batch job (--allocation slurm, as the sbatch scripts of benchfleet-slurm-launcher run it) the agent\n"
      "takes the job's GPUs (or one cpu slot) and its time limit: it starts no job that cannot finish before\n"
      "the limit, drains near it or after --idle-exit-s with no work, and exits 0 (`exiting: <why>`).\n"
      "Options also come from the YAML --config file (same names, underscores; torch builds as\n"
      "`builds: [{name, python, worker, root}]`; a build with a root runs its programs inside that root\n"
      "filesystem, see scripts/torch-root.sh; one without a worker offers the python runtime only) and from\n"
      "the environment variables shown. A CPU job's memory cap is a memory cgroup of its own where this agent\n"
      "can make one (--memory-cap auto), else the job's address-space limit."};
  app.set_version_flag("--version", std::string("benchfleet-agent ") + BENCHFLEET_VERSION);
  std::string ignored_config;
  auto opts = options(c);
  config::add_options(app, opts, ignored_config);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    out.exit_now = true;
    out.exit_code = app.exit(e);
    return out;
  }
  if (c.enrollment_token.empty() && !c.enrollment_token_file.empty()) {
    std::ifstream in(c.enrollment_token_file);
    if (!in) return Error::invalid("enrollment_token_file", "cannot read " + c.enrollment_token_file);
    std::getline(in, c.enrollment_token);
  }
  BF_RETURN_IF_ERROR(apply_allocation(c, !c.name.empty(), process_environment()));
  if (c.name.empty()) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    c.name = host;
  }
  if (c.memory_limit_mb < 0) return Error::invalid("memory_limit_mb", "must be >= 0");
  if (c.memory_cap != "auto" && c.memory_cap != "address_space") {
    return Error::invalid("memory_cap", "must be auto or address_space, not \"" + c.memory_cap + "\"");
  }
  if (c.kill_grace_s < 0) return Error::invalid("kill_grace_s", "must be >= 0");
  if (c.cpu_threads < 0 || c.cpu_threads > 4096) return Error::invalid("cpu_threads", "must be between 0 and 4096");
  if (c.catalog.empty()) c.catalog = default_catalog_path();
  if (c.spool_dir.empty()) c.spool_dir = c.state_dir + "/spool";
  if (c.artifact_dir.empty()) c.artifact_dir = c.state_dir + "/artifacts";
  if (c.work_dir.empty()) c.work_dir = c.state_dir + "/work";
  return out;
}

}  // namespace benchfleet::agent
