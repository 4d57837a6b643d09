// What the store holds of agents and their leases, and what it answers a lease's holder
// (Store's agents and leases methods).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/agent_protocol.h"
#include "common/clock.h"
#include "common/types.h"

namespace benchfleet::store {

struct AgentInfo {
  std::int64_t id = 0;
  AgentDescriptor descriptor;
  TimestampMs enrolled_at = 0;
  TimestampMs last_seen_at = 0;
  bool draining = false;
  // An operator approved the next enrolment under this name without the agent's token.
  bool reenrolment_approved = false;
  struct ActiveLease {
    std::string slot;
    std::int64_t job_id = 0;
    std::int64_t run_id = 0;
    JobSpec spec;
    std::string status;  // leased / running
  };
  std::vector<ActiveLease> leases;
};

// Who may enrol under a name that is already enrolled (its id and live leases go with it).
struct EnrolmentClaim {
  // Any holder of the enrolment token may take over any name (the coordinator's
  // `reenrolment: open`).
  bool open = false;
  // The agent whose current token the caller showed (checked by the caller); the name must be
  // that agent's.
  std::optional<std::int64_t> proven_agent;

  static EnrolmentClaim anyone() { return EnrolmentClaim{true, std::nullopt}; }
  static EnrolmentClaim holder_of(std::optional<std::int64_t> agent) { return EnrolmentClaim{false, agent}; }
};

// The key an enrolled agent showed (salted hash), for the caller to check a re-enrolment by.
struct StoredAgentKey {
  std::int64_t agent_id = 0;
  std::string salt;  // both empty when the agent showed no key
  std::string hash;
};

// Stored credentials of an agent, for verification by the caller.
struct AgentCredentials {
  std::string salt;
  std::string hash;
};

// A lease the store granted: the record its agent gets (LeasedJob, common/agent_protocol.h) and
// how it was granted.
struct LeaseGrant : LeasedJob {
  // The slot's unacknowledged lease handed over again (a retried or concurrent poll), not a
  // new grant: withdrawing it is not this answer's to do.
  bool redelivered = false;
};

struct LeaseAnswer {
  std::optional<LeaseGrant> grant;
  bool draining = false;
};

// A lease's state (LeaseState) and a holder's reference to it (LeaseRef) are the protocol's
// (common/agent_protocol.h): kActive renewed; kLost expired and requeued, or leased to someone
// else; kCancelled its run was cancelled. The last two tell the holder to stop the work.
struct Renewal {
  LeaseState state = LeaseState::kLost;
  TimestampMs expires_at = 0;  // when kActive
};

enum class RecordKind {
  kStored,     // new result row
  kDuplicate,  // identical result for this attempt already stored: acknowledged, no new row
  kMismatch,   // a different result for this attempt is stored
  kLost,       // the lease is not current (expired, or another attempt holds the job)
  kCancelled,  // the run was cancelled
  kNotFound,   // no such job
};

struct RecordOutcome {
  RecordKind kind = RecordKind::kStored;
  std::int64_t result_id = 0;
  std::int64_t implied_oom = 0;  // jobs marked oom_implied because of this result
};

}  // namespace benchfleet::store
