// Loading an artifact and running one forward pass, per mode (see capabilities.h for which
// modes a build can run).
#pragma once

#include <ATen/Tensor.h>

#include <memory>
#include <vector>

#include "agent/worker/output_check.h"
#include "common/worker_job.h"

namespace benchfleet::worker {

class ModelRunner {
 public:
  virtual ~ModelRunner() = default;
  // One forward pass on the runner's static inputs, returning its output tensors flattened in
  // order (a tuple's or list's elements, a dict's values). A replayed CUDA graph returns none:
  // its outputs live in the graph's own buffers.
  virtual std::vector<at::Tensor> forward() = 0;
  // One forward pass on `inputs` instead of the static ones (same count, shapes, dtypes and
  // device), returning its outputs as forward() does: the accuracy check's call on the
  // exporter's reference inputs. A CUDA graph runner runs its model without the graph.
  virtual std::vector<at::Tensor> run(std::vector<at::Tensor> inputs) = 0;
  // One forward pass whose output is dropped at once, so nothing is held across iterations
  // (CUDA graph replays reuse their output buffers).
  virtual void step() { (void)forward(); }
};

// Loads the job's artifact onto its device: a TorchScript module, or an AOTInductor package
// (extracted and its shared library loaded by AOTIModelPackageLoader).
// REQUIRES: check_job(job) and unsupported_reason(job, this_build()) found nothing.
// Throws what LibTorch throws (c10::Error, std::bad_alloc, std::runtime_error from the AOTI
// runtime) on a corrupt artifact or OOM.
std::unique_ptr<ModelRunner> load_runner(const WorkerJob& job, std::vector<at::Tensor> inputs);

// Wraps `inner` (already warmed up) into a captured CUDA graph replayed by step().
std::unique_ptr<ModelRunner> capture_cuda_graph(std::unique_ptr<ModelRunner> inner);

// Random inputs of the given specs on `device`, reproducible for a seed (never zeros).
std::vector<at::Tensor> make_inputs(const std::vector<TensorSpec>& specs, std::int64_t seed, const std::string& device);

// Shapes and dtypes ("float32", as the exporter names them) of `outputs`, for output_mismatch.
std::vector<OutputDescription> describe_outputs(const std::vector<at::Tensor>& outputs);

}  // namespace benchfleet::worker
