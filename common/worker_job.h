// What the agent hands a worker process: one measurement of one artifact (docs/design.md §11).
// The worker prints one JobResult (common/types.h) for it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/json_reader.h"
#include "common/types.h"

namespace benchfleet {

// One input tensor, with the batch already in its shape (from the exporter's metadata).
struct TensorSpec {
  std::string name;
  std::vector<std::int64_t> shape;
  std::string dtype = "float32";  // float32, float16, bfloat16, int64, int32, bool
  // For integer inputs: values are drawn uniformly from [low, high). Absent: 0/1 masks.
  std::optional<std::vector<std::int64_t>> range;

  bool operator==(const TensorSpec&) const = default;
};

// Artifact formats, as the exporter names them.
//   torchscript         traced, unoptimised: the worker's `eager` mode runs it op by op
//   torchscript-frozen  traced, frozen and optimised for inference: the `torchscript` mode
//   aotinductor         an AOTInductor package for one torch.compile mode
//
// Two programs read this job: benchfleet-worker (runtime libtorch: artifact, format and inputs
// required) and agent/python/benchfleet_runner.py (runtime python: the model is built from the
// catalog, so model is required and artifact, format and inputs are optional and unused).
// JSON without `runtime` is a libtorch job, as written before the python runtime existed.
struct WorkerJob {
  Runtime runtime = Runtime::kLibtorch;
  std::string model;     // catalog id: for messages (libtorch); what is built (python)
  std::string artifact;  // path of model.pt / model.pt2 (libtorch)
  std::string format;    // libtorch; empty or unused for python
  int batch = 1;
  Mode mode = Mode::kEager;
  std::string device = "cpu";  // cpu | cuda (the GPU is chosen by CUDA_VISIBLE_DEVICES)
  std::vector<TensorSpec> inputs;
  MeasurementSpec measurement;
  std::optional<std::int64_t> memory_limit_mb;
  std::int64_t seed = 0;
  // The precision to run in (docs/design.md §4). The libtorch runtime's artifact was exported in
  // it (amp: python runtime only); the python runner casts the model or runs it under autocast.
  Dtype dtype = Dtype::kFloat32;
  // Python runtime, compiled modes (MatrixSpec::dynamic, MatrixSpec::shape_walk): compile with
  // the batch dimension dynamic; and the batch sizes to call the compiled model at, ascending,
  // before measuring `batch` (empty: no walk).
  bool dynamic = false;
  std::vector<int> walk_batches;
  // The exporter's metadata (torch_git, sha256, export_s...), copied into the fingerprint.
  nlohmann::json artifact_metadata = nlohmann::json::object();
  // Python runtime only: the catalog YAML the runner builds `model` from (empty: the runner's
  // default), and local weights (absent: random init).
  std::string catalog;
  std::optional<std::string> weights;
  // Python runtime: the model's definition (docs/models.md) the runner builds it from, with
  // "local_path" where its files are on this host; null: the catalog's entry for `model`.
  std::optional<nlohmann::json> model_definition;
  // Intra-op threads torch runs with (at::set_num_threads / torch.set_num_threads), the slot's:
  // every build and runtime on a slot gets the same, so a comparison of builds is not one of
  // thread counts. 0: torch's own default (a job file written without it).
  int threads = 0;

  bool operator==(const WorkerJob&) const = default;
};

// The artifact format each mode runs from.
std::string_view format_for(Mode mode);

std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, TensorSpec& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, WorkerJob& out);
void to_json(nlohmann::json& j, const TensorSpec& v);
void to_json(nlohmann::json& j, const WorkerJob& v);

}  // namespace benchfleet
