#include "agent/worker/capabilities.h"

#include "agent/worker/cuda.h"

namespace benchfleet::worker {

std::optional<Error> check_job(const WorkerJob& job) {
  if (job.runtime != Runtime::kLibtorch) {
    std::string message = "is ";
    message += to_string(job.runtime);
    message += ": benchfleet-worker runs libtorch jobs only; python jobs run in agent/python/benchfleet_runner.py";
    return Error::invalid("runtime", std::move(message));
  }
  if (job.format != format_for(job.mode)) {
    std::string message = "mode ";
    message += to_string(job.mode);
    message += " runs from a ";
    message += format_for(job.mode);
    message += " artifact, not ";
    message += job.format;
    return Error::invalid("format", std::move(message));
  }
  // The artifact was exported in one dtype: a job for another would measure the wrong model.
  if (const auto it = job.artifact_metadata.find("dtype");
      it != job.artifact_metadata.end() && it->is_string() && it->get<std::string>() != to_string(job.dtype)) {
    return Error::invalid("dtype", "is " + std::string(to_string(job.dtype)) + ", but the artifact was exported in " +
                                       it->get<std::string>());
  }
  return std::nullopt;
}

std::optional<std::string> unsupported_reason(const WorkerJob& job, const Capabilities& caps) {
  if (job.dtype == Dtype::kAmp) {
    return std::string(
        "amp (autocast over float32 weights) runs in the python runtime only: a LibTorch artifact is "
        "exported in one fixed dtype (float32, float16 or bfloat16)");
  }
  if (job.device == "cuda" && !caps.cuda_compiled) {
    return "this worker is built against a LibTorch without CUDA (" + caps.torch_version + ")";
  }
  if (job.device == "cuda" && !caps.cuda_available) return std::string("no CUDA device is visible to the worker");
  // Without CUDA graphs these modes would be others under their names: reduce-overhead is default
  // plus graphs (so CUDA only in any build), max-autotune is max-autotune-no-cudagraphs plus graphs
  // (on a build without AOTInductor the missing loader is the first reason).
  const auto graphs_need_cuda = [&](const char* instead) {
    return std::string(to_string(job.mode)) + " replays CUDA graphs and needs a CUDA device; this job runs on " +
           job.device + ", where it would run " + instead + " under another name";
  };
  if (job.mode == Mode::kReduceOverhead && job.device != "cuda") return graphs_need_cuda("default");
  if (job.format == "aotinductor" && !caps.aoti) {
    return std::string(to_string(job.mode)) +
           " runs an AOTInductor package, which needs LibTorch >= 2.6; this worker " + "is built against LibTorch " +
           caps.torch_version;
  }
  if (job.mode == Mode::kMaxAutotune && job.device != "cuda") return graphs_need_cuda("max-autotune-no-cudagraphs");
  if (job.format == "aotinductor" && uses_cuda_graph(job) && !caps.aoti_cuda_graphs) {
    return std::string(to_string(job.mode)) +
           " captures the AOTInductor package's calls into a CUDA graph, which needs " +
           "the single-threaded package runner of LibTorch >= 2.7; this worker is built against LibTorch " +
           caps.torch_version;
  }
  return std::nullopt;
}

bool uses_cuda_graph(const WorkerJob& job) {
  return job.device == "cuda" && (job.mode == Mode::kReduceOverhead || job.mode == Mode::kMaxAutotune);
}

std::vector<Mode> runnable_modes(const Capabilities& caps, const std::string& device) {
  std::vector<Mode> out;
  for (Mode m : all_modes()) {
    WorkerJob probe;
    probe.mode = m;
    probe.format = std::string(format_for(m));
    probe.device = device;
    if (!unsupported_reason(probe, caps)) out.push_back(m);
  }
  return out;
}

}  // namespace benchfleet::worker
