#include "agent/worker/measure.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <chrono>
#include <exception>
#include <iostream>
#include <new>
#include <optional>

#include "agent/worker/accuracy_check.h"
#include "agent/worker/cuda.h"
#include "agent/worker/fingerprint.h"
#include "agent/worker/memory.h"
#include "agent/worker/native_oom.h"
#include "agent/worker/oom.h"
#include "agent/worker/output_check.h"
#include "agent/worker/runner.h"
#include "agent/worker/stream_tail.h"
#include "common/codecs.h"
#include "common/measurement.h"
#include "common/stats.h"
#include "common/unsupported_dtype.h"

namespace benchfleet::worker {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) { return std::chrono::duration<double>(Clock::now() - start).count(); }

// On CUDA a harvest synchronizes with the device: once per this many timed iterations, or once
// per interval when iterations are slower (HarvestSchedule). The event timer is made with the
// events of one batch. On CPU every iteration is harvested (nothing to wait for).
constexpr std::size_t kCudaHarvestBatch = 16;
// The least warm-up on CUDA, in seconds, whatever measurement.warmup says. A GPU idles at its
// lowest clock while a job loads (an H200 at 345 of 1980 MHz) and its clock rises only under load:
// on an H200, ten warm-up calls of ResNet-18 (about 20 ms) left the first timed calls 1.5 to 2
// times slower than the rest.
constexpr double kCudaMinWarmupS = 0.5;
constexpr std::chrono::milliseconds kHarvestInterval{250};

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

