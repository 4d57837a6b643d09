#include "agent/daemon/coordinator_client.h"

#include <cstdio>
#include <random>

#include "agent/daemon/agent_codecs.h"
#include "common/codecs.h"
#include "common/json_reader.h"

namespace benchfleet::agent {
namespace {

using namespace std::chrono_literals;

// Answers are decoded by agent_codecs.h: a malformed body is an error (retried with backoff
// by the caller), never an exception.
LeaseState renewal_of(const http::ClientResponse& r) {
  return r.status == 409 ? decode_conflict(r.body) : LeaseState::kActive;
}

// An answer the agent cannot read: retried like an unreachable coordinator.
Error unreadable(const Error& e) { return Error{ErrorCode::kUnavailable, "unreadable answer: " + e.describe(), {}}; }

}  // namespace

CoordinatorClient::CoordinatorClient(std::string base_url, AgentIdentity& identity)
    : http_(std::move(base_url)), identity_(identity) {}

Result<http::ClientResponse> CoordinatorClient::post(const std::string& target, const nlohmann::json& body,
                                                     const std::string& bearer, std::chrono::milliseconds timeout) {
  return http_.post_json(target, body, bearer, timeout);
}

Result<EnrollResponse> CoordinatorClient::enroll(const AgentDescriptor& d, const std::string& enrollment_token,
                                                 const EnrolmentProof& proof) {
  http::Client::Headers headers = {{"Authorization", "Bearer " + enrollment_token},
                                   {"Content-Type", "application/json"}};
  if (!proof.key.empty()) headers.emplace_back(std::string(kAgentKeyHeader), proof.key);
  if (!proof.token.empty()) headers.emplace_back(std::string(kAgentTokenHeader), proof.token);
  BF_ASSIGN_OR_RETURN(auto r, http_.request(boost::beast::http::verb::post, "/api/v1/agents/enroll",
                                            nlohmann::json(d).dump(), headers, 30s));
  if (r.status != 201) return http::error_for_response(r, "enrolment");
  auto e = decode_enrollment_answer(r.body);
  if (!e.ok()) return unreadable(e.error());
  identity_.set(e->agent_id, e->agent_token);
  return e;
}

Result<LeaseResponse> CoordinatorClient::lease(const std::string& slot, int wait_s) {
  const auto [id, token] = identity_.get();
  std::string& pending = lease_request_ids_[slot];
  if (pending.empty()) {
    std::random_device rd;
    char text[32];
    std::snprintf(text, sizeof text, "%08x%08x%08x", rd(), rd(), rd());
    pending = text;
  }
  const std::string request_id = pending;
  const auto answered = [&] { lease_request_ids_.erase(slot); };
  // The client waits longer than the server's long poll, so a quiet queue is not an error.
  // No answer (transport error): the id stays for the retry.
  BF_ASSIGN_OR_RETURN(auto r, post("/api/v1/agents/" + std::to_string(id) + "/lease",
                                   LeaseRequest{slot, wait_s, request_id}, token, std::chrono::seconds(wait_s + 30)));
  if (r.status != 200) {
    answered();
    return http::error_for_response(r, "lease");
  }
  auto answer = decode_lease_answer(r.body);
  if (!answer.ok()) return unreadable(answer.error());  // a retry gets the same lease back
  answered();
  return answer;
}

bool CoordinatorClient::has_unanswered_poll(const std::string& slot) const {
  auto it = lease_request_ids_.find(slot);
  return it != lease_request_ids_.end() && !it->second.empty();
}

Result<LeaseState> CoordinatorClient::progress(std::int64_t job_id, const std::string& lease_id,
                                               std::string_view phase) {
  const auto [id, token] = identity_.get();
  BF_ASSIGN_OR_RETURN(auto r, post("/api/v1/jobs/" + std::to_string(job_id) + "/progress",
                                   ProgressRequest{lease_id, std::string(phase), {}, {}}, token, 30s));
  if (r.status == 200 || r.status == 409) return renewal_of(r);
  return http::error_for_response(r, "progress");
}

Result<HeartbeatResponse> CoordinatorClient::heartbeat(const std::vector<LeaseRef>& leases, bool draining) {
  const auto [id, token] = identity_.get();
  BF_ASSIGN_OR_RETURN(auto r, post("/api/v1/agents/" + std::to_string(id) + "/heartbeat",
                                   HeartbeatRequest{leases, draining}, token, 30s));
  if (r.status != 200) return http::error_for_response(r, "heartbeat");
  auto answer = decode_heartbeat_answer(r.body, leases.size());
  if (!answer.ok()) return unreadable(answer.error());
  return answer;
}

Result<UploadAnswer> CoordinatorClient::upload(const SpoolEntry& e) {
  const auto [id, token] = identity_.get();
  BF_ASSIGN_OR_RETURN(auto r, post("/api/v1/jobs/" + std::to_string(e.job_id) + "/result",
                                   ResultRequest{e.lease_id, e.attempt, e.result}, token, 60s));
  if (r.status == 200 || r.status == 201) return UploadAnswer{Upload::kAcknowledged, ""};
  if (r.status == 409 || r.status == 404) return UploadAnswer{Upload::kRefused, r.problem_detail()};
  if (r.status == 400 || r.status == 413) return UploadAnswer{Upload::kInvalid, r.problem_detail()};
  return http::error_for_response(r, "result upload");
}

Status CoordinatorClient::release(std::int64_t job_id, const std::string& lease_id) {
  const auto [id, token] = identity_.get();
  BF_ASSIGN_OR_RETURN(
      auto r, post("/api/v1/jobs/" + std::to_string(job_id) + "/release", ReleaseRequest{lease_id}, token, 10s));
  if (r.status == 200 || r.status == 409) return Status::Ok();  // 409: nothing left to release
  return http::error_for_response(r, "release");
}

}  // namespace benchfleet::agent
