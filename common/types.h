// Domain types shared by coordinator, agent, worker and CLI (docs/design.md §4, §5).
// Plain values; validation lives in codecs.h, which is the only way JSON becomes these types.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace benchfleet {

// ---- enumerations ---------------------------------------------------------------------------
// Each has a stable wire name (to_string) and a parser (parse_*) returning nullopt on unknown.

enum class JobStatus { kQueued, kLeased, kRunning, kDone, kFailed, kCancelled };
enum class ResultStatus { kOk, kOom, kOomImplied, kError, kTimeout, kCrash, kUnsupported, kInvalid };
enum class Mode { kEager, kTorchscript, kDefault, kReduceOverhead, kMaxAutotune, kMaxAutotuneNoCudagraphs };
enum class Runtime { kLibtorch, kPython };
enum class OomPhase { kLoad, kCompile, kWarmup, kMeasure };
// Why the measurement loop stopped (docs/design.md §11).
enum class StopReason { kFixedCount, kCiTarget, kMaxIterations, kMaxTime };
// The precision a job runs its model in (docs/design.md §4): the weights and floating inputs cast
// to float16/bfloat16, or float32 weights under autocast (`amp`: float16 on CUDA, bfloat16 on CPU).
enum class Dtype { kFloat32, kFloat16, kBfloat16, kAmp };
// A compiled result's accuracy against a float64 reference (docs/design.md §11, common/accuracy.h).
enum class AccuracyVerdict { kPass, kWrong, kEagerNondeterministic, kUnchecked };

std::string_view to_string(JobStatus s);
std::string_view to_string(ResultStatus s);
std::string_view to_string(Mode m);
std::string_view to_string(Runtime r);
std::string_view to_string(OomPhase p);
std::string_view to_string(StopReason r);
std::string_view to_string(Dtype d);
std::string_view to_string(AccuracyVerdict v);

std::optional<JobStatus> parse_job_status(std::string_view s);
std::optional<ResultStatus> parse_result_status(std::string_view s);
std::optional<Mode> parse_mode(std::string_view s);
std::optional<Runtime> parse_runtime(std::string_view s);
std::optional<OomPhase> parse_oom_phase(std::string_view s);
std::optional<StopReason> parse_stop_reason(std::string_view s);
std::optional<Dtype> parse_dtype(std::string_view s);
std::optional<AccuracyVerdict> parse_accuracy_verdict(std::string_view s);

// All values in declaration order (for tables, metrics and documentation).
const std::vector<JobStatus>& all_job_statuses();
const std::vector<ResultStatus>& all_result_statuses();
const std::vector<Mode>& all_modes();
const std::vector<Runtime>& all_runtimes();
const std::vector<Dtype>& all_dtypes();
const std::vector<AccuracyVerdict>& all_accuracy_verdicts();

// True for queued/leased/running: the job may still produce a result.
bool is_active(JobStatus s);
// True for the torch.compile-style modes whose latency is compared against eager.
bool is_compiled(Mode m);

// ---- matrix -----------------------------------------------------------------------------------

// The most batch sizes a shape walk (shape_walk; a job's walk_batches) visits: the lease and the
// worker's job both hold it to this (agent/python/benchfleet_job.py MAX_WALK_BATCHES mirrors it).
inline constexpr std::size_t kMaxWalkBatches = 64;

struct MeasurementSpec {
  int warmup = 10;                    // untimed calls after the first (timed) call
  int min_iterations = 30;            // timed iterations before the CI rule may stop
  int max_iterations = 1000;          // hard cap; == min_iterations means a fixed count (seeds: 300)
  double min_duration_s = 0.5;        // and at least this long
  double max_duration_s = 120.0;      // hard cap on measuring time
  double target_ci_rel_width = 0.02;  // stop when (ci_high - ci_low) / median <= this

  bool operator==(const MeasurementSpec&) const = default;
};

// When the coordinator flags an ok result as noisy (common/noise_flags.h). Flagged results stay
// stored and shown, marked; a report may leave them out of its geomeans.
struct NoiseSpec {
  double max_cv = 0.10;          // flag `high_cv` when the samples' CV is above this
  double max_clock_drop = 0.10;  // flag `clock_drop` when the SM clock fell by more than this fraction

  bool operator==(const NoiseSpec&) const = default;
};

// A benchmark matrix as submitted (POST /api/v1/runs, or YAML through the CLI).
struct MatrixSpec {
  std::string name;
  std::vector<std::string> models;  // catalog ids
  std::vector<int> batch_sizes;
  std::vector<Mode> modes;
  std::vector<std::string> torch_builds;  // names agents advertise: "stable", "nightly", ...
  std::vector<std::string> gpus;          // GPU classes: "a100", "t4", ..., "cpu"
  std::vector<Runtime> runtimes = {Runtime::kLibtorch};
  std::vector<Dtype> dtypes = {Dtype::kFloat32};
  // Python runtime, compiled modes: torch.compile(dynamic=True) with the batch dimension marked
  // dynamic, instead of one static graph per shape.
  bool dynamic = false;
  // Python runtime, compiled modes: before measuring its own batch, each job calls the compiled
  // model once per batch size of the matrix (ascending) and reports recompiles and per-batch
  // latency (telemetry walk_*).
  bool shape_walk = false;
  NoiseSpec noise;
  int repetitions = 1;
  MeasurementSpec measurement;
  std::optional<std::int64_t> memory_limit_mb;  // caps each job's memory (emulates a smaller card)
  int timeout_s = 1800;
  int priority = 0;  // higher runs first

  bool operator==(const MatrixSpec&) const = default;
};

