// The agent's side of the coordinator protocol (docs/design.md §7) over HTTP. One instance per
// thread (it owns one keep-alive connection); the agent id and token are shared through
// AgentIdentity. The contract of each request is CoordinatorApi's (coordinator_api.h).
// What goes over the wire is common/agent_protocol.h.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/daemon/coordinator_api.h"
#include "agent/daemon/spool.h"
#include "common/agent_protocol.h"
#include "common/http/client.h"
#include "common/result.h"
#include "common/types.h"

namespace benchfleet::agent {

// CoordinatorApi over HTTP (common/http/client.h). `identity` must outlive the client.
class CoordinatorClient final : public CoordinatorApi {
 public:
  CoordinatorClient(std::string base_url, AgentIdentity& identity);

  Result<EnrollResponse> enroll(const AgentDescriptor& descriptor, const std::string& enrollment_token,
                                const EnrolmentProof& proof) override;
  Result<LeaseResponse> lease(const std::string& slot, int wait_s) override;
  bool has_unanswered_poll(const std::string& slot) const override;
  Result<LeaseState> progress(std::int64_t job_id, const std::string& lease_id, std::string_view phase) override;
  Result<HeartbeatResponse> heartbeat(const std::vector<LeaseRef>& leases, bool draining) override;
  Result<UploadAnswer> upload(const SpoolEntry& entry) override;
  Status release(std::int64_t job_id, const std::string& lease_id) override;

 private:
  Result<http::ClientResponse> post(const std::string& target, const nlohmann::json& body, const std::string& bearer,
                                    std::chrono::milliseconds timeout);
  http::Client http_;
  AgentIdentity& identity_;
  std::map<std::string, std::string> lease_request_ids_;  // slot -> id of its unanswered poll
};

}  // namespace benchfleet::agent
