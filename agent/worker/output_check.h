// Whether a model's first outputs are those the exporter recorded, so that an artifact running
// another graph (a stale package, a trace of other inputs) is not measured.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace benchfleet::worker {

// One output tensor as the exporter's metadata names it: shape, and dtype ("float32", "int64"...).
struct OutputDescription {
  std::vector<std::int64_t> shape;
  std::string dtype;

  bool operator==(const OutputDescription&) const = default;
};

// What differs between the outputs a forward pass returned (flattened, in order) and the
// metadata's `outputs` ([{name, shape, dtype}, ...]): the count, a shape or a dtype; nullopt when
// they agree, or when the metadata records no outputs (nothing to compare with).
std::optional<std::string> output_mismatch(const std::vector<OutputDescription>& got,
                                           const nlohmann::json& recorded_outputs);

}  // namespace benchfleet::worker
