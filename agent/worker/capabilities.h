// What this worker build can run, and the pure rules deciding a job's fate before any model
// is loaded: an invalid job is an `error`, a job this build/device cannot run `unsupported`.
#pragma once

#include <optional>
#include <string>

#include "common/result.h"
#include "common/worker_job.h"

namespace benchfleet::worker {

struct Capabilities {
  std::string torch_version;  // of the LibTorch this worker is built against
  bool aoti = false;          // AOTInductor package loader compiled in (LibTorch >= 2.6)
  // The loader can run a package single-threaded (LibTorch >= 2.7), which capturing its calls
  // into a CUDA graph needs: 2.6's pooled runner synchronizes on CUDA events, which a capture forbids.
  bool aoti_cuda_graphs = false;
  bool cuda_compiled = false;
  bool cuda_available = false;  // a device is visible now
};

// The build this binary is, probed at run time for CUDA devices.
Capabilities this_build();

// Contradictions inside the job (e.g. an eager job with an AOTInductor artifact, or a float16
// job with an artifact whose metadata says it was exported in float32), and jobs of another
// runtime (python jobs are benchfleet_runner.py's).
std::optional<Error> check_job(const WorkerJob& job);

// Why this build cannot run the job on its device, or nullopt when it can. dtype amp (autocast)
// is the python runtime's alone. The modes that replay
// CUDA graphs (reduce-overhead, max-autotune) need a CUDA device: on the CPU they would be
// default and max-autotune-no-cudagraphs relabelled.
std::optional<std::string> unsupported_reason(const WorkerJob& job, const Capabilities& caps);

// Modes that replay a CUDA graph: reduce-overhead, and max-autotune on CUDA.
bool uses_cuda_graph(const WorkerJob& job);

// The modes this build can run on `device` (what an agent advertises for this worker).
std::vector<Mode> runnable_modes(const Capabilities& caps, const std::string& device);

}  // namespace benchfleet::worker
