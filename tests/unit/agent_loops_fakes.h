// The fakes agent_loops_test drives AgentLoops (agent/daemon/agent_loops.h) with: a coordinator
// that answers as each test scripts it and records every request, a job runner and a clock
// whose waits complete at once. Single-threaded, like the tests.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "agent/daemon/agent_loops.h"

namespace benchfleet::agent::fakes {

inline Error unavailable() { return Error{ErrorCode::kUnavailable, "connection refused", {}}; }
inline Error unauthenticated() { return Error{ErrorCode::kUnauthenticated, "unknown agent token", {}}; }

inline LeasedJob job(std::int64_t id) {
  LeasedJob j;
  j.job_id = id;
  j.run_id = 1;
  j.attempt = 1;
  j.lease_id = "L" + std::to_string(id);
  j.spec.model = "resnet18";
  j.spec.torch_build = "local";
  j.timeout_s = 60;
  return j;
}

inline LeaseResponse granted(std::int64_t id) { return LeaseResponse{job(id), false, {}}; }
inline LeaseResponse no_work() { return LeaseResponse{std::nullopt, false, {}}; }

// The coordinator: answers by the handlers a test sets, and writes every request it gets to
// `requests`, one line each, with the token it carried. A token other than `valid_token` is
// answered 401 (the coordinator forgot the agent).
struct FakeCoordinator {
  std::string valid_token = "t1";
  int enrolments = 0;
  std::vector<std::string> requests;
  std::vector<std::string> held_tokens;  // the agent token each enrolment showed ("" for none)
  std::vector<std::string> keys;         // and the agent key

  std::function<Result<EnrollResponse>()> on_enroll = [this]() -> Result<EnrollResponse> {
    return EnrollResponse{1, "t" + std::to_string(enrolments + 1), {}};
  };
  std::function<Result<LeaseResponse>(int poll)> on_lease = [](int) -> Result<LeaseResponse> { return no_work(); };
  std::function<Result<LeaseState>()> on_progress = []() -> Result<LeaseState> { return LeaseState::kActive; };
  std::function<Result<HeartbeatResponse>(const std::vector<LeaseRef>&)> on_heartbeat =
      [](const std::vector<LeaseRef>& leases) -> Result<HeartbeatResponse> {
    HeartbeatResponse r;
    for (const auto& l : leases) r.leases.push_back({l.job_id, l.lease_id, LeaseState::kActive, std::nullopt});
    return r;
  };
  std::function<Result<UploadAnswer>(const SpoolEntry&)> on_upload = [](const SpoolEntry&) -> Result<UploadAnswer> {
    return UploadAnswer{Upload::kAcknowledged, ""};
  };
  int polls = 0;
  int last_wait_s = -1;  // the wait the last lease poll asked for
  // Called once the requests pass 200: a loop that would never end (a rule broken) is aborted,
  // so its test fails on what it expects instead of hanging.
  std::function<void()> on_runaway;
};

class FakeClient final : public CoordinatorApi {
 public:
  FakeClient(FakeCoordinator& c, AgentIdentity& identity) : c_(c), identity_(identity) {}

  Result<EnrollResponse> enroll(const AgentDescriptor&, const std::string& enrollment_token,
                                const EnrolmentProof& proof) override {
    c_.requests.push_back("enroll " + enrollment_token);
    c_.held_tokens.push_back(proof.token);
    c_.keys.push_back(proof.key);
    auto e = c_.on_enroll();
    if (e.ok()) {
      ++c_.enrolments;
      c_.valid_token = e->agent_token;
      identity_.set(e->agent_id, e->agent_token);
    }
    return e;
  }
  Result<LeaseResponse> lease(const std::string& slot, int wait_s) override {
    if (!log_and_check("lease " + slot + " wait=" + std::to_string(wait_s))) return unauthenticated();
    c_.last_wait_s = wait_s;
    return c_.on_lease(++c_.polls);
  }
  bool has_unanswered_poll(const std::string&) const override { return false; }
  Result<LeaseState> progress(std::int64_t job_id, const std::string& lease_id, std::string_view phase) override {
    if (!log_and_check("progress " + std::to_string(job_id) + ":" + lease_id + " " + std::string(phase))) {
      return unauthenticated();
    }
    return c_.on_progress();
  }
  Result<HeartbeatResponse> heartbeat(const std::vector<LeaseRef>& leases, bool draining) override {
    std::string line = "heartbeat [";
    for (const auto& l : leases) line += std::to_string(l.job_id) + ":" + l.lease_id + " ";
    line += "] draining=" + std::to_string(draining);
    if (!log_and_check(line)) return unauthenticated();
    return c_.on_heartbeat(leases);
  }
  Result<UploadAnswer> upload(const SpoolEntry& e) override {
    if (!log_and_check("upload " + std::to_string(e.job_id) + ":" + e.lease_id +
                       " attempt=" + std::to_string(e.attempt) + " " + std::string(to_string(e.result.status)))) {
      return unauthenticated();
    }
    return c_.on_upload(e);
  }
  Status release(std::int64_t job_id, const std::string& lease_id) override {
    if (!log_and_check("release " + std::to_string(job_id) + ":" + lease_id)) return unauthenticated();
    return Status::Ok();
  }

 private:
  // Records the request with its token; false when the token is not (or no longer) valid.
  bool log_and_check(const std::string& line) {
    const std::string token = identity_.get().second;
    c_.requests.push_back(line + " token=" + token);
    if (c_.requests.size() == 200 && c_.on_runaway) c_.on_runaway();
    return token == c_.valid_token;
  }
  FakeCoordinator& c_;
  AgentIdentity& identity_;
};

// The job runner: runs `body` in the slot's thread, as the real one would the worker.
class FakeRunner final : public JobRunner {
 public:
  std::function<std::optional<JobResult>(const LeasedJob&, const KeepGoing&)> body =
      [](const LeasedJob&, const KeepGoing&) -> std::optional<JobResult> { return JobResult{}; };
  std::vector<std::int64_t> ran;

  std::optional<JobResult> run(const LeasedJob& job, const SlotDescriptor&, const KeepGoing& keep_going) override {
    ran.push_back(job.job_id);
    return body(job, keep_going);
  }
};

// Time that passes only when the loops wait (each wait completes at once) or a test advances
// it. Records every wait asked for.
class FakeWaitClock final : public WaitClock {
 public:
  std::vector<std::int64_t> waits_ms;

  std::chrono::steady_clock::time_point now() const override { return now_; }
  void sleep_for(std::chrono::milliseconds d, const std::function<bool()>& woken) override {
    waits_ms.push_back(d.count());
    if (!woken()) now_ += d;
  }
  void wake_all() override {}
  void advance(std::chrono::milliseconds d) { now_ += d; }

 private:
  std::chrono::steady_clock::time_point now_{};
};

}  // namespace benchfleet::agent::fakes
