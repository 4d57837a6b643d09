#include "agent/worker/runner.h"

#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>
#include <torch/torch.h>
#include <torch/version.h>

#if BENCHFLEET_HAVE_AOTI
#include <torch/csrc/inductor/aoti_package/model_package_loader.h>
#endif

#include <stdexcept>

#include "agent/worker/capabilities.h"
#include "agent/worker/cuda.h"

namespace benchfleet::worker {
namespace {

// The tensors of a TorchScript result, in order.
void flatten(const c10::IValue& value, std::vector<at::Tensor>& out) {
  if (value.isTensor()) {
    out.push_back(value.toTensor());
  } else if (value.isTuple()) {
    for (const auto& element : value.toTupleRef().elements()) flatten(element, out);
  } else if (value.isList()) {
    for (const auto& element : value.toListRef()) flatten(element, out);
  } else if (value.isGenericDict()) {
    for (const auto& entry : value.toGenericDict()) flatten(entry.value(), out);
  }
}

class TorchScriptRunner final : public ModelRunner {
 public:
  TorchScriptRunner(const WorkerJob& job, std::vector<at::Tensor> inputs)
      : module_(torch::jit::load(job.artifact, torch::Device(job.device))) {
    // eager: the traced graph runs op by op, without the executor's fusion and optimisation.
    torch::jit::setGraphExecutorOptimize(job.mode != Mode::kEager);
    module_.eval();
    // torchscript: the artifact is frozen; the inference optimisations (e.g. MKLDNN on CPU)
    // are machine-specific, so they are applied here rather than saved by the exporter.
    if (job.mode == Mode::kTorchscript) module_ = torch::jit::optimize_for_inference(module_);
    for (auto& t : inputs) inputs_.emplace_back(std::move(t));
  }
  std::vector<at::Tensor> forward() override {
    torch::NoGradGuard no_grad;
    std::vector<at::Tensor> outputs;
    flatten(module_.forward(inputs_), outputs);
    return outputs;
  }
  std::vector<at::Tensor> run(std::vector<at::Tensor> inputs) override {
    torch::NoGradGuard no_grad;
    std::vector<torch::jit::IValue> values;
    for (auto& t : inputs) values.emplace_back(std::move(t));
    std::vector<at::Tensor> outputs;
    flatten(module_.forward(values), outputs);
    return outputs;
  }
  void step() override {
    torch::NoGradGuard no_grad;
    (void)module_.forward(inputs_);
  }

 private:
  torch::jit::Module module_;
  std::vector<torch::jit::IValue> inputs_;
};

#if BENCHFLEET_HAVE_AOTI
// BENCHFLEET_AOTI_SINGLE_THREADED (probed at configure time, cmake/TorchApi.cmake): the loader
// takes run_single_threaded (LibTorch 2.7+), the runner a CUDA graph capture needs (the pooled
// runner synchronizes on CUDA events, which a capture forbids); 2.6 has only the pooled one.
class AotiRunner final : public ModelRunner {
 public:
  AotiRunner(const WorkerJob& job, std::vector<at::Tensor> inputs)
#if BENCHFLEET_AOTI_SINGLE_THREADED
      : loader_(job.artifact, "model", /*run_single_threaded=*/uses_cuda_graph(job)),
#else
      : loader_(job.artifact, "model"),
#endif
        inputs_(std::move(inputs)) {
  }
  // The package's outputs come back flattened already (its call spec unflattens them in python).
  std::vector<at::Tensor> forward() override {
    torch::NoGradGuard no_grad;
    return loader_.run(inputs_);
  }
  std::vector<at::Tensor> run(std::vector<at::Tensor> inputs) override {
    torch::NoGradGuard no_grad;
    return loader_.run(inputs);
  }

 private:
  torch::inductor::AOTIModelPackageLoader loader_;
  std::vector<at::Tensor> inputs_;
};
#endif

class GraphRunner final : public ModelRunner {
 public:
  GraphRunner(std::unique_ptr<ModelRunner> inner, std::unique_ptr<cuda::Graph> graph)
      : inner_(std::move(inner)), graph_(std::move(graph)) {}
  std::vector<at::Tensor> forward() override {
    graph_->replay();
    return {};
  }
  std::vector<at::Tensor> run(std::vector<at::Tensor> inputs) override { return inner_->run(std::move(inputs)); }

 private:
  std::unique_ptr<ModelRunner> inner_;  // owns the module and the static inputs the graph reads
  std::unique_ptr<cuda::Graph> graph_;
};

// The exporter's dtype names (str(torch.dtype) without "torch.").
std::string dtype_name(at::ScalarType type) {
  switch (type) {
    case at::kFloat:
      return "float32";
    case at::kDouble:
      return "float64";
    case at::kHalf:
      return "float16";
    case at::kBFloat16:
      return "bfloat16";
    case at::kLong:
      return "int64";
    case at::kInt:
      return "int32";
    case at::kShort:
      return "int16";
    case at::kChar:
      return "int8";
    case at::kByte:
      return "uint8";
    case at::kBool:
      return "bool";
    default:
      return c10::toString(type);
  }
}

at::ScalarType scalar_type(const std::string& dtype) {
  if (dtype == "float16") return at::kHalf;
  if (dtype == "bfloat16") return at::kBFloat16;
  if (dtype == "int64") return at::kLong;
  if (dtype == "int32") return at::kInt;
  if (dtype == "bool") return at::kBool;
  return at::kFloat;
}

}  // namespace

std::unique_ptr<ModelRunner> load_runner(const WorkerJob& job, std::vector<at::Tensor> inputs) {
  if (job.format == "aotinductor") {
#if BENCHFLEET_HAVE_AOTI
    return std::make_unique<AotiRunner>(job, std::move(inputs));
#else
    throw std::logic_error("AOTInductor is not compiled into this worker");
#endif
  }
  return std::make_unique<TorchScriptRunner>(job, std::move(inputs));
}

std::unique_ptr<ModelRunner> capture_cuda_graph(std::unique_ptr<ModelRunner> inner) {
  ModelRunner* raw = inner.get();
  auto graph = cuda::capture([raw] { raw->step(); });
  if (!graph.ok()) throw std::runtime_error("CUDA graph capture failed: " + graph.error().message);
  return std::make_unique<GraphRunner>(std::move(inner), std::move(*graph));
}

std::vector<at::Tensor> make_inputs(const std::vector<TensorSpec>& specs, std::int64_t seed,
                                    const std::string& device) {
  torch::manual_seed(static_cast<std::uint64_t>(seed));
  const auto options_device = torch::Device(device);
  std::vector<at::Tensor> out;
  for (const auto& spec : specs) {
    const auto type = scalar_type(spec.dtype);
    const auto opts = torch::TensorOptions().dtype(type).device(options_device);
    at::Tensor t;
    if (at::isFloatingType(type)) {
      t = torch::randn(spec.shape, opts);
    } else if (spec.range) {
      t = torch::randint((*spec.range)[0], (*spec.range)[1], spec.shape, opts);
    } else {
      t = torch::ones(spec.shape, opts);  // masks: everything valid
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<OutputDescription> describe_outputs(const std::vector<at::Tensor>& outputs) {
  std::vector<OutputDescription> out;
  for (const auto& t : outputs) out.push_back({t.sizes().vec(), dtype_name(t.scalar_type())});
  return out;
}

}  // namespace benchfleet::worker
