#include "agent/worker/measure.h"

#include <c10/util/Exception.h>

#include <atomic>
#include <chrono>
#include <new>
#include <optional>

#include "agent/worker/cuda.h"
#include "agent/worker/fingerprint.h"
#include "agent/worker/memory.h"
#include "agent/worker/native_oom.h"
#include "agent/worker/oom.h"
#include "agent/worker/runner.h"
#include "common/codecs.h"
#include "common/measurement.h"
#include "common/stats.h"

namespace benchfleet::worker {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

JobResult failure(ResultStatus status, std::string message) {
  JobResult r;
  r.status = status;
  r.error = std::move(message);
  return r;
}

// Adds `before_`/`after_` telemetry under one flat map (the result keeps it flat).
void add_telemetry(JobResult& r, std::string_view prefix, const nlohmann::json& t) {
  for (const auto& [k, v] : t.items()) r.telemetry[std::string(prefix) + k] = v;
}

// The part of run_job that may throw; `phase` tells the caller where it failed.
JobResult measure(const WorkerJob& job, std::atomic<OomPhase>& phase, const ProgressFn& progress) {
  const bool on_cuda = job.device == "cuda";
  JobResult r;
  phase = OomPhase::kLoad;
  if (on_cuda) add_telemetry(r, "before_", cuda::telemetry());
  if (job.memory_limit_mb) {
    if (auto s = apply_memory_limit(job.device, *job.memory_limit_mb); !s) {
      return failure(ResultStatus::kError, "memory limit: " + s.error().message);
    }
  }
  const auto load_start = Clock::now();
  auto runner = load_runner(job, make_inputs(job.inputs, job.seed, job.device));
  if (on_cuda) cuda::synchronize();
  r.load_s = seconds_since(load_start);
  progress("load", 0, *r.load_s);

  phase = OomPhase::kCompile;  // the first call: profiling executor, lazy init, autotuning
  const auto first = Clock::now();
  runner->step();
  if (on_cuda) cuda::synchronize();
  r.first_call_ms = seconds_since(first) * 1000;

  phase = OomPhase::kWarmup;
  const auto warm = Clock::now();
  for (int i = 0; i < job.measurement.warmup; ++i) runner->step();
  if (uses_cuda_graph(job)) runner = capture_cuda_graph(std::move(runner));
  if (on_cuda) cuda::synchronize();
  progress("warmup", 0, seconds_since(warm));

  phase = OomPhase::kMeasure;
  auto timer = on_cuda ? cuda::make_event_timer() : make_cpu_timer();
  StoppingRule rule(job.measurement);
  std::vector<double> samples;
  std::size_t timed = 0;
  auto last_report = Clock::now();
  const auto start = Clock::now();
  while (true) {
    timer->time([&] { runner->step(); });
    ++timed;
    // On CUDA harvesting synchronizes; do it in batches, not per iteration.
    if (!on_cuda || timed % 16 == 0 || seconds_since(last_report) > 0.25) timer->harvest(samples);
    if (samples.size() == timed) {
      if (auto reason = rule.check(samples, seconds_since(start))) {
        r.stop_reason = reason;
        break;
      }
    }
    if (seconds_since(last_report) >= 1.0) {
      progress("measure", timed, seconds_since(start));
      last_report = Clock::now();
    }
  }
  const double host_ms = seconds_since(start) * 1000;
  r.telemetry["host_wall_ms"] = host_ms;
  r.telemetry["host_ms_per_iteration"] = host_ms / static_cast<double>(samples.size());
  r.samples_ms = std::move(samples);
  r.stats = compute_statistics(r.samples_ms);
  r.memory = peak_memory(job.device);
  if (on_cuda) add_telemetry(r, "after_", cuda::telemetry());
  r.status = ResultStatus::kOk;
  return r;
}

JobResult classify(std::string_view what, OomPhase phase, const WorkerJob& job) {
  if (!is_oom_message(what)) return failure(ResultStatus::kError, std::string(what.substr(0, 4000)));
  JobResult r;
  r.status = ResultStatus::kOom;
  r.oom = OomInfo{phase, oom_bytes_requested(what)};
  r.error = std::string(oom_line(what));
  r.memory = peak_memory(job.device);
  return r;
}

// The artifact's export time, from the exporter's metadata, when it says.
std::optional<double> export_seconds(const WorkerJob& job) {
  const auto it = job.artifact_metadata.find("export_s");
  if (it == job.artifact_metadata.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

// What NativeOomGuard reports when native code ends the process under the CPU cap. Rendered
// before the cap is applied: with a cap of a few MB, even these strings might not fit under it.
NativeFailureVerdicts native_failure_verdicts(const nlohmann::json& environment, const WorkerJob& job) {
  JobResult r = failure(ResultStatus::kOom,
                        "out of memory: native code could not allocate under the memory cap and ended the process "
                        "instead of reporting it (a SIGSEGV in oneDNN's JIT, or libgomp unable to start a thread)");
  r.environment = environment;
  r.export_s = export_seconds(job);
  NativeFailureVerdicts verdicts;
  for (OomPhase phase : {OomPhase::kLoad, OomPhase::kCompile, OomPhase::kWarmup, OomPhase::kMeasure}) {
    r.oom = OomInfo{phase, std::nullopt};
    verdicts.oom.at(static_cast<std::size_t>(phase)) = nlohmann::json(r).dump();
  }
  r.status = ResultStatus::kError;
  r.oom.reset();
  r.error = "native code exited the worker in the middle of the job (its message is on stderr)";
  verdicts.exited = nlohmann::json(r).dump();
  return verdicts;
}

// The first line of a LibTorch message (the rest is a C++ backtrace).
std::string first_lines(const std::string& message) {
  const auto cut = message.find("\nException raised from");
  return cut == std::string::npos ? message : message.substr(0, cut);
}

}  // namespace

JobResult run_job(const WorkerJob& job, const Capabilities& caps, const ProgressFn& progress,
                  const ResultOutput* native_oom_output) {
  // Taken before any memory cap: hashing the artifact needs memory the job may not leave.
  nlohmann::json environment = fingerprint(job, caps);
  JobResult r;
  if (auto err = check_job(job)) {
    r = failure(ResultStatus::kError, "job: " + err->describe());
  } else if (auto reason = unsupported_reason(job, caps)) {
    r = failure(ResultStatus::kUnsupported, *reason);
  } else {
    std::atomic<OomPhase> phase = OomPhase::kLoad;
    NativeFailureVerdicts native_verdicts;
    std::optional<NativeOomGuard> native_guard;
    if (native_oom_output != nullptr && job.memory_limit_mb && job.device == "cpu") {
      native_verdicts = native_failure_verdicts(environment, job);
      native_guard.emplace(phase, native_verdicts, *native_oom_output);
    }
    try {
      r = measure(job, phase, progress);
    } catch (const std::bad_alloc&) {
      r = classify("std::bad_alloc", phase, job);
    } catch (const c10::Error& e) {
      r = classify(first_lines(e.what()), phase, job);
    } catch (const std::exception& e) {
      r = classify(first_lines(e.what()), phase, job);
    }
    native_guard.reset();
    lift_memory_limit();
  }
  r.environment = std::move(environment);
  r.export_s = export_seconds(job);
  return r;
}

}  // namespace benchfleet::worker
