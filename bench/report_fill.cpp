#include "bench/report_fill.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <random>

#include "bench/fill_support.h"
#include "common/matrix.h"
#include "common/stats.h"
#include "coordinator/store/store.h"

namespace benchfleet::bench {
namespace {

struct GpuClass {
  const char* name;
  const char* device_name;
  const char* sm;
  double memory_gb;
  double slowdown;  // latency relative to an A100
};
constexpr std::array<GpuClass, 6> kGpus{{
    {"a100", "NVIDIA A100-SXM4-40GB", "8.0", 40, 1.0},
    {"v100", "Tesla V100-SXM2-16GB", "7.0", 16, 1.9},
    {"t4", "Tesla T4", "7.5", 16, 4.2},
    {"h100", "NVIDIA H100 80GB HBM3", "9.0", 80, 0.6},
    {"l4", "NVIDIA L4", "8.9", 24, 2.6},
    {"a10g", "NVIDIA A10G", "8.6", 24, 2.2},
}};

constexpr const auto& kShapes = kSeedShapes;

const std::vector<Mode> kModes = {Mode::kEager, Mode::kDefault, Mode::kReduceOverhead, Mode::kMaxAutotune};
double mode_speed(Mode m) {
  switch (m) {
    case Mode::kDefault:
      return 0.70;
    case Mode::kReduceOverhead:
      return 0.60;
    case Mode::kMaxAutotune:
      return 0.55;
    default:
      return 1.0;
  }
}
double mode_memory(Mode m) {
  switch (m) {
    case Mode::kDefault:
      return 1.1;
    case Mode::kReduceOverhead:
      return 1.5;
    case Mode::kMaxAutotune:
      return 1.3;
    default:
      return 1.0;
  }
}

std::string hex(std::mt19937_64& rng, int digits) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < digits; ++i) out += kHex[rng() % 16];
  return out;
}

std::string gpu_uuid(std::mt19937_64& rng) {
  std::string out = "GPU-";
  out += hex(rng, 8);
  for (int digits : {4, 4, 4, 12}) {
    out += '-';
    out += hex(rng, digits);
  }
  return out;
}

