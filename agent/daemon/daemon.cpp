#include "agent/daemon/daemon.h"

#include <sched.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <filesystem>
#include <mutex>
#include <optional>

#include "agent/daemon/agent_codecs.h"
#include "agent/daemon/agent_loops.h"
#include "agent/daemon/agent_token.h"
#include "agent/daemon/allocation.h"
#include "agent/daemon/artifact_cache.h"
#include "agent/daemon/build_launcher.h"
#include "agent/daemon/build_probe.h"
#include "agent/daemon/coordinator_client.h"
#include "agent/daemon/gpu_discovery.h"
#include "agent/daemon/job_runner.h"
#include "agent/daemon/process.h"
#include "agent/daemon/spool.h"
#include "agent/daemon/wait_clock.h"

namespace benchfleet::agent {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// `p` absolute, with symlinks resolved as far as it exists.
std::string resolved_path(const std::string& p) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(p, ec);
  if (ec) return p;
  const fs::path resolved = fs::weakly_canonical(absolute, ec);
  return ec ? absolute.lexically_normal().string() : resolved.string();
}

// The Slurm job's time left, from `squeue -h -j <job> -o %L` (its output kept in `scratch`).
Result<std::optional<std::int64_t>> slurm_time_left(const std::string& squeue, const std::string& job_id,
                                                    const std::string& scratch) {
  SpawnOptions o;
  o.argv = {squeue, "-h", "-j", job_id, "-o", "%L"};
  o.stdout_path = scratch + "/squeue.out";
  o.stderr_path = scratch + "/squeue.err";
  auto child = Child::spawn(o);
  if (!child.ok()) return Error::invalid("squeue", "cannot run " + squeue + ": " + child.error().message);
  const ExitInfo exit = supervise(*child, 30s, 1s, 1s, nullptr);
  if (exit.timed_out || exit.exit_code != 0) {
    return Error::invalid("squeue", squeue + " -j " + job_id + " failed (exit " + std::to_string(exit.exit_code) +
                                        (exit.timed_out ? ", timed out" : "") + "): " + tail_of_file(o.stderr_path, 3));
  }
  BF_ASSIGN_OR_RETURN(std::string text, read_file_bounded(o.stdout_path, 4096));
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) {
    return Error::invalid("squeue", squeue + " does not list job " + job_id);
  }
  return parse_slurm_time_left(text);
}

// The allocation's end on the steady clock: --end-at, else (slurm) squeue's time left; nullopt
// when there is none. A failed squeue keeps the end read before (logged).
std::function<std::optional<std::chrono::steady_clock::time_point>()> deadline_reader(const AgentConfig& c) {
  using std::chrono::steady_clock;
  if (c.end_at > 0) {
    const std::int64_t end_ms = c.end_at * 1000;
    return [end_ms] {
      const std::int64_t now_ms =
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
              .count();
      return std::optional<steady_clock::time_point>(steady_clock::now() + std::chrono::milliseconds(end_ms - now_ms));
    };
  }
  if (!c.slurm) return nullptr;
  auto last = std::make_shared<std::optional<steady_clock::time_point>>();
  return [squeue = c.squeue, job = c.slurm->job_id, scratch = c.work_dir, last] {
    Result<std::optional<std::int64_t>> left = Error::internal("not read");
    try {
      left = slurm_time_left(squeue, job, scratch);
    } catch (const std::exception& e) {  // the loops' reader must not throw
      left = Error::internal(e.what());
    }
    if (!left.ok()) {
      spdlog::warn("cannot read the allocation's time left ({}); keeping the deadline read before",
                   left.error().describe());
      return *last;
    }
    *last = *left ? std::optional<steady_clock::time_point>(steady_clock::now() + std::chrono::seconds(**left))
                  : std::nullopt;
    if (*left) {
      spdlog::info("slurm job {}: {} s left", job, **left);
    } else {
      spdlog::info("slurm job {}: no time limit", job);
    }
    return *last;
  };
}

}  // namespace

