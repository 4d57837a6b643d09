// The rules the C++ programs share with the python modules, each a JSON file in common/rules/:
// compiled in at build time (common/CMakeLists.txt) and installed beside the python modules,
// which read them with benchfleet_rules.rule(name). Each rule has its own accessor:
//   unsupported_dtype.json   common/unsupported_dtype.h
//   measurement_limits.json  max_iterations() below
//   oom_messages.json        agent/worker/oom.h (is_oom_message)
//   memory_cgroup.json       memory_cgroup_protocol() below
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace benchfleet {

// The parsed rules/<name> (e.g. "unsupported_dtype.json"), read once. Throws std::logic_error
// when no such file was embedded: a build defect, which the rules' unit tests catch first.
// Thread-safe.
const nlohmann::json& shared_rule(std::string_view name);

// The most timed iterations one job runs (MeasurementSpec::max_iterations' ceiling), hence the
// most samples one result carries: measurement_limits.json's max_iterations.
std::size_t max_iterations();

// How a CPU job and its agent agree on the job's memory cgroup (memory_cgroup.json says how;
// agent/daemon/memory_cgroup.h says why): file names inside the directory the environment
// variable names.
struct MemoryCgroupProtocol {
  std::string environment;
  std::string request_file;
  std::string answer_file;
  std::string phase_file;
  int answer_timeout_s = 0;
};
const MemoryCgroupProtocol& memory_cgroup_protocol();

}  // namespace benchfleet
