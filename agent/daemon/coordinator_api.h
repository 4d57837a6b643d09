// What the agent's loops ask of the coordinator (docs/design.md §7), as an interface: the real
// one is CoordinatorClient (HTTP, coordinator_client.h); the unit tests of agent_loops.h fake it.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "agent/daemon/spool.h"
#include "common/agent_protocol.h"
#include "common/result.h"
#include "common/types.h"

namespace benchfleet::agent {

// Thread-safe holder of the agent id and token (replaced when the agent re-enrols).
class AgentIdentity {
 public:
  void set(std::int64_t agent_id, std::string token) {
    std::lock_guard lock(mu_);
    agent_id_ = agent_id;
    token_ = std::move(token);
  }
  std::pair<std::int64_t, std::string> get() const {
    std::lock_guard lock(mu_);
    return {agent_id_, token_};
  }
  bool valid() const {
    std::lock_guard lock(mu_);
    return agent_id_ > 0 && !token_.empty();
  }

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

// One connection's worth of the protocol: an instance is used by one thread at a time. Every
// request but enroll carries the token of the AgentIdentity the instance was made with.
// Errors: kUnauthenticated when the coordinator rejects the agent token (re-enrol);
// kUnavailable when it cannot be reached or its answer cannot be read (retry with backoff);
// others as the problem says.
// What an agent shows when it enrols (kAgentKeyHeader, kAgentTokenHeader); "" for none.
struct EnrolmentProof {
  std::string key;    // made once and kept in its state directory
  std::string token;  // the agent token it held before
};

class CoordinatorApi {
 public:
  virtual ~CoordinatorApi() = default;

  // Exchanges the enrolment token for the agent's own id and token, which it stores in the
  // instance's AgentIdentity. `proof` is what lets the coordinator take it for the agent already
  // enrolled under its name: the key it keeps and the token it held before (either may be empty).
  // kConflict when that name is enrolled and neither proof nor an operator's approval allows it.
  virtual Result<EnrollResponse> enroll(const AgentDescriptor& descriptor, const std::string& enrollment_token,
                                        const EnrolmentProof& proof) = 0;
  // Long-polls a job for `slot`. Each poll carries a request id (idempotency key) that is kept
  // until an answer was read, so a poll retried after a lost connection or an unreadable answer
  // is the same request to the coordinator: it hands back the same lease, at the same attempt.
  virtual Result<LeaseResponse> lease(const std::string& slot, int wait_s) = 0;
  // Whether the last poll of `slot` got no readable answer (its request id is kept for a retry):
  // the coordinator may have granted a lease this agent never saw.
  virtual bool has_unanswered_poll(const std::string& slot) const = 0;
  // Renews one lease: kActive when renewed; kLost or kCancelled when the job must stop.
  virtual Result<LeaseState> progress(std::int64_t job_id, const std::string& lease_id, std::string_view phase) = 0;
  // Renews the listed leases; the answer lists the state of each, in order, and whether the
  // coordinator drains us.
  virtual Result<HeartbeatResponse> heartbeat(const std::vector<LeaseRef>& leases, bool draining) = 0;
  virtual Result<UploadAnswer> upload(const SpoolEntry& entry) = 0;
  // Gives a lease back unfinished (abort): the coordinator requeues the job at once.
  virtual Status release(std::int64_t job_id, const std::string& lease_id) = 0;
};

}  // namespace benchfleet::agent