// The part of run_job that may throw; `phase` tells the caller where it failed, and `r` keeps
// the timings of the phases done before (load_s, first_call_ms).
void measure(const WorkerJob& job, std::atomic<OomPhase>& phase, const ProgressFn& progress, JobResult& r) {
  const bool on_cuda = job.device == "cuda";
  phase = OomPhase::kLoad;
  note_phase(phase);
  if (job.memory_limit_mb) {
    if (auto s = apply_memory_limit(job.device, *job.memory_limit_mb); !s) {
      r = failure(ResultStatus::kError, "memory limit: " + s.error().message);
      return;
    }
  }
  auto inputs = make_inputs(job.inputs, job.seed, job.device);  // not part of loading the artifact
  if (on_cuda) cuda::synchronize();
  const auto load_start = Clock::now();
  auto runner = load_runner(job, std::move(inputs));
  if (on_cuda) cuda::synchronize();
  r.load_s = seconds_since(load_start);
  progress("load", 0, *r.load_s);

  // The first call: the profiling executor, lazy init, autotuning. Eager compiles nothing: its
  // first call is its first warm-up call.
  phase = job.mode == Mode::kEager ? OomPhase::kWarmup : OomPhase::kCompile;
  note_phase(phase);
  const auto first = Clock::now();
  std::vector<at::Tensor> outputs = runner->forward();
  if (on_cuda) cuda::synchronize();
  r.first_call_ms = seconds_since(first) * 1000;
  const auto mismatch =
      output_mismatch(describe_outputs(outputs), job.artifact_metadata.value("outputs", nlohmann::json()));
  outputs.clear();
  if (mismatch) {
    r.status = ResultStatus::kError;
    r.error = "the artifact does not compute what the exporter exported: " + *mismatch;
    return;
  }

  phase = OomPhase::kWarmup;
  note_phase(phase);
  const auto warm = Clock::now();
  for (int i = 0; i < job.measurement.warmup; ++i) runner->step();
  if (uses_cuda_graph(job)) runner = capture_cuda_graph(std::move(runner));
  if (on_cuda) cuda::synchronize();
  // And on until the GPU has been busy long enough to leave its idle clock (as the runner does).
  while (on_cuda && seconds_since(warm) < kCudaMinWarmupS) {
    for (int i = 0; i < 8; ++i) runner->step();
    cuda::synchronize();
  }
  progress("warmup", 0, seconds_since(warm));
  // Read once warm, as the timed loop starts: a GPU idles at its lowest clock while the artifact
  // loads (an H200 at 345 of 1980 MHz), so a reading from then would make every run look as if
  // its clock rose and hide a drop while measuring (the clock_drop flag).
  if (on_cuda) add_telemetry(r, "before_", cuda::telemetry());

  phase = OomPhase::kMeasure;
  note_phase(phase);
  auto timer = on_cuda ? cuda::make_event_timer(kCudaHarvestBatch) : make_cpu_timer();
  StoppingRule rule(job.measurement);
  const auto max_iterations = static_cast<std::size_t>(job.measurement.max_iterations);
  std::vector<double> samples;
  std::size_t timed = 0;
  auto last_report = Clock::now();
  const auto start = Clock::now();
  HarvestSchedule schedule(on_cuda ? kCudaHarvestBatch : 1, kHarvestInterval);
  while (true) {
    timer->time([&] { runner->step(); });
    ++timed;
    // The stopping rule sees only harvested samples; at max_iterations a harvest is due anyway,
    // so a fixed count stops at that count, not at the next batch.
    if (schedule.iteration_timed() || timed == max_iterations) timer->harvest(samples);
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

  // After the peak was read, so the check's own memory is not the measurement's, and without the
  // cap (past a cgroup's, the kernel would end the worker and the measurement with it). Its
  // failure leaves the measured result ok, with the verdict unchecked.
  if (is_compiled(job.mode)) {
    lift_memory_limit();
    const auto check_start = Clock::now();
    r.accuracy = check_accuracy(job, *runner);
    r.telemetry["accuracy_check_ms"] = seconds_since(check_start) * 1000;
    progress("accuracy", timed, seconds_since(check_start));
  }
}

// `allocator_counted_oom`: the CUDA caching allocator's out-of-memory counter grew during the job.
JobResult classify(std::string_view what, OomPhase phase, const WorkerJob& job, bool allocator_counted_oom) {
  if (const auto line = unsupported_dtype_line(to_string(job.dtype), what)) {
    return failure(ResultStatus::kUnsupported, std::string(to_string(job.dtype)) + " on " + job.device +
                                                   " is not supported by this LibTorch: " + *line);
  }
  const bool under_cpu_cap = job.memory_limit_mb && job.device == "cpu";
  if (!is_oom_failure(what, allocator_counted_oom, under_cpu_cap)) {
    return failure(ResultStatus::kError, std::string(what.substr(0, 4000)));
  }
  JobResult r;
  r.status = ResultStatus::kOom;
  r.oom = OomInfo{phase, oom_bytes_requested(what)};
  r.error = std::string(oom_line(what));
  if (allocator_counted_oom && !is_oom_message(what)) {  // say why a generic failure is an oom
    r.error = "out of memory (counted by the CUDA caching allocator): " + std::string(what.substr(0, 4000));
  }
  r.memory = peak_memory(job.device);
  return r;
}

// The first line of a LibTorch message (the rest is a C++ backtrace).
std::string first_lines(const std::string& message) {
  const auto cut = message.find("\nException raised from");
  return cut == std::string::npos ? message : message.substr(0, cut);
}

// The lines of what was written to std::cerr that say why the AOTInductor runtime failed (it
// prints the exception it turned into an error code, then throws only "... API call failed").
std::string aoti_cause(const std::string& cerr_tail) {
  std::string out;
  std::size_t start = 0;
  while (start < cerr_tail.size()) {
    std::size_t end = cerr_tail.find('\n', start);
    if (end == std::string::npos) end = cerr_tail.size();
    std::string_view line(cerr_tail.data() + start, end - start);
    if (line.find("Exception in aoti_torch:") != std::string_view::npos || line.rfind("Error: ", 0) == 0 ||
        is_oom_message(line)) {
      // c10's log prefix: "[E1124 16:40:37.027367701 shim_common.cpp:396] "
      if (const auto prefix_end = line.find("] "); line.rfind("[E", 0) == 0 && prefix_end != std::string_view::npos) {
        line.remove_prefix(prefix_end + 2);
      }
      out.append(line).append("\n");
    }
    start = end + 1;
  }
  return out;
}

// The verdict for what measure() threw in `phase`. `cerr_tail`: what LibTorch wrote to std::cerr;
// `allocator_counted_oom`: the CUDA caching allocator counted an out-of-memory during the job.
JobResult classify_exception(const std::exception_ptr& thrown, OomPhase phase, const WorkerJob& job,
                             const std::string& cerr_tail, bool allocator_counted_oom) {
  std::string what;
  try {
    std::rethrow_exception(thrown);
  } catch (const std::bad_alloc&) {
    what = "std::bad_alloc";
  } catch (const c10::Error& e) {
    what = first_lines(e.what());
  } catch (const std::exception& e) {
    what = first_lines(e.what());
  } catch (...) {
    what = "an unknown exception";
  }
  if (what.find("API call failed") != std::string::npos) {
    if (const std::string cause = aoti_cause(cerr_tail); !cause.empty()) what = cause + what;
  }
  return classify(what, phase, job, allocator_counted_oom);
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

}  // namespace

JobResult run_job(const WorkerJob& job, const Capabilities& caps, const ProgressFn& progress,
                  const ResultOutput* native_oom_output) {
  // The slot's thread count, before anything runs in parallel and before the fingerprint
  // records it (cpu_threads): every build and runtime on a slot runs with the same.
  if (job.threads > 0) at::set_num_threads(job.threads);
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
    // Made before the cap: the tail's storage must not be what runs out.
    const StreamTail cerr_tail(std::cerr, std::size_t{64} * 1024);
    // Only a CUDA job reads the counter (reading it initialises CUDA).
    const bool on_cuda = job.device == "cuda";
    const std::int64_t ooms_before = on_cuda ? cuda::oom_count() : 0;
    std::exception_ptr thrown;
    try {
      measure(job, phase, progress, r);
    } catch (...) {
      thrown = std::current_exception();  // judged below, once the cap is lifted
    }
    native_guard.reset();
    lift_memory_limit();
    if (thrown) {
      const bool allocator_counted_oom = on_cuda && cuda::oom_count() > ooms_before;
      JobResult failed = classify_exception(thrown, phase, job, cerr_tail.text(), allocator_counted_oom);
      failed.load_s = r.load_s;  // the phases done before the failure keep their timings
      failed.first_call_ms = r.first_call_ms;
      r = std::move(failed);
    }
  }
  r.environment = std::move(environment);
  r.export_s = export_seconds(job);
  return r;
}

}  // namespace benchfleet::worker
