// Agents: enrolment, credentials, listing and drain. Their leases are LeaseStore's.
// Thread-safe: every method is one operation of the store's group commit (store_core.h): it
// runs alone on the one connection and returns once what it wrote is committed.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/agent_protocol.h"
#include "common/result.h"
#include "common/types.h"
#include "coordinator/store/agent_types.h"
#include "coordinator/store/store_core.h"

namespace benchfleet::store {

class AgentStore {
 public:
  explicit AgentStore(StoreCore& core) : core_(core) {}
  AgentStore(const AgentStore&) = delete;
  AgentStore& operator=(const AgentStore&) = delete;

  // Creates the agent, or updates the one with the same name (it keeps its id), and replaces
  // its credentials. Queued jobs whose build and runtime one of its slots has but not their mode
  // become `unsupported` now (rules::unsupported_reason). Returns the agent id.
  // An enrolled name is taken over only when `claim` allows it: open, the caller proved it holds
  // that agent's token, or an operator approved it (approve_reenrolment; used up here). Else
  // kConflict, naming both ways.
  // `key`, when given, is the salted hash of the key the agent showed (X-Agent-Key): kept for
  // its next enrolment; an earlier one stays when none is given.
  Result<std::int64_t> enroll_agent(const AgentDescriptor& descriptor, const AgentCredentials& credentials,
                                    const EnrolmentClaim& claim, const std::optional<AgentCredentials>& key = {});
  // The key kept for the agent named `name`; nullopt when no agent has that name.
  Result<std::optional<StoredAgentKey>> agent_key(const std::string& name);
  // The operator's approval of the next enrolment under `agent_id`'s name. kNotFound.
  Status approve_reenrolment(std::int64_t agent_id);
  // For verification by the caller (the hash of the agent's token). kNotFound.
  Result<AgentCredentials> agent_credentials(std::int64_t agent_id);
  Result<std::vector<AgentInfo>> list_agents();
  Result<AgentInfo> get_agent(std::int64_t agent_id);
  // The operator's drain.
  Status set_draining(std::int64_t agent_id, bool draining);
  // The agent's own drain, as its heartbeats report it. An agent is draining (gets no leases)
  // when either is set; enrolment clears both.
  Status set_self_draining(std::int64_t agent_id, bool draining);

 private:
  StoreCore& core_;
};

}  // namespace benchfleet::store