// What a worker on `gpu` would report for `spec` (measured, or out of memory, or failed).
JobResult synthesize(const JobSpec& spec, const GpuClass& gpu, std::size_t model_index, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const ModelShape shape = kShapes[model_index % kShapes.size()];
  const bool compiled = spec.mode != Mode::kEager;
  const bool nightly = spec.torch_build == "nightly";
  JobResult r;
  r.environment = {{"torch_version", nightly ? "2.7.0.dev20250301+cu126" : "2.5.1+cu124"},
                   {"exporter_torch_git", nightly ? "5ad8c5e2c4f1a0b3" : "a8d6afb511a69687"},
                   {"exporter_python", "3.11.2"},
                   {"worker_version", BENCHFLEET_VERSION},
                   {"host", std::string("gpu-") + gpu.name + "-01"},
                   {"cpu_model", "AMD EPYC 7763 64-Core Processor"},
                   {"cpu_threads", 16},
                   {"device", "cuda"},
                   {"format", compiled ? "aoti" : "torchscript"},
                   {"artifact_sha256", hex(rng, 64)},
                   {"gpu_name", gpu.device_name},
                   {"gpu_uuid", gpu_uuid(rng)},
                   {"gpu_sm", gpu.sm},
                   {"gpu_memory_mb", static_cast<std::int64_t>(gpu.memory_gb * 1024)},
                   {"cuda_runtime", nightly ? 12060 : 12040},
                   {"cuda_driver_api", 12060},
                   {"cudnn", 90100},
                   {"driver", "560.35.03"}};
  r.export_s = compiled ? 30 + 90 * unit(rng) : 2 + 3 * unit(rng);
  r.load_s = 0.5 + 2.5 * unit(rng);

  const double need_gb = 1.0 + shape.gb_per_image * spec.batch * mode_memory(spec.mode);
  if (need_gb > gpu.memory_gb * 0.9) {
    r.status = ResultStatus::kOom;
    r.oom =
        OomInfo{compiled ? OomPhase::kCompile : OomPhase::kWarmup, static_cast<std::int64_t>((0.5 + unit(rng)) * 1e9)};
    std::string message = "CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has a total capacity of ";
    message += std::to_string(static_cast<int>(gpu.memory_gb));
    message += " GiB";
    r.error = std::move(message);
    return r;
  }
  const double fate = unit(rng);
  if (compiled && fate < 0.01) {
    r.status = ResultStatus::kError;
    r.error = "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised: CompilationError";
    return r;
  }
  if (fate > 0.997) {
    r.status = ResultStatus::kTimeout;
    r.error = "timed out after 1800 s";
    return r;
  }

  const double typical =
      shape.base_ms * std::pow(spec.batch, 0.8) * gpu.slowdown * mode_speed(spec.mode) * (nightly ? 0.95 : 1.0);
  std::normal_distribution<double> noise(0.0, 0.02);
  const int n = 30 + static_cast<int>(rng() % 71);
  r.samples_ms.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    double ms = typical * std::exp(noise(rng));
    if (unit(rng) < 0.03) ms *= 1.3;  // a hiccup
    r.samples_ms.push_back(std::round(ms * 1e4) / 1e4);
  }
  r.status = ResultStatus::kOk;
  r.stats = compute_statistics(r.samples_ms, rng(), /*resamples=*/100);
  if (compiled) {  // the worker's check against the float64 reference: mostly within tolerance
    AccuracyInfo a;
    const double verdict = unit(rng);
    a.verdict = verdict < 0.03   ? AccuracyVerdict::kWrong
                : verdict < 0.04 ? AccuracyVerdict::kEagerNondeterministic
                                 : AccuracyVerdict::kPass;
    a.eager_error = 4e-7 * (1 + unit(rng));
    a.tolerance = 3 * a.eager_error + 1e-4;
    a.compiled_error = a.verdict == AccuracyVerdict::kWrong ? 0.01 + 0.05 * unit(rng) : a.eager_error * 2;
    a.output = "output0";
    r.accuracy = a;
  }
  r.stop_reason = n == 100 ? StopReason::kMaxIterations : StopReason::kCiTarget;
  r.first_call_ms = compiled ? 20'000 + 70'000 * unit(rng) : typical * 3 + 200;
  const auto reserved = static_cast<std::int64_t>(need_gb * 1e9);
  r.memory.emplace();
  r.memory->peak_allocated_bytes = reserved * 8 / 10;
  r.memory->peak_reserved_bytes = reserved;
  r.memory->peak_rss_bytes = static_cast<std::int64_t>((3 + 3 * unit(rng)) * 1e9);
  const double temperature = 40 + 30 * unit(rng);
  r.telemetry = {{"before_sm_clock_mhz", 1410},
                 {"before_mem_clock_mhz", 1215},
                 {"before_temperature_c", temperature},
                 {"before_power_w", 90 + 20 * unit(rng)},
                 {"before_throttle_reasons", 0},
                 {"after_sm_clock_mhz", 1410},
                 {"after_mem_clock_mhz", 1215},
                 {"after_temperature_c", temperature + 8},
                 {"after_power_w", 250 + 100 * unit(rng)},
                 {"after_throttle_reasons", 0},
                 {"host_wall_ms", r.stats->mean_ms * n * 1.02},
                 {"host_ms_per_iteration", r.stats->mean_ms * 1.02}};
  return r;
}

MatrixSpec study(const std::string& name, const std::vector<std::string>& models, int gpu_classes, int repetitions) {
  MatrixSpec spec;
  spec.name = name;
  spec.models = models;
  spec.batch_sizes = {1, 4, 16};
  spec.modes = kModes;
  spec.torch_builds = {"stable", "nightly"};
  for (int g = 0; g < gpu_classes; ++g) spec.gpus.push_back(kGpus[static_cast<std::size_t>(g)].name);
  spec.repetitions = repetitions;
  spec.measurement.min_iterations = 30;
  spec.measurement.max_iterations = 100;
  return spec;
}

}  // namespace

