#include "agent/daemon/job_runner.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <variant>

#include <spdlog/spdlog.h>

#include "agent/daemon/agent_codecs.h"
#include "agent/daemon/host_load.h"
#include "agent/daemon/job_memory_cap.h"
#include "agent/daemon/process.h"
#include "common/codecs.h"
#include "common/result_checks.h"
#include "common/worker_job.h"

namespace benchfleet::agent {
namespace {

namespace fs = std::filesystem;

// A result carries every sample; the coordinator bounds them far below this.
constexpr std::size_t kMaxResultBytes = 256u << 20;

JobResult verdict(ResultStatus status, std::string message) {
  JobResult r;
  r.status = status;
  r.error = std::move(message);
  return r;
}

// The libtorch job: the artifact for the job's mode, exported (or found in the cache) first.
// Returns the verdict of a failed export instead when there is no artifact.
std::variant<WorkerJob, JobResult> libtorch_job(const LeasedJob& job, const std::optional<nlohmann::json>& definition,
                                                const JobEnvironment& env, Prepared& prepared) {
  const SlotDescriptor& slot = *env.slot;
  const bool gpu = slot.gpu.has_value();
  if (job.spec.dtype == Dtype::kAmp) {  // nothing to export: an artifact has one fixed dtype
    return verdict(ResultStatus::kUnsupported,
                   "amp (autocast over float32 weights) runs in the python runtime only: a libtorch artifact is "
                   "exported in one fixed dtype (float32, float16 or bfloat16)");
  }
  const char* perturbation = std::getenv("BENCHFLEET_TEST_PERTURB_COMPILED");  // test only (design §11)
  ArtifactKey key{job.spec.model,
                  definition,
                  job.model_digest,
                  env.build->name,
                  env.build->version,
                  env.build->root_info.id,
                  std::string(format_for(job.spec.mode)),
                  job.spec.mode,
                  job.spec.batch,
                  gpu ? "cuda" : "cpu",
                  gpu ? slot.gpu->compute_capability : "cpu",
                  job.spec.dtype,
                  perturbation != nullptr ? perturbation : ""};
  Exporter exporter = env.exporter;
  exporter.python = env.build->python;
  exporter.launch = [&env](SpawnOptions o) {
    o.record_dir = env.record_dir;
    return env.launcher->wrap(*env.build, std::move(o));
  };
  prepared = env.cache->prepare(key, exporter);
  if (!prepared.artifact) {
    JobResult failed = verdict(prepared.failure, prepared.message);
    failed.signal = prepared.signal;  // a crash: killed_from_outside tells Slurm's SIGTERM apart
    return failed;
  }

  WorkerJob w;
  w.artifact = prepared.artifact->path;
  w.format = key.format;
  w.artifact_metadata = prepared.artifact->exported.metadata;
  if (!prepared.artifact->exported.inputs) {
    return verdict(ResultStatus::kError, "the exporter's metadata is unusable: metadata.inputs: is required");
  }
  w.inputs = *prepared.artifact->exported.inputs;
  return w;
}

// The fingerprint says which of this host's builds ran the job, and in which root. A job that
// died before it recorded its torch (killed at its memory cap, a crash) gets the build's, as the
// agent probed it: a report's headers and a series name the torch of every result, an OOM's too.
void add_build_identity(const TorchBuild& build, JobResult& r) {
  if (!r.environment.is_object()) r.environment = nlohmann::json::object();
  r.environment["build"] = build.name;
  if (!build.version.empty() && !r.environment.contains("torch_version"))
    r.environment["torch_version"] = build.version;
  if (!build.torch_git.empty() && !r.environment.contains("torch_git")) r.environment["torch_git"] = build.torch_git;
  if (!build.root.empty()) {
    r.environment["build_root"] = build.root;
    r.environment["build_root_id"] = build.root_info.id;
    r.environment["build_root_suite"] = build.root_info.suite;
  }
}

}  // namespace

std::optional<JobResult> run_leased_job(const LeasedJob& job, const JobEnvironment& env, const KeepGoing& keep_going) {
  const SlotDescriptor& slot = *env.slot;
  const bool gpu = slot.gpu.has_value();
  const bool python = job.spec.runtime == Runtime::kPython;
  // What runs the job, in messages.
  const std::string runner_name = python ? "the python runner" : "the worker";

  // The model's definition with its files found on this host (fetched once per artifact).
  std::optional<nlohmann::json> definition = job.model_definition;
  if (definition && env.model_files != nullptr) {
    auto resolved = env.model_files->resolve(*definition);
    if (!resolved.ok()) return verdict(ResultStatus::kError, "the model's files: " + resolved.error().message);
    definition = std::move(*resolved);
  }
  WorkerJob w;
  Prepared prepared;
  if (python) {
    // torch.compile happens inside the runner: there is no artifact to export or cache.
    w.runtime = Runtime::kPython;
    w.catalog = env.exporter.catalog;
    w.model_definition = definition;
  } else {
    auto made = libtorch_job(job, definition, env, prepared);
    if (auto* failed = std::get_if<JobResult>(&made)) return std::move(*failed);
    w = std::move(std::get<WorkerJob>(made));
  }
  if (!keep_going()) return std::nullopt;
  w.model = job.spec.model;
  w.batch = job.spec.batch;
  w.mode = job.spec.mode;
  w.device = gpu ? "cuda" : "cpu";
  w.measurement = job.measurement;
  w.memory_limit_mb = job.memory_limit_mb ? job.memory_limit_mb : slot.memory_limit_mb;
  w.dtype = job.spec.dtype;
  w.dynamic = job.dynamic;  // the coordinator sets these for python compiled jobs only
  w.walk_batches = job.walk_batches;
  w.threads = env.threads;

  const fs::path dir =
      fs::path(env.work_dir) / ("job-" + std::to_string(job.job_id) + "-" + std::to_string(job.attempt));
  std::error_code ec;
  fs::remove_all(dir, ec);
  fs::create_directories(dir, ec);
  std::ofstream(dir / "job.json") << nlohmann::json(w).dump();

  SpawnOptions o;
  const std::string job_file = (dir / "job.json").string();
  const std::string result_file = (dir / "result.json").string();
  if (python) {
    o.argv = {env.build->python, env.runner, "--job", job_file, "--out", result_file};
  } else {
    o.argv = {env.build->worker, "--job", job_file, "--out", result_file};
  }
  // The worker sees its slot's GPU only; the CPU slot sees none.
  o.env_set["CUDA_VISIBLE_DEVICES"] = gpu ? slot.gpu->uuid : "";
  // OpenMP's pool (torch's intra-op threads, and OpenBLAS's OpenMP flavour) sized as the slot's
  // thread count before the program starts; the worker and the runner set torch's to it too.
  if (env.threads > 0) o.env_set["OMP_NUM_THREADS"] = std::to_string(env.threads);
  o.stdout_path = (dir / "stdout.txt").string();
  o.stderr_path = (dir / "stderr.txt").string();
  o.record_dir = env.record_dir;
  // A CPU job's memory cap, held by the agent where it can make the job a memory cgroup; else
  // the job caps its own address space (it sees no request directory in its environment).
  std::optional<JobMemoryCap> memory_cap;
  if (!gpu && w.memory_limit_mb && env.memory_cgroup) {
    // Unique on the host: agents of other coordinators (or tests) number their jobs alike.
    const std::string name = std::string(kJobCgroupPrefix) + std::to_string(::getpid()) + "-" + slot.id + "-job" +
                             std::to_string(job.job_id) + "-" + std::to_string(job.attempt);
    auto made = JobMemoryCap::start(*env.memory_cgroup, name, *w.memory_limit_mb << 20, dir.string());
    if (made.ok()) {
      memory_cap.emplace(std::move(*made));
      o.env_set[JobMemoryCap::environment_variable()] = dir.string();
    } else {
      spdlog::warn("job {}: {}; it caps its own address space instead", job.job_id, made.error().message);
    }
  }
  o = env.launcher->wrap(*env.build, std::move(o));
  if (memory_cap) o.argv = joining_cgroup(memory_cap->cgroup_path(), std::move(o.argv));
  const HostSample before = HostSample::now();
  auto child = Child::spawn(o);
  if (!child.ok()) return verdict(ResultStatus::kError, "cannot start " + runner_name + ": " + child.error().message);
  const ExitInfo exit = supervise(*child, std::chrono::seconds(job.timeout_s), std::chrono::seconds(env.kill_grace_s),
                                  std::chrono::seconds(env.tick_every_s), keep_going, [&memory_cap] {
                                    if (memory_cap) memory_cap->serve();
                                  });
  if (exit.aborted) {
    fs::remove_all(dir, ec);  // stopped: nothing to report, and no scratch to keep
    return std::nullopt;
  }
  const std::optional<HostLoad> load = other_load(before, HostSample::now());  // the worker is reaped

  const std::string stderr_tail = tail_of_file(o.stderr_path, 20);
  JobResult r;
  if (exit.timed_out) {
    r = verdict(ResultStatus::kTimeout, runner_name + " ran past the job's timeout of " +
                                            std::to_string(job.timeout_s) + " s and was killed; last stderr:\n" +
                                            stderr_tail);
  } else if (exit.signal != 0) {
    r = verdict(ResultStatus::kCrash, runner_name + " was killed by signal " + std::to_string(exit.signal) +
                                          "; last stderr:\n" + stderr_tail);
    r.signal = exit.signal;
  } else {
    auto text = read_file_bounded(result_file, kMaxResultBytes);
    auto decoded = text.ok() ? decode_worker_result(*text) : Result<JobResult>(text.error());
    if (decoded.ok()) escape_result_text(*decoded);  // text a job wrote reaches operators' screens
    if (!decoded.ok()) {
      r = verdict(ResultStatus::kError, runner_name + " exited with " + std::to_string(exit.exit_code) +
                                            " without a readable result (" + decoded.error().describe() +
                                            "); last stderr:\n" + stderr_tail);
    } else if (auto refused = check_posted_result(*decoded, "result")) {
      // The coordinator would refuse it (400) on the same rules: say why here, as the verdict.
      r = verdict(ResultStatus::kError, runner_name + " wrote a result that fails the coordinator's checks (" +
                                            refused->describe() + "); last stderr:\n" + stderr_tail);
    } else {
      r = std::move(*decoded);
    }
  }
  if (memory_cap) memory_cap->finish(r);
  add_build_identity(*env.build, r);
  if (load) {
    // Whether other work shared the host's CPUs while this job ran: reports warn when the sides of
    // a comparison differ in it (rules/fingerprint_diff.h).
    r.environment["host_other_load"] = std::round(load->other_fraction * 100) / 100;
    r.environment["high_load"] = load->high;
  }
  if (prepared.artifact) {
    // Which artifact the worker ran, hashed by the agent (the worker links no crypto library).
    r.environment["artifact_sha256"] = prepared.artifact->sha256;
    const ExporterAnswer& exported = prepared.artifact->exported;
    if (!r.export_s && exported.export_s) r.export_s = *exported.export_s;
    if (!r.telemetry.is_object()) r.telemetry = nlohmann::json::object();
    r.telemetry["artifact_cached"] = prepared.artifact->cached;
    if (exported.inductor_cache) r.telemetry["export_inductor_cache"] = *exported.inductor_cache;
    // A package perturbed on purpose (test only) says so in every result measured on it.
    if (const auto it = exported.metadata.find("test_perturb_compiled");
        it != exported.metadata.end() && it->is_number()) {
      r.telemetry["test_perturb_compiled"] = *it;
    }
  }
  fs::remove_all(dir, ec);  // the result travels in the spool; scratch is not kept
  return r;
}

BuildJobRunner::BuildJobRunner(std::vector<TorchBuild> builds, JobEnvironment shared)
    : builds_(std::move(builds)), shared_(std::move(shared)) {}

std::optional<JobResult> BuildJobRunner::run(const LeasedJob& job, const SlotDescriptor& slot,
                                             const KeepGoing& keep_going) {
  auto build = std::find_if(builds_.begin(), builds_.end(), [&](auto& b) { return b.name == job.spec.torch_build; });
  if (build == builds_.end()) {
    return verdict(ResultStatus::kUnsupported, "this agent has no torch build named " + job.spec.torch_build);
  }
  if (!build->broken.empty()) {
    return verdict(ResultStatus::kError,
                   "torch build " + build->name + " cannot run jobs on this agent: " + build->broken);
  }
  JobEnvironment env = shared_;
  env.build = &*build;
  env.slot = &slot;
  env.work_dir = shared_.work_dir + "/" + slot.id;
  if (auto it = shared_.slot_threads.find(slot.id); it != shared_.slot_threads.end()) env.threads = it->second;
  return run_leased_job(job, env, keep_going);
}

JobResult refused_result_verdict(const JobResult& refused, const std::string& detail) {
  JobResult verdict;
  verdict.status = ResultStatus::kError;
  verdict.error = "the coordinator refused the worker's " + std::string(to_string(refused.status)) + " result (" +
                  std::to_string(refused.samples_ms.size()) + " samples): " + detail;
  verdict.environment = refused.environment;  // the fingerprint: which host and build refused
  return verdict;
}

}  // namespace benchfleet::agent
