#include "agent/worker/accuracy_check.h"

// ivalue.h before Functions.h: clang (clang-tidy) cannot parse LibTorch 1.13's Functions.h
// after Tensor.h alone (IValue incomplete in ivalue_inl.h); GCC can.
#include <ATen/core/ivalue.h>

#include <ATen/Functions.h>
#include <ATen/TensorOperators.h>
#include <c10/util/Exception.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <new>
#include <stdexcept>

#include "agent/worker/accuracy_reference.h"

namespace benchfleet::worker {
namespace {

AccuracyInfo unchecked(std::string why) {
  AccuracyInfo info;
  info.verdict = AccuracyVerdict::kUnchecked;
  info.detail = std::move(why);
  return info;
}

std::string shape_text(at::IntArrayRef shape) {
  std::string out = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? ", " : "") + std::to_string(shape[i]);
  return out + "]";
}

// The first line of a LibTorch message (the rest is a C++ backtrace).
std::string first_line(const std::string& message) { return message.substr(0, message.find('\n')).substr(0, 1000); }

AccuracyInfo judge(const WorkerJob& job, ModelRunner& runner) {
  const auto it = job.artifact_metadata.find("accuracy_reference");
  if (it == job.artifact_metadata.end() || it->is_null()) {
    return unchecked(
        "the artifact has no float64 reference (exported before accuracy checks existed, or by another exporter)");
  }
  auto layout = parse_reference_layout(*it);
  if (!layout.ok()) return unchecked("the artifact's accuracy reference is unusable: " + layout.error().describe());
  if (layout->inputs.size() != job.inputs.size()) {
    return unchecked("the accuracy reference has " + std::to_string(layout->inputs.size()) + " inputs, the job " +
                     std::to_string(job.inputs.size()));
  }
  for (std::size_t i = 0; i < job.inputs.size(); ++i) {
    const auto& want = job.inputs[i];
    const auto& have = layout->inputs[i];
    if (have.shape != want.shape || have.dtype != want.dtype) {
      return unchecked("the accuracy reference's input " + have.name + " is " + have.dtype + " " +
                       shape_text(have.shape) + ", the job's " + want.dtype + " " + shape_text(want.shape));
    }
  }
  for (const auto& out : layout->outputs) {
    if (!out.eager_error) {
      return unchecked(std::string("eager in ") + std::string(to_string(job.dtype)) + " gives NaN or Inf in " +
                       out.name + " where the float64 reference has none: nothing to judge against");
    }
  }
  auto reference = read_reference(*layout, std::filesystem::path(job.artifact).parent_path().string());
  if (!reference.ok())
    return unchecked("the artifact's accuracy reference is unusable: " + reference.error().describe());

  std::vector<at::Tensor> inputs;
  for (const auto& t : reference->inputs) inputs.push_back(t.to(c10::Device(job.device)));
  const std::vector<at::Tensor> outputs = runner.run(std::move(inputs));
  if (outputs.size() != reference->outputs.size()) {
    return unchecked("the package returned " + std::to_string(outputs.size()) + " outputs on the reference inputs, " +
                     "the reference has " + std::to_string(reference->outputs.size()));
  }
  std::vector<OutputComparison> comparisons;
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const auto& entry = reference->output_entries[i];
    if (outputs[i].sizes() != reference->outputs[i].sizes()) {
      return unchecked("the package's " + entry.name + " has shape " + shape_text(outputs[i].sizes()) +
                       ", the reference " + shape_text(reference->outputs[i].sizes()));
    }
    comparisons.push_back(compare_output(entry.name, outputs[i], reference->outputs[i], *entry.eager_error));
  }
  return judge_accuracy(job.dtype, job.device == "cuda", reference->eager_deterministic, comparisons);
}

}  // namespace

OutputComparison compare_output(const std::string& name, const at::Tensor& compiled, const at::Tensor& reference,
                                double eager_error) {
  if (compiled.numel() != reference.numel()) {
    throw std::invalid_argument(name + ": " + std::to_string(compiled.numel()) + " elements, the reference " +
                                std::to_string(reference.numel()));
  }
  OutputComparison out;
  out.name = name;
  out.eager_error = eager_error;
  const at::Tensor ref = reference.detach().to(at::kCPU).flatten();
  const at::Tensor got = compiled.detach().to(at::kCPU).flatten();
  if (!at::isFloatingType(ref.scalar_type())) {
    out.floating = false;
    out.equal = got.to(ref.scalar_type()).equal(ref);
    return out;
  }
  const at::Tensor r = ref.to(at::kDouble);
  const at::Tensor c = got.to(at::kDouble);
  const at::Tensor finite = at::isfinite(r);
  out.compiled_finite = (at::isfinite(c) | finite.logical_not()).all().item<bool>();
  if (!out.compiled_finite) {
    out.compiled_error = std::numeric_limits<double>::infinity();
    return out;
  }
  const at::Tensor rm = r.masked_select(finite);
  const at::Tensor cm = c.masked_select(finite);
  const double diff = (cm - rm).norm().item<double>();
  const double ref_norm = rm.norm().item<double>();
  const double got_norm = cm.norm().item<double>();
  out.compiled_error = ref_norm > 0 ? diff / ref_norm : diff;
  // As benchfleet_accuracy.cosine_similarity: none when both sides are all zeros (or empty), 0
  // when exactly one is (a float16 output that underflowed to zeros is not close to anything).
  if (ref_norm > 0 && got_norm > 0) {
    out.cosine = (cm * rm).sum().item<double>() / (got_norm * ref_norm);
  } else if ((ref_norm > 0) != (got_norm > 0)) {
    out.cosine = 0.0;
  }
  return out;
}

AccuracyInfo check_accuracy(const WorkerJob& job, ModelRunner& runner) {
  try {
    return judge(job, runner);
  } catch (const std::bad_alloc&) {
    return unchecked("the accuracy check ran out of memory (std::bad_alloc)");
  } catch (const c10::Error& e) {
    return unchecked("the accuracy check failed: " + first_line(e.what()));
  } catch (const std::exception& e) {
    return unchecked("the accuracy check failed: " + first_line(e.what()));
  } catch (...) {
    return unchecked("the accuracy check failed with an unknown exception");
  }
}

}  // namespace benchfleet::worker