Result<FillSummary> fill_database(const FillOptions& o, const Catalog& catalog, const Clock& clock,
                                  const std::function<void(std::int64_t)>& progress) {
  if (o.gpu_classes < 1 || o.gpu_classes > static_cast<int>(kGpus.size())) {
    return Error::invalid("gpu_classes", "must be 1 to 6");
  }
  if (catalog.models().size() < kShapes.size()) return Error::invalid("catalog", "needs the 12 seed models");
  const auto started = std::chrono::steady_clock::now();
  store::StoreOptions so;
  so.path = o.db;
  so.lease_ttl_ms = 3'600'000;  // nothing expires while filling
  BF_ASSIGN_OR_RETURN(auto store, store::Store::open(so, clock));

  // One agent per GPU class, one slot each, both builds, libtorch with the four modes.
  std::vector<std::pair<std::int64_t, std::size_t>> agents;  // (agent id, GPU class index)
  std::vector<std::int64_t> agent_ids;
  for (int g = 0; g < o.gpu_classes; ++g) {
    const GpuClass& gpu = kGpus[static_cast<std::size_t>(g)];
    AgentDescriptor d;
    d.name = std::string("bench-") + gpu.name;
    d.hostname = std::string("gpu-") + gpu.name + "-01";
    d.version = BENCHFLEET_VERSION;
    d.slots = {{"gpu0", gpu.name, std::nullopt, std::nullopt}};
    d.torch_builds = {{"stable", "2.5.1+cu124", {{Runtime::kLibtorch, kModes}}},
                      {"nightly", "2.7.0.dev20250301+cu126", {{Runtime::kLibtorch, kModes}}}};
    BF_ASSIGN_OR_RETURN(const std::int64_t id,
                        store->agents().enroll_agent(d, {"salt", "hash"}, store::EnrolmentClaim::anyone()));
    agents.emplace_back(id, static_cast<std::size_t>(g));
    agent_ids.push_back(id);
  }

  std::vector<std::string> seeds;
  for (std::size_t i = 0; i < kShapes.size(); ++i) seeds.push_back(catalog.models()[i].id);
  // Every slot leases until nothing is left for it, posting each job's verdict at once. Runs
  // are created and drained one at a time, and the runs after the big one are one model each
  // (a sweep per model): a lease's cost grows with the queue (the scheduler scans its GPU
  // class's queued jobs, an OOM the run's), which would make a long fill much longer.
  std::mt19937_64 rng(o.seed);
  std::int64_t posted = 0;
  const auto drain = [&]() -> Status {
    const auto verdict = [&](std::size_t agent, const store::LeaseGrant& grant) {
      const std::size_t model_index =
          static_cast<std::size_t>(std::find(seeds.begin(), seeds.end(), grant.spec.model) - seeds.begin());
      return synthesize(grant.spec, kGpus[agents[agent].second], model_index, rng);
    };
    BF_ASSIGN_OR_RETURN(const std::int64_t stored, drain_queue(*store, agent_ids, verdict));
    if (progress && (posted + stored) / 10000 > posted / 10000) progress(posted + stored);
    posted += stored;
    return Status::Ok();
  };

  FillSummary summary;
  std::int64_t planned = 0;
  while (planned < o.total_results) {
    // The first run is the whole study; later ones one model each, in turn.
    std::vector<std::string> models = seeds;
    std::string name = "seed study (the big run)";
    if (summary.runs > 0) {
      const std::string& model = seeds[static_cast<std::size_t>(summary.runs - 1) % seeds.size()];
      models = {model};
      name = "sweep ";
      name += std::to_string(summary.runs);
      name += ": ";
      name += model;
    }
    const MatrixSpec spec = study(name, models, o.gpu_classes, o.repetitions);
    BF_ASSIGN_OR_RETURN(const auto jobs, expand_matrix(spec, catalog, ExpansionLimits{1'000'000}));
    BF_ASSIGN_OR_RETURN(const auto created, store->runs().create_run(spec, jobs));
    if (summary.runs == 0) {
      summary.big_run_id = created.run_id;
      summary.big_run_jobs = created.job_count;
    }
    planned += created.job_count;
    ++summary.runs;
    BF_RETURN_IF_ERROR(drain());
  }

  for (std::int64_t run = summary.big_run_id; run < summary.big_run_id + summary.runs; ++run) {
    BF_ASSIGN_OR_RETURN(const auto info, store->runs().get_run(run));
    for (const auto& [status, n] : info.results_by_status) {
      summary.results += n;
      if (status == ResultStatus::kOk) summary.ok += n;
      if (status == ResultStatus::kOom) summary.oom += n;
      if (status == ResultStatus::kOomImplied) summary.oom_implied += n;
      if (status == ResultStatus::kError || status == ResultStatus::kTimeout) summary.errors += n;
    }
  }
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return summary;
}

}  // namespace benchfleet::bench
