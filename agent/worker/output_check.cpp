#include "agent/worker/output_check.h"

namespace benchfleet::worker {
namespace {

std::string shape_text(const std::vector<std::int64_t>& shape) { return nlohmann::json(shape).dump(); }

}  // namespace

std::optional<std::string> output_mismatch(const std::vector<OutputDescription>& got,
                                           const nlohmann::json& recorded_outputs) {
  if (!recorded_outputs.is_array() || recorded_outputs.empty()) return std::nullopt;
  if (got.size() != recorded_outputs.size()) {
    return "the artifact returns " + std::to_string(got.size()) + " output tensor(s), the exporter recorded " +
           std::to_string(recorded_outputs.size());
  }
  for (std::size_t i = 0; i < got.size(); ++i) {
    const nlohmann::json& want = recorded_outputs[i];
    if (!want.is_object()) continue;
    const std::string name = want.value("name", "output" + std::to_string(i));
    const auto shape = want.find("shape");
    if (shape != want.end() && shape->is_array() && *shape != nlohmann::json(got[i].shape)) {
      return "output " + name + " has shape " + shape_text(got[i].shape) + ", the exporter recorded " + shape->dump();
    }
    const auto dtype = want.find("dtype");
    if (dtype != want.end() && dtype->is_string() && dtype->get<std::string>() != got[i].dtype) {
      return "output " + name + " is " + got[i].dtype + ", the exporter recorded " + dtype->get<std::string>();
    }
  }
  return std::nullopt;
}

}  // namespace benchfleet::worker
