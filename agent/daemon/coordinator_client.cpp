#include "agent/daemon/coordinator_client.h"

#include "common/codecs.h"
#include "common/json_reader.h"

namespace benchfleet::agent {
namespace {

using namespace std::chrono_literals;

Intervals intervals_of(const nlohmann::json& j) {
  Intervals i;
  if (j.contains("heartbeat_interval_s")) i.heartbeat_interval_s = j["heartbeat_interval_s"].get<int>();
  if (j.contains("lease_ttl_s")) i.lease_ttl_s = j["lease_ttl_s"].get<int>();
  if (j.contains("long_poll_timeout_s")) i.long_poll_timeout_s = j["long_poll_timeout_s"].get<int>();
  return i;
}

Renewal renewal_of(const http::ClientResponse& r) {
  if (r.status == 409) {
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (j.is_object() && j.value("reason", "") == "cancelled") return Renewal::kCancelled;
    return Renewal::kLost;
  }
  return Renewal::kActive;
}

}  // namespace

void AgentCredentials::set(std::int64_t agent_id, std::string token) {
  std::lock_guard lock(mu_);
  agent_id_ = agent_id;
  token_ = std::move(token);
}

std::pair<std::int64_t, std::string> AgentCredentials::get() const {
  std::lock_guard lock(mu_);
  return {agent_id_, token_};
}

bool AgentCredentials::valid() const {
  std::lock_guard lock(mu_);
  return agent_id_ > 0 && !token_.empty();
}

CoordinatorClient::CoordinatorClient(std::string base_url, AgentCredentials& credentials)
    : http_(std::move(base_url)), credentials_(credentials) {}

Result<http::ClientResponse> CoordinatorClient::post(const std::string& target, const nlohmann::json& body,
                                                     const std::string& bearer, std::chrono::milliseconds timeout) {
  return http_.post_json(target, body, bearer, timeout);
}

Result<Enrollment> CoordinatorClient::enroll(const AgentDescriptor& d, const std::string& enrollment_token) {
  BF_ASSIGN_OR_RETURN(auto r, post("/api/v1/agents/enroll", d, enrollment_token, 30s));
  if (r.status != 201) return http::error_for_response(r, "enrolment");
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (!j.is_object() || !j.contains("agent_id") || !j.contains("agent_token")) {
    return Error::internal("enrolment: unexpected answer " + r.body.substr(0, 200));
  }
  Enrollment e{j["agent_id"].get<std::int64_t>(), j["agent_token"].get<std::string>(), intervals_of(j)};
  credentials_.set(e.agent_id, e.token);
  return e;
}

Result<LeaseAnswer> CoordinatorClient::lease(const std::string& slot, int wait_s) {
  const auto [id, token] = credentials_.get();
  // The client waits longer than the server's long poll, so a quiet queue is not an error.
  BF_ASSIGN_OR_RETURN(auto r, post("/api/v1/agents/" + std::to_string(id) + "/lease", {{"slot", slot}, {"wait_s", wait_s}},
                                   token, std::chrono::seconds(wait_s + 30)));
  if (r.status != 200) return http::error_for_response(r, "lease");
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  LeaseAnswer answer;
  answer.intervals = intervals_of(j);
  answer.draining = j.value("draining", false);
  if (j.contains("job") && j["job"].is_object()) {
    const auto& job = j["job"];
    LeasedJob l;
    l.job_id = job.at("id").get<std::int64_t>();
    l.run_id = job.at("run_id").get<std::int64_t>();
    l.attempt = job.at("attempt").get<int>();
    l.lease_id = job.at("lease_id").get<std::string>();
    BF_ASSIGN_OR_RETURN(l.spec, decode<JobSpec>(job.at("spec"), "job.spec"));
    BF_ASSIGN_OR_RETURN(l.measurement, decode<MeasurementSpec>(job.at("measurement"), "job.measurement"));
    if (job.contains("memory_limit_mb") && job["memory_limit_mb"].is_number_integer()) {
      l.memory_limit_mb = job["memory_limit_mb"].get<std::int64_t>();
    }
    l.timeout_s = job.value("timeout_s", 1800);
    answer.job = std::move(l);
  }
  return answer;
}

Result<Renewal> CoordinatorClient::progress(std::int64_t job_id, const std::string& lease_id, std::string_view phase) {
  const auto [id, token] = credentials_.get();
  BF_ASSIGN_OR_RETURN(auto r, post("/api/v1/jobs/" + std::to_string(job_id) + "/progress",
                                   {{"lease_id", lease_id}, {"phase", phase}}, token, 30s));
  if (r.status == 200 || r.status == 409) return renewal_of(r);
  return http::error_for_response(r, "progress");
}

Result<std::pair<std::vector<Renewal>, bool>> CoordinatorClient::heartbeat(const std::vector<HeartbeatLease>& leases,
                                                                          bool draining) {
  const auto [id, token] = credentials_.get();
  nlohmann::json list = nlohmann::json::array();
  for (const auto& l : leases) list.push_back({{"job_id", l.job_id}, {"lease_id", l.lease_id}});
  BF_ASSIGN_OR_RETURN(auto r, post("/api/v1/agents/" + std::to_string(id) + "/heartbeat",
                                   {{"leases", list}, {"draining", draining}}, token, 30s));
  if (r.status != 200) return http::error_for_response(r, "heartbeat");
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  std::vector<Renewal> states;
  for (const auto& l : j.value("leases", nlohmann::json::array())) {
    const std::string state = l.value("state", "lost");
    states.push_back(state == "active" ? Renewal::kActive : state == "cancelled" ? Renewal::kCancelled : Renewal::kLost);
  }
  return std::make_pair(std::move(states), j.value("drain", false));
}

Result<Upload> CoordinatorClient::upload(const SpoolEntry& e) {
  const auto [id, token] = credentials_.get();
  BF_ASSIGN_OR_RETURN(auto r, post("/api/v1/jobs/" + std::to_string(e.job_id) + "/result",
                                   {{"lease_id", e.lease_id}, {"attempt", e.attempt}, {"result", e.result}}, token,
                                   60s));
  if (r.status == 200 || r.status == 201) return Upload::kAcknowledged;
  if (r.status == 409 || r.status == 404) return Upload::kRefused;
  return http::error_for_response(r, "result upload");
}

Status CoordinatorClient::release(std::int64_t job_id, const std::string& lease_id) {
  const auto [id, token] = credentials_.get();
  BF_ASSIGN_OR_RETURN(auto r, post("/api/v1/jobs/" + std::to_string(job_id) + "/release", {{"lease_id", lease_id}},
                                   token, 10s));
  if (r.status == 200 || r.status == 409) return Status::Ok();  // 409: nothing left to release
  return http::error_for_response(r, "release");
}

}  // namespace benchfleet::agent
