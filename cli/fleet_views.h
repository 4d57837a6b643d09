// Text views of what a fleet can run, for the CLI's `models`, `builds` and `modes`: the catalog's
// models with the short names a matrix may use, the torch builds enrolled agents offer (versions,
// GPU classes, runtimes and modes), and the modes with what each measures and who offers it.
// Pure functions of the API's JSON (ModelList, AgentList).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace benchfleet::cli {

// ModelList -> "ID  SHORT NAME  TASK/MODEL  SOURCE": the short name is the id's part after its
// '/', which a matrix or `series --model` may give instead of the id.
std::string models_view(const nlohmann::json& model_list);

// AgentList -> one row per torch build name over all agents:
// "BUILD  VERSIONS  GPU CLASSES  RUNTIMES AND MODES  AGENTS" (agents: online/enrolled).
std::string builds_view(const nlohmann::json& agent_list);

// AgentList -> one row per mode: "MODE  WHAT IT MEASURES  OFFERED BY" (the builds and runtimes
// of the enrolled fleet that run it, "-" when none).
std::string modes_view(const nlohmann::json& agent_list);

}  // namespace benchfleet::cli
