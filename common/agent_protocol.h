// The records of the agent protocol (docs/design.md §7), each named after its OpenAPI schema:
// what the coordinator answers agents (enrolment, lease, heartbeat) and what agents send it
// (lease, heartbeat, progress, release and result requests). One type and one codec per record, used by both ends: the
// coordinator encodes its answers and decodes the requests with them, the agent the other way.
//   nlohmann::json j = LeaseResponse{...};                      // coordinator
//   Result<LeaseResponse> a = decode<LeaseResponse>(j, "lease answer");  // agent
//
// Decoding never throws and names the field of any error, as common/codecs.h. Two policies, by
// who reads:
// - answers (read by agents) ignore members they do not know, as a newer coordinator may add
//   some; the known ones are checked, bounds included, so a broken answer can neither make an
//   agent spin nor put a line break into its Authorization header;
// - requests (read by the coordinator) refuse unknown members, like every request body.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/codecs.h"
#include "common/result.h"
#include "common/types.h"

namespace benchfleet {

// An agent re-enrolling under its name shows the token it holds in this header (the
// Authorization header carries the enrolment token): enrolling under an enrolled name takes over
// its id and live leases, so the coordinator wants that proof or an operator's approval.
inline constexpr std::string_view kAgentTokenHeader = "X-Agent-Token";
// The key an agent makes once and keeps in its state directory, shown on every enrolment: its
// next enrolment under the same name needs no token, so an answer lost on the way (the token in
// it never arrived) does not lock the agent out.
inline constexpr std::string_view kAgentKeyHeader = "X-Agent-Key";

// ---- answers to agents -------------------------------------------------------------------------

// Timers the coordinator dictates (Intervals). Written as top-level members of its enrolment,
// lease and heartbeat answers; read from the first two, each optional (the defaults stand) and
// bounded: heartbeat and lease TTL 1 to 3600 s, long poll 0 to 300 s.
struct Intervals {
  int heartbeat_interval_s = 15;
  int lease_ttl_s = 60;
  int long_poll_timeout_s = 25;
  bool operator==(const Intervals&) const = default;
};

// POST /agents/enroll, 201 (EnrollResponse).
struct EnrollResponse {
  std::int64_t agent_id = 0;  // > 0
  std::string agent_token;    // 1 to 1024 visible ASCII characters (it goes into a header)
  Intervals intervals;
  bool operator==(const EnrollResponse&) const = default;
};

// A job leased to one slot (LeaseGrant): the `job` of a lease answer. The coordinator's
// store::LeaseGrant is one; its answer adds "model" (the registered model spec.model names, as
// GET /api/v1/models/{id} shows it), whose `definition` and `digest` agents read.
struct LeasedJob {
  std::int64_t job_id = 0;     // "id", > 0
  std::int64_t run_id = 0;     // > 0
  int attempt = 0;             // 1-based; sent back with the result
  std::string lease_id;        // 1 to 256 bytes; sent with every renewal and the result
  TimestampMs expires_at = 0;  // "lease_expires_at" (format_time): renew before it
  JobSpec spec;
  MeasurementSpec measurement;
  std::optional<std::int64_t> memory_limit_mb;  // > 0; null (written, not left out): no cap
  int timeout_s = 0;                            // 1 to 604800
  // The run's MatrixSpec::dynamic, and for MatrixSpec::shape_walk its batch sizes ascending
  // (empty: no walk). Optional when read: a coordinator before them sends neither.
  bool dynamic = false;
  std::vector<int> walk_batches;
  // model.definition (docs/models.md): what the agent builds the model from; null from a
  // coordinator that sends none (the agent's catalog file then). model.digest names it.
  std::optional<nlohmann::json> model_definition;
  std::string model_digest;
  bool operator==(const LeasedJob&) const = default;
};

// POST /agents/{id}/lease, 200 (LeaseResponse). `job` and `draining` are required when read:
// an object without them (a problem document sent with 200, a proxy's page) is not "no work".
struct LeaseResponse {
  std::optional<LeasedJob> job;  // null: no work within the wait (or draining, or stopping)
  bool draining = false;         // the agent gets no new jobs
  Intervals intervals;
  bool operator==(const LeaseResponse&) const = default;
};

// What renewing a lease found (LeaseState): "active" (renewed), "lost" (expired and requeued,
// or another attempt holds the job) or "cancelled" (the run was cancelled). Stop the job unless
// active. (coordinator/store's LeaseState is the same enum, kept apart until the store uses this.)
enum class LeaseState { kActive, kLost, kCancelled };
std::string_view to_string(LeaseState s);

// One lease of a heartbeat answer (LeaseRenewal). Read state first: an entry without one is
// unreadable, never a lost lease (an unknown state must not stop a job).
struct LeaseRenewal {
  std::int64_t job_id = 0;  // > 0
  std::string lease_id;     // 1 to 256 bytes
  LeaseState state = LeaseState::kLost;
  std::optional<TimestampMs> expires_at;  // "lease_expires_at": the new expiry when active, else null
  bool operator==(const LeaseRenewal&) const = default;
};

// POST /agents/{id}/heartbeat, 200 (HeartbeatResponse) less the intervals it repeats: agents
// take those from enrolment and lease answers, so the coordinator writes them beside these
// members and decoding does not read them.
struct HeartbeatResponse {
  bool drain = false;                // the agent should drain (an operator asked, or it said so)
  std::vector<LeaseRenewal> leases;  // one per lease of the request, in its order
  bool operator==(const HeartbeatResponse&) const = default;
};

// ---- requests from agents ----------------------------------------------------------------------

// A lease an agent names (LeaseRef). (coordinator/store's LeaseRef is the same record, kept
// apart until the store uses this.)
struct LeaseRef {
  std::int64_t job_id = 0;  // > 0
  std::string lease_id;     // 1 to 64 characters
  bool operator==(const LeaseRef&) const = default;
};

// POST /agents/{id}/lease body (LeaseRequest).
struct LeaseRequest {
  std::string slot;
  std::optional<int> wait_s;  // >= 0; capped by (and defaulting to) the long poll timeout
  // The poll's idempotency key, [A-Za-z0-9._:-]{1,64}, kept when the poll is retried.
  std::optional<std::string> request_id;
  bool operator==(const LeaseRequest&) const = default;
};

// POST /agents/{id}/heartbeat body (HeartbeatRequest).
struct HeartbeatRequest {
  std::vector<LeaseRef> leases;  // at most 64; each is renewed
  bool draining = false;         // true marks the agent draining; false changes nothing
  bool operator==(const HeartbeatRequest&) const = default;
};

// POST /jobs/{id}/progress body (ProgressRequest): renews the lease and marks the job running.
struct ProgressRequest {
  std::string lease_id;           // 1 to 64 characters, as every lease an agent names (LeaseRef)
  std::string phase;              // free-form (load, compile, warmup, measure); optional, "" when absent
  std::string message;            // at most 4096 bytes; optional, "" when absent
  std::optional<int> iterations;  // timed iterations so far; optional, null allowed
  bool operator==(const ProgressRequest&) const = default;
};

// POST /jobs/{id}/release body (ReleaseRequest): gives the lease back unfinished.
struct ReleaseRequest {
  std::string lease_id;  // 1 to 64 characters
  bool operator==(const ReleaseRequest&) const = default;
};

// POST /jobs/{id}/result body (ResultRequest): the verdict of one attempt. The decoder checks
// types and members only; the consistency rules are check_posted_result's (common/result_checks.h).
struct ResultRequest {
  std::string lease_id;  // 1 to 64 characters
  int attempt = 0;       // >= 1, the attempt of the lease grant
  JobResult result;
  bool operator==(const ResultRequest&) const = default;
};

// The text of an enrolling agent's descriptor that operators read (its name, hostname and
// version, each build's version, each GPU's name, uuid, compute capability and driver), under
// common/display_text.h's rule; the first violation, naming its field. Checked at enrolment, not
// by the decoder, so a descriptor stored before the rule stays readable.
std::optional<Error> check_descriptor_text(const AgentDescriptor& d);

std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, EnrollResponse& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, LeasedJob& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, LeaseResponse& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, LeaseState& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, LeaseRenewal& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, HeartbeatResponse& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, LeaseRef& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, LeaseRequest& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, HeartbeatRequest& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, ProgressRequest& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, ReleaseRequest& out);
std::optional<Error> decode_value(const nlohmann::json& j, const std::string& path, ResultRequest& out);

void to_json(nlohmann::json& j, const Intervals& v);  // an object of the three members
void to_json(nlohmann::json& j, const EnrollResponse& v);
void to_json(nlohmann::json& j, const LeasedJob& v);
void to_json(nlohmann::json& j, const LeaseResponse& v);
void to_json(nlohmann::json& j, LeaseState v);
void to_json(nlohmann::json& j, const LeaseRenewal& v);
void to_json(nlohmann::json& j, const HeartbeatResponse& v);
void to_json(nlohmann::json& j, const LeaseRef& v);
void to_json(nlohmann::json& j, const LeaseRequest& v);
void to_json(nlohmann::json& j, const HeartbeatRequest& v);
void to_json(nlohmann::json& j, const ProgressRequest& v);  // message and iterations only when set
void to_json(nlohmann::json& j, const ReleaseRequest& v);
void to_json(nlohmann::json& j, const ResultRequest& v);

}  // namespace benchfleet
