// Loading an artifact and running one forward pass, per mode (see capabilities.h for which
// modes a build can run).
#pragma once

#include <ATen/Tensor.h>

#include <memory>
#include <vector>

#include "common/worker_job.h"

namespace benchfleet::worker {

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  // One forward pass on the runner's static inputs. The output is dropped at once, so nothing
  // is held across iterations (CUDA graph replays reuse their output buffers).
  virtual void step() = 0;
};

// Loads the job's artifact onto its device.
// REQUIRES: check_job(job) and unsupported_reason(job, this_build()) found nothing.
// Throws what LibTorch throws (c10::Error, std::bad_alloc) on a corrupt artifact or OOM.
std::unique_ptr<ModelRunner> load_runner(const WorkerJob& job, std::vector<at::Tensor> inputs);

// Wraps `inner` (already warmed up) into a captured CUDA graph replayed by step().
std::unique_ptr<ModelRunner> capture_cuda_graph(std::unique_ptr<ModelRunner> inner);

// Random inputs of the given specs on `device`, reproducible for a seed (never zeros).
std::vector<at::Tensor> make_inputs(const std::vector<TensorSpec>& specs, std::int64_t seed, const std::string& device);

}  // namespace benchfleet::worker
