// Typed, validating decoders for everything the agent reads from another process: the
// coordinator's answers (enrolment, lease, heartbeat, 409 problems), the exporter's metadata,
// the worker's and runner's result file and their --capabilities answers.
//
// None of them throws: malformed input (not JSON, too deep, a wrong type, an out-of-range
// interval, a path that leaves its folder) is an Error naming the field, which the caller logs
// and survives. Members this agent does not know are ignored (a newer coordinator or exporter
// may add some); the known ones are checked. The coordinator's answers are records of
// common/agent_protocol.h, decoded by its codec (the one the coordinator encodes them with);
// the others are the agent's own views of other programs' answers, so they live here.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/agent_protocol.h"
#include "common/result.h"
#include "common/types.h"
#include "common/worker_job.h"

namespace benchfleet::agent {

// POST /agents/enroll 201 body: agent_id > 0, an agent_token of 1 to 1024 visible ASCII
// characters (it goes into a header), the intervals (each optional, within bounds).
Result<EnrollResponse> decode_enrollment_answer(std::string_view body);

// POST /agents/{id}/lease 200 body: job (required: null or a whole lease), draining (required),
// the intervals (optional).
Result<LeaseResponse> decode_lease_answer(std::string_view body);

// POST /agents/{id}/heartbeat 200 body: leases and drain (both required); `sent` is how many
// leases the request listed (the answer must list as many, each with a known state).
Result<HeartbeatResponse> decode_heartbeat_answer(std::string_view body, std::size_t sent);

// A 409 answer to progress: kCancelled when its problem says reason "cancelled", else kLost.
// Never fails (anything unreadable is a lost lease).
LeaseState decode_conflict(std::string_view body);

// The exporter's stdout (also its metadata.json in the cache).
struct ExporterAnswer {
  std::string status;                             // ok | error | unsupported
  std::string message;                            // why, when not ok
  std::string artifact = "model.pt";              // file name inside the export folder (no '/', not "..")
  std::optional<std::vector<TensorSpec>> inputs;  // what the worker feeds (libtorch jobs need it)
  std::optional<double> export_s;                 // >= 0
  std::optional<std::string> inductor_cache;
  nlohmann::json metadata;  // the whole answer, for the worker and the fingerprint
};
Result<ExporterAnswer> decode_exporter_metadata(const nlohmann::json& j);
Result<ExporterAnswer> decode_exporter_answer(std::string_view text);

// A worker's or runner's --capabilities answer.
struct Capabilities {
  std::string torch_version;
  std::string torch_git;
  std::vector<std::string> library_dirs;           // absolute paths only
  std::map<std::string, std::vector<Mode>> modes;  // by device: "cpu", "cuda"
};
Result<Capabilities> decode_capabilities(std::string_view text);

// A worker's or runner's result file (JobResult, validated by common/codecs).
Result<JobResult> decode_worker_result(std::string_view text);

// The file's contents, or an error when it cannot be read or is larger than `max_bytes`.
Result<std::string> read_file_bounded(const std::string& path, std::size_t max_bytes);

}  // namespace benchfleet::agent