struct Daemon::State {
  AgentConfig config;
  std::string executable;
  std::unique_ptr<Spool> spool;
  std::unique_ptr<ArtifactCache> cache;
  std::unique_ptr<BuildLauncher> launcher;
  std::unique_ptr<BuildJobRunner> runner;
  std::unique_ptr<ModelFiles> model_files;
  // The agent's id and token (AgentLoops'), for the model artifacts a job fetches. Set before
  // the loops start, so before any job runs.
  AgentIdentity* identity = nullptr;
  SteadyWaitClock clock;
  std::mutex stop_mu;
  int stop_requests = 0;              // under stop_mu; passed on to the loops once they exist
  std::unique_ptr<AgentLoops> loops;  // under stop_mu

  std::string token_file() const { return config.state_dir + "/agent-token.json"; }
  // Records of the running exporters and workers (SpawnOptions::record_dir).
  std::string record_dir() const { return config.work_dir + "/children"; }
};

Daemon::Daemon(AgentConfig config, std::string executable) : state_(std::make_unique<State>()) {
  state_->config = std::move(config);
  state_->executable = std::move(executable);
}

Daemon::~Daemon() = default;

void Daemon::request_stop() {
  int stops = 0;
  {
    std::lock_guard lock(state_->stop_mu);
    stops = ++state_->stop_requests;
    if (state_->loops) state_->loops->request_stop();
  }
  spdlog::info(stops >= 2 ? "abort: killing workers" : "drain: running jobs finish, nothing new is leased");
}

namespace {

// The agent's directories made and resolved, what an earlier run of it left running killed, its
// spool opened; false (logged) when it cannot serve.
bool prepare_state(Daemon::State& s) {
  AgentConfig& c = s.config;
  std::error_code ec;
  for (const auto& dir : {c.state_dir, c.work_dir, c.artifact_dir}) {
    fs::create_directories(dir, ec);
    if (ec) {
      spdlog::error("cannot create {}: {}", dir, ec.message());
      return false;
    }
  }
  // Absolute from here on, before anything keeps them: a build in its own root runs with another
  // working directory, so a relative --state-dir would send its exports elsewhere.
  for (std::string* p : {&c.state_dir, &c.spool_dir, &c.work_dir, &c.artifact_dir}) *p = resolved_path(*p);
  // Before anything is probed or leased: what a previous life of this agent left running (it
  // was killed, or died of an exception) still holds the GPU and would skew every timing.
  const OrphanSweep sweep = kill_orphaned_children(s.record_dir(), 10s);
  if (sweep.records > 0) {
    spdlog::warn("killed {} orphaned process(es) of {} exporter/worker record(s) left by an earlier run of this agent",
                 sweep.killed.size(), sweep.records);
  }
  if (!sweep.survivors.empty()) {
    spdlog::error("{} orphaned process(es) survive SIGKILL; not serving with them on the GPU", sweep.survivors.size());
    return false;
  }
  if (c.exporter.empty()) c.exporter = default_exporter_path(s.executable);
  s.spool = std::make_unique<Spool>(c.spool_dir);
  s.cache = std::make_unique<ArtifactCache>(c.artifact_dir);
  if (auto st = s.spool->open(); !st) {
    spdlog::error("{}", st.error().message);
    return false;
  }

  return true;
}

// How CPU jobs' memory is capped: a cgroup each under this agent's own when it can make them
// (memory_cap auto), else each job's address space.
void choose_memory_cap(const AgentConfig& c, JobEnvironment& shared) {
  if (c.memory_cap == "auto") shared.memory_cgroup = this_process_memory_cgroup();
  if (shared.memory_cgroup) {
    if (auto usable = probe_memory_cgroup(*shared.memory_cgroup); !usable) {
      spdlog::info("no memory cgroups for jobs: {}", usable.error().message);
      shared.memory_cgroup.reset();
    } else if (const int stale = remove_stale_job_cgroups(*shared.memory_cgroup); stale > 0) {
      spdlog::info("removed {} empty job cgroup(s) left by an agent that was killed", stale);
    }
  }
  if (shared.memory_cgroup) {
    spdlog::info("memory caps of CPU jobs: a cgroup each under {}", shared.memory_cgroup->directory);
  } else {
    spdlog::info("memory caps of CPU jobs: each job's address space (RLIMIT_AS){}",
                 c.memory_cap == "auto" ? "; no memory cgroup this agent can make" : "");
  }
}

// What the agent's loops are made of: the connection, the job runner, the spool, its identity
// (the token it holds, its key) and the allocation it runs in.
AgentLoopParts loop_parts(Daemon::State& s, const AgentDescriptor& descriptor) {
  const AgentConfig& c = s.config;
  AgentLoopParts parts;
  const std::string coordinator = c.coordinator;
  parts.connect = [coordinator](AgentIdentity& identity) {
    return std::make_unique<CoordinatorClient>(coordinator, identity);
  };
  parts.runner = s.runner.get();
  parts.spool = s.spool.get();
  parts.clock = &s.clock;
  parts.enrolled = [token_file = s.token_file(), coordinator, descriptor](const EnrollResponse& e) {
    save_agent_token(token_file, coordinator, e, descriptor);
  };
  parts.descriptor = descriptor;
  parts.enrollment_token = c.enrollment_token;
  parts.held_token = held_agent_token(s.token_file(), coordinator);
  parts.agent_key = agent_key(c.state_dir + "/agent-key");
  parts.allocation.read_deadline = deadline_reader(c);
  parts.allocation.end_margin = std::chrono::seconds(c.end_margin_s);
  parts.allocation.idle_exit = std::chrono::seconds(c.idle_exit_s);
  parts.allocation.kill_grace_s = c.kill_grace_s;
  return parts;
}

}  // namespace