// One cell x repetition of a matrix: what an agent slot runs.
struct JobSpec {
  std::string model;
  int batch = 1;
  Mode mode = Mode::kEager;
  std::string torch_build;
  std::string gpu;
  Runtime runtime = Runtime::kLibtorch;
  int repetition = 0;  // 0-based
  Dtype dtype = Dtype::kFloat32;

  bool operator==(const JobSpec&) const = default;
};

// ---- agents -----------------------------------------------------------------------------------

struct GpuInfo {
  int index = 0;
  std::string uuid;
  std::string name;  // as the driver reports it, e.g. "NVIDIA A100-SXM4-40GB"
  std::int64_t memory_mb = 0;
  std::string compute_capability;  // "8.0"
  std::string driver;

  bool operator==(const GpuInfo&) const = default;
};

// One schedulable unit on an agent: a GPU, or the CPU.
struct SlotDescriptor {
  std::string id;         // unique within the agent: "gpu0", "cpu"
  std::string gpu_class;  // "a100", ..., "cpu"
  std::optional<GpuInfo> gpu;
  std::optional<std::int64_t> memory_limit_mb;

  bool operator==(const SlotDescriptor&) const = default;
};

struct RuntimeSupport {
  Runtime runtime = Runtime::kLibtorch;
  std::vector<Mode> modes;  // the modes this build can run with this runtime

  bool operator==(const RuntimeSupport&) const = default;
};

struct TorchBuildDescriptor {
  std::string name;     // "stable", "nightly", "local"
  std::string version;  // exact, e.g. "2.11.0+cu130"
  std::vector<RuntimeSupport> runtimes;

  bool operator==(const TorchBuildDescriptor&) const = default;
};

// What an agent says about itself when it enrols.
struct AgentDescriptor {
  std::string name;  // stable identity across restarts (default: host name)
  std::string hostname;
  std::string version;
  std::vector<SlotDescriptor> slots;
  std::vector<TorchBuildDescriptor> torch_builds;

  bool operator==(const AgentDescriptor&) const = default;
};

// ---- results ----------------------------------------------------------------------------------

struct Statistics {
  double mean_ms = 0, median_ms = 0, p90_ms = 0, p99_ms = 0, min_ms = 0, max_ms = 0;
  double stddev_ms = 0;
  double cv = 0;                         // stddev / mean
  double ci_low_ms = 0, ci_high_ms = 0;  // 95% bootstrap CI of the median
  int iterations = 0;

  bool operator==(const Statistics&) const = default;
};

struct OomInfo {
  OomPhase phase = OomPhase::kMeasure;
  std::optional<std::int64_t> bytes_requested;

  bool operator==(const OomInfo&) const = default;
};

inline constexpr std::string_view kMemoryCapKinds[] = {"cgroup-v1", "cgroup-v2", "address-space", "cuda-allocator"};

struct MemoryInfo {
  std::optional<std::int64_t> peak_allocated_bytes;
  std::optional<std::int64_t> peak_reserved_bytes;
  std::optional<std::int64_t> peak_rss_bytes;
  // The memory cap the job ran under (kMemoryCapKinds): "cgroup-v1" / "cgroup-v2", RAM the job's
  // processes added after its start-up, held by the agent's memory cgroup; "address-space", the
  // growth of the measuring process's address space (RLIMIT_AS); "cuda-allocator", the caching
  // allocator's share of the card. cap_bytes: what the cap allows; peak_growth_bytes (cgroups
  // only): the most the job held beyond its start-up, the figure the cap bounds.
  std::optional<std::string> cap;
  std::optional<std::int64_t> cap_bytes;
  std::optional<std::int64_t> peak_growth_bytes;

  bool operator==(const MemoryInfo&) const = default;
};

// How far a compiled model's outputs are from a float64 reference of the same model, weights and
// inputs, next to eager's own distance (common/accuracy.h has the rule). Errors are relative L2
// norms, ||out - ref|| / ||ref||, of the output that came closest to failing.
struct AccuracyInfo {
  AccuracyVerdict verdict = AccuracyVerdict::kUnchecked;
  double compiled_error = 0;     // the compiled output's error
  double eager_error = 0;        // eager's error on the same output, same dtype
  double tolerance = 0;          // the bound compiled_error was held to
  std::optional<double> cosine;  // cosine similarity to the reference (reduced precision)
  std::string output;            // the output's name ("output0", ...)
  std::string detail;            // why unchecked, which output failed, ...

  bool operator==(const AccuracyInfo&) const = default;
};

// The verdict of one attempt, as the worker prints it and the agent posts it.
struct JobResult {
  ResultStatus status = ResultStatus::kOk;
  std::optional<Statistics> stats;      // required when status is ok
  std::vector<double> samples_ms;       // every timed iteration
  std::optional<double> first_call_ms;  // cold start / compile, timed separately
  std::optional<StopReason> stop_reason;
  std::optional<double> export_s;    // artifact export/compile time, when it was done
  std::optional<double> load_s;      // loading the artifact in the worker
  std::optional<OomInfo> oom;        // required when status is oom
  std::optional<std::string> error;  // message for error/crash/timeout/unsupported/invalid
  std::optional<int> signal;         // for crash
  std::optional<MemoryInfo> memory;
  std::optional<AccuracyInfo> accuracy;                   // compiled modes, when checked (status ok)
  nlohmann::json environment = nlohmann::json::object();  // fingerprint: flat string/number map
  nlohmann::json telemetry = nlohmann::json::object();    // clocks, temperature, power...

  bool operator==(const JobResult&) const = default;
};

}  // namespace benchfleet
