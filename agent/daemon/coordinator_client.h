// The agent's side of the coordinator protocol (docs/design.md §7). One instance per thread
// (it owns one keep-alive connection); the agent id and token are shared through AgentIdentity.
// What goes over the wire is common/agent_protocol.h.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/daemon/spool.h"
#include "common/agent_protocol.h"
#include "common/http/client.h"
#include "common/result.h"
#include "common/types.h"

namespace benchfleet::agent {

// Thread-safe holder of the agent id and token (replaced when the agent re-enrols).
class AgentIdentity {
 public:
  void set(std::int64_t agent_id, std::string token);
  std::pair<std::int64_t, std::string> get() const;
  bool valid() const;

 private:
  mutable std::mutex mu_;
  std::int64_t agent_id_ = 0;
  std::string token_;
};

enum class Upload {
  kAcknowledged,  // stored, or an identical copy was: remove it from the spool
  kRefused,       // 409 (stale lease, cancelled run, different result) or 404: retrying cannot help
  kInvalid,       // 400 or 413: the coordinator will never accept this body (its checks refuse the
                  // result, or it is over max_body_bytes); post an error verdict in its place
};

struct UploadAnswer {
  Upload outcome = Upload::kAcknowledged;
  std::string detail;  // the coordinator's problem detail for kRefused and kInvalid
};

// Errors: kUnauthenticated when the coordinator rejects the agent token (re-enrol);
// kUnavailable when it cannot be reached (retry with backoff); others as the problem says.
class CoordinatorClient {
 public:
  CoordinatorClient(std::string base_url, AgentIdentity& identity);

  Result<EnrollResponse> enroll(const AgentDescriptor& descriptor, const std::string& enrollment_token);
  // Long-polls a job for `slot`. Each poll carries a request id (idempotency key) that is kept
  // until an answer was read, so a poll retried after a lost connection or an unreadable answer
  // is the same request to the coordinator: it hands back the same lease, at the same attempt.
  Result<LeaseResponse> lease(const std::string& slot, int wait_s);
  // Whether the last poll of `slot` got no readable answer (its request id is kept for a retry):
  // the coordinator may have granted a lease this agent never saw.
  bool has_unanswered_poll(const std::string& slot) const;
  // kActive when renewed; kLost or kCancelled when the job must stop.
  Result<LeaseState> progress(std::int64_t job_id, const std::string& lease_id, std::string_view phase);
  // Renews the listed leases; the answer lists the state of each, in order, and whether the
  // coordinator drains us.
  Result<HeartbeatResponse> heartbeat(const std::vector<LeaseRef>& leases, bool draining);
  Result<UploadAnswer> upload(const SpoolEntry& entry);
  // Gives a lease back unfinished (abort): the coordinator requeues the job at once.
  Status release(std::int64_t job_id, const std::string& lease_id);

 private:
  Result<http::ClientResponse> post(const std::string& target, const nlohmann::json& body,
                                    const std::string& bearer, std::chrono::milliseconds timeout);
  http::Client http_;
  AgentIdentity& identity_;
  std::map<std::string, std::string> lease_request_ids_;  // slot -> id of its unanswered poll
};

}  // namespace benchfleet::agent