int Daemon::run() {
  State& s = *state_;
  AgentConfig& c = s.config;
  if (!prepare_state(s)) return 1;
  const Discovery found = discover_gpus();
  std::vector<GpuInfo> gpus = found.gpus;
  if (found.gpus.empty()) spdlog::info("no GPU: {}; offering one cpu slot", found.note);
  if (c.slurm) {
    // Only what Slurm bound: the node's other GPUs belong to other jobs.
    gpus = allocated_gpus(found.gpus, c.slurm->bound_gpus);
    spdlog::info("slurm job {} (SLURM_JOB_ID {}) as agent {}: {} GPU(s) bound, {} of them found", c.slurm->job_id,
                 c.slurm->raw_job_id, c.name, c.slurm->bound_gpus.size(), gpus.size());
  }
  const auto descriptors =
      slots_for(gpus, c.gpus, c.memory_limit_mb > 0 ? std::optional<std::int64_t>(c.memory_limit_mb) : std::nullopt);
  const std::string device = gpus.empty() ? "cpu" : "cuda";

  std::vector<TorchBuild> builds = c.builds;
  if (builds.empty()) {
    TorchBuild local;
    local.name = "local";
    local.python = "/usr/bin/python3";
    local.worker = default_worker_path(s.executable);
    builds.push_back(std::move(local));
  }
  if (c.runner.empty()) c.runner = default_runner_path(c.exporter);
  if (c.in_root.empty()) c.in_root = default_in_root_path(c.exporter);
  // Paths resolved once: a build in its own root sees the host directories it needs bound at
  // these paths, so the paths its programs are given must not go through symlinks.
  for (std::string* p : {&c.exporter, &c.runner, &c.catalog, &c.in_root}) *p = resolved_path(*p);
  for (auto& b : builds) b.worker = resolved_path(b.worker);
  std::vector<std::string> readable = {fs::path(c.exporter).parent_path().string(),
                                       fs::path(c.runner).parent_path().string(),
                                       fs::path(c.catalog).parent_path().string()};
  for (const auto& module : {c.exporter, c.runner}) {
    if (const std::string rules = shipped_rules_dir(module); fs::is_directory(rules)) readable.push_back(rules);
  }
  // Registered models' files: artifacts fetched into the (bound, writable) artifact directory,
  // and the paths under model_roots, bound read-only.
  s.model_files = std::make_unique<ModelFiles>(
      c.artifact_dir + "/models", c.model_roots,
      [&s, coordinator = c.coordinator](const std::string& target, const std::string& path) {
        http::Client client(coordinator);
        http::Client::Headers headers;
        if (s.identity != nullptr) headers.emplace_back("Authorization", "Bearer " + s.identity->get().second);
        return client.get_to_file(target, path, headers, std::uint64_t{1} << 40, std::chrono::hours(2));
      });
  for (const std::string& root : c.model_roots) readable.push_back(resolved_path(root));
  s.launcher = std::make_unique<BuildLauncher>(c.in_root, std::vector<std::string>{c.work_dir, c.artifact_dir},
                                               std::move(readable), c.artifact_dir + "/inductor");
  for (auto& b : builds) probe_build(c, *s.launcher, s.record_dir(), device, b);

  AgentDescriptor descriptor;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  descriptor.name = c.name;
  descriptor.hostname = host;
  descriptor.version = BENCHFLEET_VERSION;
  descriptor.slots = descriptors;
  for (const auto& b : builds) descriptor.torch_builds.push_back({b.name, b.version, b.runtimes});

  JobEnvironment shared;
  // Every build and runtime of a slot gets the slot's thread count, so that two builds compare
  // on equal terms (results record it as cpu_threads).
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const int cpu_count = sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  auto threads = slot_thread_counts(c, descriptors, cpu_count);
  if (!threads.ok()) {
    spdlog::error("{}", threads.error().describe());
    return 1;
  }
  shared.slot_threads = std::move(*threads);
  for (const auto& [slot, n] : shared.slot_threads) spdlog::info("slot {}: {} thread(s) per job", slot, n);
  shared.cache = s.cache.get();
  shared.model_files = s.model_files.get();
  shared.launcher = s.launcher.get();
  shared.exporter = Exporter{"", c.exporter, c.catalog, c.export_timeout_s, {}};
  shared.runner = c.runner;
  shared.work_dir = c.work_dir;
  shared.record_dir = s.record_dir();
  shared.kill_grace_s = c.kill_grace_s;
  choose_memory_cap(c, shared);
  s.runner = std::make_unique<BuildJobRunner>(builds, std::move(shared));

  AgentLoopParts parts = loop_parts(s, descriptor);
  auto loops = std::make_unique<AgentLoops>(std::move(parts));
  s.identity = &loops->identity();
  if (auto saved = load_agent_token(s.token_file(), c.coordinator, descriptor)) {
    loops->identity().set(saved->first, std::move(saved->second));
  }
  AgentLoops* running = loops.get();
  {
    // Stops requested while the agent was starting (probing builds can take minutes) count.
    std::lock_guard lock(s.stop_mu);
    for (int i = 0; i < s.stop_requests; ++i) loops->request_stop();
    s.loops = std::move(loops);
  }
  running->run();
  const std::string why = running->exit_reason();
  spdlog::info("exiting: {}; ran {} job(s)", why.empty() ? "stopped" : why, running->jobs_run());
  remove_allocation_dir();
  return 0;
}

void Daemon::remove_allocation_dir() {
  const AgentConfig& c = state_->config;
  if (c.allocation_dir.empty()) return;
  std::vector<std::string> skipped;
  std::vector<SpoolEntry> left;
  try {
    left = state_->spool->list(&skipped);
  } catch (const std::exception& e) {
    spdlog::warn("keeping {}: cannot list its spool: {}", c.allocation_dir, e.what());
    return;
  }
  if (!left.empty() || !skipped.empty()) {
    spdlog::warn("keeping {}: {} result(s) not uploaded are in its spool", c.allocation_dir,
                 left.size() + skipped.size());
    return;
  }
  std::error_code ec;
  fs::remove_all(c.allocation_dir, ec);
  if (ec) spdlog::warn("cannot remove {}: {}", c.allocation_dir, ec.message());
}

}  // namespace benchfleet::agent
