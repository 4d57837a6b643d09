// The float64 reference an AOTInductor package's accuracy is judged against (docs/design.md §11):
// the exporter writes reference.bin beside the package and describes it in its metadata as
//   accuracy_reference = {"file": "reference.bin", "eager_deterministic": bool,
//                         "inputs":  [{"name", "dtype", "shape", "offset", "nbytes"}],
//                         "outputs": [{"name", "dtype", "shape", "offset", "nbytes", "eager_error"}]}
// Tensors are raw little-endian, C-contiguous bytes: the inputs in the job's dtype, the outputs
// those of the float64 model (float64; a non-floating output in its own dtype). eager_error is
// eager's relative L2 error (job dtype) against the reference output; null when eager itself has
// NaN or Inf where the reference has none.
//
// Nothing here trusts the file: every entry is checked (a known dtype, shape x element size ==
// nbytes, offset + nbytes within the file) before a byte is read, and a bad description or file
// is an Error naming the field, never a crash.
#pragma once

#include <ATen/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace benchfleet::worker {

// One tensor in reference.bin.
struct ReferenceEntry {
  std::string name;
  std::string dtype;  // as the exporter names dtypes: "float64", "float16", "int64", ...
  std::vector<std::int64_t> shape;
  std::uint64_t offset = 0;
  std::uint64_t nbytes = 0;
  std::optional<double> eager_error;  // outputs only (null: eager non-finite)

  bool operator==(const ReferenceEntry&) const = default;
};

// metadata.accuracy_reference, decoded and checked in itself (not yet against the file).
struct ReferenceLayout {
  std::string file;  // a plain file name beside the artifact
  bool eager_deterministic = true;
  std::vector<ReferenceEntry> inputs;
  std::vector<ReferenceEntry> outputs;  // at least one

  bool operator==(const ReferenceLayout&) const = default;
};

// The bytes one element of `dtype` takes, or nullopt for a dtype reference.bin cannot hold.
std::optional<std::size_t> element_size(const std::string& dtype);

// Decodes `accuracy_reference` (errors name "accuracy_reference.outputs[0].nbytes" and so on):
// the file a plain name, each dtype known, each shape's elements x element size == nbytes.
Result<ReferenceLayout> parse_reference_layout(const nlohmann::json& accuracy_reference);

// Every entry lies within a file of `file_size` bytes.
Status check_layout_fits(const ReferenceLayout& layout, std::uint64_t file_size);

// The reference's tensors, on the CPU.
struct Reference {
  bool eager_deterministic = true;
  std::vector<at::Tensor> inputs;
  std::vector<at::Tensor> outputs;
  std::vector<ReferenceEntry> output_entries;  // names and eager errors, in the outputs' order
};

// Reads the reference described by `layout` from the directory `dir` (the artifact's).
Result<Reference> read_reference(const ReferenceLayout& layout, const std::string& dir);

}  // namespace benchfleet::worker
