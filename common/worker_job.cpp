#include "common/worker_job.h"

#include <algorithm>

#include "common/codecs.h"

namespace benchfleet {
namespace {
constexpr std::int64_t kMaxElements = std::int64_t{1} << 34;       // 16 Gi elements: beyond any card
constexpr std::int64_t kMaxMemoryLimitMb = std::int64_t{1} << 24;  // 16 TiB: no overflow in bytes
const std::vector<std::string> kDtypes = {"float32", "float16", "bfloat16", "int64", "int32", "bool"};
}  // namespace

std::string_view format_for(Mode mode) {
  switch (mode) {
    case Mode::kEager:
      return "torchscript";
    case Mode::kTorchscript:
      return "torchscript-frozen";
    case Mode::kReduceOverhead:  // default inductor settings, replayed as a CUDA graph
    case Mode::kDefault:
    case Mode::kMaxAutotune:
    case Mode::kMaxAutotuneNoCudagraphs:
      return "aotinductor";
  }
  return "torchscript";
}

std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, TensorSpec& out) {
  JsonReader r(j, path);
  r.required("name", out.name);
  r.required("shape", out.shape);
  r.optional("dtype", out.dtype);
  r.optional("range", out.range);
  r.check(!out.name.empty(), "name", "must not be empty");
  r.check(!out.shape.empty() && out.shape.size() <= 8, "shape", "must have 1 to 8 dimensions");
  std::int64_t elements = 1;
  for (std::size_t i = 0; i < out.shape.size() && !r.failed(); ++i) {
    r.check(out.shape[i] > 0, "shape[" + std::to_string(i) + "]", "must be > 0");
    elements = out.shape[i] > 0 && elements <= kMaxElements / out.shape[i] ? elements * out.shape[i] : kMaxElements + 1;
  }
  r.check(elements <= kMaxElements, "shape", "has more than 2^34 elements");
  r.check(std::find(kDtypes.begin(), kDtypes.end(), out.dtype) != kDtypes.end(), "dtype",
          "must be one of float32, float16, bfloat16, int64, int32, bool");
  r.check(!out.range || (out.range->size() == 2 && (*out.range)[0] < (*out.range)[1]), "range",
          "must be [low, high) with low < high");
  if (auto s = r.finish(); !s) return s.error();
  return std::nullopt;
}

void to_json(nlohmann::json& j, const TensorSpec& v) {
  j = {{"name", v.name}, {"shape", v.shape}, {"dtype", v.dtype}};
  if (v.range) j["range"] = *v.range;
}

std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, WorkerJob& out) {
  JsonReader r(j, path);
  // The runtime decides which fields are required, so it is read first.
  r.optional("runtime", out.runtime);
  const bool libtorch = out.runtime == Runtime::kLibtorch;
  r.optional("model", out.model);
  if (libtorch) {
    r.required("artifact", out.artifact);
    r.required("format", out.format);
  } else {
    r.optional("artifact", out.artifact);
    r.optional("format", out.format);
  }
  r.required("batch", out.batch);
  r.required("mode", out.mode);
  r.optional("device", out.device);
  std::optional<std::vector<TensorSpec>> inputs;
  if (libtorch) {
    r.required("inputs", out.inputs);
  } else {
    r.optional("inputs", inputs);  // null or absent: the runner takes the catalog's
    out.inputs = inputs.value_or(std::vector<TensorSpec>{});
  }
  r.optional("measurement", out.measurement);
  r.optional("memory_limit_mb", out.memory_limit_mb);
  r.optional("seed", out.seed);
  r.optional("dtype", out.dtype);
  r.optional("dynamic", out.dynamic);
  r.optional("walk_batches", out.walk_batches);
  r.optional("artifact_metadata", out.artifact_metadata);
  std::optional<std::string> catalog;
  r.optional("catalog", catalog);
  out.catalog = catalog.value_or("");
  r.optional("weights", out.weights);
  r.optional("model_definition", out.model_definition);
  r.check(!out.model_definition || out.model_definition->is_object(), "model_definition", "must be an object");
  r.optional("threads", out.threads);
  r.check(out.threads >= 0 && out.threads <= 4096, "threads", "must be between 0 (torch's default) and 4096");
  if (libtorch) {
    r.check(!out.artifact.empty(), "artifact", "must not be empty");
    r.check(out.format == "torchscript" || out.format == "torchscript-frozen" || out.format == "aotinductor", "format",
            "must be torchscript, torchscript-frozen or aotinductor");
  } else {
    r.check(!out.model.empty(), "model", "must not be empty (the python runtime builds the model from the catalog)");
    r.check(out.format.empty() || out.format == "torchscript" || out.format == "torchscript-frozen" ||
                out.format == "aotinductor",
            "format", "must be torchscript, torchscript-frozen or aotinductor");
  }
  r.check(out.batch > 0, "batch", "must be > 0");
  r.check(out.device == "cpu" || out.device == "cuda", "device", "must be cpu or cuda");
  r.check(libtorch ? !out.inputs.empty() && out.inputs.size() <= 16 : out.inputs.size() <= 16, "inputs",
          "must list 1 to 16 tensors");
  r.check(!out.memory_limit_mb || (*out.memory_limit_mb > 0 && *out.memory_limit_mb <= kMaxMemoryLimitMb),
          "memory_limit_mb", "must be null or between 1 and 16777216 (16 TiB)");
  r.check(!catalog || !catalog->empty(), "catalog", "must not be empty");
  r.check(out.walk_batches.size() <= kMaxWalkBatches, "walk_batches",
          "must list at most " + std::to_string(kMaxWalkBatches) + " batch sizes");
  for (std::size_t i = 0; i < out.walk_batches.size(); ++i) {
    r.check(out.walk_batches[i] > 0 && out.walk_batches[i] <= 65536 &&
                (i == 0 || out.walk_batches[i - 1] < out.walk_batches[i]),
            "walk_batches[" + std::to_string(i) + "]", "must be between 1 and 65536 and ascending");
  }
  r.check(!out.weights || !out.weights->empty(), "weights", "must not be empty");
  if (auto s = r.finish(); !s) return s.error();
  // The measurement block is validated by its own codec when present; defaults are valid.
  return std::nullopt;
}

void to_json(nlohmann::json& j, const WorkerJob& v) {
  j = {{"runtime", v.runtime},
       {"model", v.model},
       {"artifact", v.artifact},
       {"format", v.format},
       {"batch", v.batch},
       {"mode", v.mode},
       {"device", v.device},
       {"inputs", v.inputs},
       {"measurement", v.measurement},
       {"memory_limit_mb", v.memory_limit_mb ? nlohmann::json(*v.memory_limit_mb) : nlohmann::json()},
       {"seed", v.seed},
       {"dtype", v.dtype},
       {"artifact_metadata", v.artifact_metadata}};
  if (v.dynamic) j["dynamic"] = true;
  if (!v.walk_batches.empty()) j["walk_batches"] = v.walk_batches;
  if (!v.catalog.empty()) j["catalog"] = v.catalog;
  if (v.weights) j["weights"] = *v.weights;
  if (v.model_definition) j["model_definition"] = *v.model_definition;
  if (v.threads > 0) j["threads"] = v.threads;
}

}  // namespace benchfleet
