// The rules the C++ programs share with the python modules, each a JSON file in common/rules/:
// compiled in at build time (common/CMakeLists.txt) and installed beside the python modules,
// which read them with benchfleet_rules.rule(name). Each rule has its own accessor:
//   unsupported_dtype.json   common/unsupported_dtype.h
//   measurement_limits.json  max_iterations() below
//   oom_messages.json        agent/worker/oom.h (is_oom_message)
//   memory_cgroup.json       memory_cgroup_protocol() below
//   statuses.json            statuses() below
//   speed_fingerprint.json   speed_keys() below
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

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

// The statuses of results, report cells and jobs and how they are shown (statuses.json).
struct Statuses {
  std::vector<std::string> results;          // ResultStatus, in its order
  std::vector<std::string> problems;         // verdicts that say a measurement failed
  std::vector<std::string> active_jobs;      // queued, leased, running
  std::vector<std::string> ended_jobs;       // done, failed, cancelled
  std::vector<std::string> cell_precedence;  // a report cell's status when no repetition is ok: the first present
  std::map<std::string, std::string, std::less<>> cell_text;  // a cell's text where it is not the status
};
const Statuses& statuses();

// The environment keys that change speed besides torch (speed_fingerprint.json), sorted: what a
// report's fingerprint keeps and a comparison names when two sides differ in it.
const std::vector<std::string>& speed_keys();

}  // namespace benchfleet
