// Handlers for the agent protocol (enrol, heartbeat, lease, progress, result) and for
// operators looking at or draining agents.
#include <algorithm>
#include <memory>

#include <spdlog/spdlog.h>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "common/agent_protocol.h"
#include "common/codecs.h"
#include "common/http/problem.h"
#include "common/result_checks.h"
#include "coordinator/api/handlers.h"
#include "coordinator/rules/tokens.h"
#include "coordinator/services/blocking.h"
#include "coordinator/store/group_commit.h"

namespace benchfleet::api {
namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using http::json_response;

constexpr auto kPollStep = std::chrono::milliseconds(50);

// 409 telling an agent to stop working on a job: its lease is gone or its run was cancelled.
http::Response lease_conflict(std::string_view reason, const std::string& detail, const http::Request& req) {
  return http::problem(bhttp::status::conflict, "Conflict", detail, req,
                       {{"type", "https://benchfleet.dev/problems/" + std::string(reason)}, {"reason", reason}});
}

http::Response renewal_conflict(LeaseState state, std::int64_t job_id, const http::Request& req) {
  if (state == LeaseState::kCancelled) {
    return lease_conflict("cancelled", "job " + std::to_string(job_id) + " was cancelled: stop it", req);
  }
  return lease_conflict("lease_lost",
                        "this lease of job " + std::to_string(job_id) + " is no longer current: stop the job", req);
}

Intervals intervals(const ApiContext& ctx) {
  return {ctx.config.heartbeat_interval_s, ctx.config.lease_ttl_s, ctx.config.long_poll_timeout_s};
}

// The answer to a lease poll: the job granted (or none), whether the agent drains.
http::Response lease_answer(const ApiContext& ctx, const store::LeaseAnswer& answer, const http::Request& req) {
  return json_response(bhttp::status::ok, lease_response_json(answer, intervals(ctx), *ctx.models.catalog()), req);
}

// Undoes a new grant that did not reach its agent (the job goes back to the queue, no attempt
// used). A lease handed over again is left alone: an earlier answer may have delivered it.
void withdraw_undelivered(ApiContext& ctx, std::int64_t agent_id, const store::LeaseGrant& grant) {
  if (grant.redelivered) return;
  const LeaseRef ref{grant.job_id, grant.lease_id};
  auto withdrawn = ctx.store.leases().withdraw_lease(agent_id, ref);
  if (!withdrawn.ok()) {
    spdlog::warn("withdrawing undelivered lease of job {} failed: {}", ref.job_id, withdrawn.error().message);
  } else if (*withdrawn) {
    spdlog::info("lease of job {} for agent {} was not delivered; the job is queued again", ref.job_id, agent_id);
  }
}

// The authenticated agent and its decoded lease request.
struct CheckedLease {
  std::int64_t agent_id = 0;
  LeaseRequest request;
};

Result<CheckedLease> check_lease_request(const ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const std::int64_t agent_id, admitted_agent(m));
  BF_ASSIGN_OR_RETURN(const nlohmann::json body, json_body(ctx, req));
  BF_ASSIGN_OR_RETURN(LeaseRequest request, decode<LeaseRequest>(body));
  return CheckedLease{agent_id, std::move(request)};
}

// What an agent's report on one of its jobs (progress, result) starts from: the authenticated
// agent, the {id} job of the path and the JSON body. Whether the agent holds that job is the
// store's question (the lease id in the body).
struct JobReport {
  std::int64_t agent_id = 0;
  std::int64_t job_id = 0;
  nlohmann::json body;
};

Result<JobReport> read_job_report(const ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const std::int64_t agent_id, admitted_agent(m));
  BF_ASSIGN_OR_RETURN(const std::int64_t job_id, id_param(m, "id"));
  BF_ASSIGN_OR_RETURN(nlohmann::json body, json_body(ctx, req));
  return JobReport{agent_id, job_id, std::move(body)};
}

}  // namespace

Result<http::Response> enroll_agent(ApiContext& ctx, const http::Request& req, const http::RouteMatch&) {
  // The enrolment token is checked like the operator token, but against its own secret.
  const std::string_view header = req[bhttp::field::authorization];
  const std::string_view token = rules::bearer_token(header);
  if (token.empty() || !rules::constant_time_equal(token, ctx.enrollment_token)) {
    return Error{ErrorCode::kUnauthenticated,
                 "enrolment needs the enrollment token: send \"Authorization: Bearer <token>\"",
                 {}};
  }
  BF_ASSIGN_OR_RETURN(const nlohmann::json body, json_body(ctx, req));
  BF_ASSIGN_OR_RETURN(const AgentDescriptor descriptor, decode<AgentDescriptor>(body));
  if (auto err = check_descriptor_text(descriptor)) return *err;
  // Enrolling under a name already enrolled takes over its id and its live leases: the agent
  // shows the token it holds (X-Agent-Token), or an operator approved it, unless configured open.
  std::optional<std::int64_t> proven;
  if (const std::string_view current = req[kAgentTokenHeader]; !current.empty()) {
    auto held = authenticate_agent_token(ctx, current);
    if (!held.ok() && held.error().code != ErrorCode::kUnauthenticated) return held.error();
    if (held.ok()) proven = *held;
  }
  const std::string_view key = req[kAgentKeyHeader];
  if (!key.empty() && (key.size() < 16 || key.size() > 256 ||
                       !std::all_of(key.begin(), key.end(), [](char c) { return c > ' ' && c < 0x7f; }))) {
    return Error::invalid(std::string(kAgentKeyHeader), "must be 16 to 256 printable ASCII characters");
  }
  std::optional<store::AgentCredentials> key_hash;
  if (!key.empty()) {
    BF_ASSIGN_OR_RETURN(const auto stored, ctx.store.agents().agent_key(descriptor.name));
    if (stored && !stored->hash.empty() &&
        rules::constant_time_equal(rules::hash_token(stored->salt, key), stored->hash)) {
      proven = stored->agent_id;
    }
    key_hash = store::AgentCredentials{rules::random_bytes(16), {}};
    key_hash->hash = rules::hash_token(key_hash->salt, key);
  }
  const store::EnrolmentClaim claim =
      ctx.config.reenrolment == "open" ? store::EnrolmentClaim::anyone() : store::EnrolmentClaim::holder_of(proven);
  const std::string secret = rules::generate_secret();
  store::AgentCredentials creds;
  creds.salt = rules::random_bytes(16);
  creds.hash = rules::hash_token(creds.salt, secret);
  BF_ASSIGN_OR_RETURN(const std::int64_t id, ctx.store.agents().enroll_agent(descriptor, creds, claim, key_hash));
  const EnrollResponse out{id, compose_agent_token(id, secret), intervals(ctx)};
  return json_response(bhttp::status::created, out, req);
}

Result<http::Response> agent_heartbeat(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const std::int64_t agent_id, admitted_agent(m));
  BF_ASSIGN_OR_RETURN(const nlohmann::json body, json_body(ctx, req));

  BF_ASSIGN_OR_RETURN(const HeartbeatRequest request, decode<HeartbeatRequest>(body));
  std::vector<LeaseRef> leases;
  for (const auto& l : request.leases) leases.push_back({l.job_id, l.lease_id});
  BF_RETURN_IF_ERROR(ctx.store.agents().set_self_draining(agent_id, request.draining));
  BF_ASSIGN_OR_RETURN(const auto renewals,
                      ctx.store.leases().heartbeat(agent_id, leases, AgentRequestArrival::current()));
  BF_ASSIGN_OR_RETURN(const auto agent, ctx.store.agents().get_agent(agent_id));

  HeartbeatResponse response;
  response.drain = agent.draining;
  for (std::size_t i = 0; i < leases.size(); ++i) {
    const store::Renewal& r = renewals[i];
    LeaseRenewal& renewal = response.leases.emplace_back();
    renewal.job_id = leases[i].job_id;
    renewal.lease_id = leases[i].lease_id;
    renewal.state = r.state;
    if (r.state == LeaseState::kActive) renewal.expires_at = r.expires_at;
  }
  // The intervals ride along, as in every answer to an agent (agents read them elsewhere).
  nlohmann::json out = intervals(ctx);
  out.update(nlohmann::json(response));
  return json_response(bhttp::status::ok, out, req);
}

asio::awaitable<http::Response> agent_lease(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  // Authentication reads the store too, so it runs on the blocking executor as well.
  auto checked = co_await services::run_blocking(ctx.agent_lane, [&] {
    const store::GroupCommit::FirstInLine first;
    return check_lease_request(ctx, req, m);
  });
  if (!checked.ok()) co_return error_response(checked.error(), req);
  const std::int64_t agent_id = checked->agent_id;
  const LeaseRequest& lease_req = checked->request;

  const int wait_s =
      std::min(lease_req.wait_s.value_or(ctx.config.long_poll_timeout_s), ctx.config.long_poll_timeout_s);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(wait_s);
  // A lease goes only to a client still there: one that left (closed its connection) while
  // waiting gets nothing, and a new grant that does not reach it is withdrawn.
  const std::shared_ptr<http::Exchange> exchange = m.exchange;
  const auto client_gone = [&exchange] { return exchange && exchange->client_gone(); };
  asio::steady_timer timer(co_await asio::this_coro::executor);
  while (true) {
    if (client_gone()) co_return lease_answer(ctx, store::LeaseAnswer{}, req);  // nobody reads it
    const auto generation = ctx.work.generation();
    auto answer = co_await services::run_blocking(ctx.agent_lane, [&] {
      const store::GroupCommit::FirstInLine first;
      return ctx.store.leases().lease(agent_id, lease_req.slot, lease_req.request_id);
    });
    if (!answer.ok()) co_return error_response(answer.error(), req);
    if (answer->grant && client_gone()) {
      co_await services::run_blocking(ctx.agent_lane, [&] {
        const store::GroupCommit::FirstInLine first;
        withdraw_undelivered(ctx, agent_id, *answer->grant);
        return 0;
      });
      co_return lease_answer(ctx, store::LeaseAnswer{}, req);
    }
    if (answer->grant || answer->draining || ctx.stopping.load() || std::chrono::steady_clock::now() >= deadline) {
      if (answer->grant && !answer->grant->redelivered && exchange) {
        exchange->on_response_written([&ctx, agent_id, grant = *answer->grant](bool delivered) {
          if (delivered) return;
          asio::post(ctx.agent_lane, [&ctx, agent_id, grant] {
            const store::GroupCommit::FirstInLine first;
            withdraw_undelivered(ctx, agent_id, grant);
          });
        });
      }
      co_return lease_answer(ctx, *answer, req);
    }
    // Sleep until work may have appeared (generation moved), the deadline, shutdown, or the
    // client leaving.
    while (ctx.work.generation() == generation && !ctx.stopping.load() && !client_gone() &&
           std::chrono::steady_clock::now() < deadline) {
      timer.expires_after(
          std::min<std::chrono::steady_clock::duration>(kPollStep, deadline - std::chrono::steady_clock::now()));
      boost::system::error_code ec;
      co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
  }
}

Result<http::Response> job_progress(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const JobReport report, read_job_report(ctx, req, m));
  BF_ASSIGN_OR_RETURN(const ProgressRequest progress, decode<ProgressRequest>(report.body));
  const LeaseRef ref{report.job_id, progress.lease_id};

  BF_ASSIGN_OR_RETURN(const auto renewal,
                      ctx.store.leases().renew(report.agent_id, ref, AgentRequestArrival::current()));
  if (renewal.state != LeaseState::kActive) return renewal_conflict(renewal.state, report.job_id, req);
  return json_response(bhttp::status::ok, {{"state", "active"}, {"lease_expires_at", format_time(renewal.expires_at)}},
                       req);
}

Result<http::Response> job_release(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const JobReport report, read_job_report(ctx, req, m));
  BF_ASSIGN_OR_RETURN(const ReleaseRequest release, decode<ReleaseRequest>(report.body));
  const LeaseRef ref{report.job_id, release.lease_id};
  BF_ASSIGN_OR_RETURN(const auto state, ctx.store.leases().release(report.agent_id, ref));
  if (state != LeaseState::kActive) return renewal_conflict(state, report.job_id, req);
  return json_response(bhttp::status::ok, {{"state", "released"}}, req);
}

Result<http::Response> job_result(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const JobReport report, read_job_report(ctx, req, m));
  BF_ASSIGN_OR_RETURN(const ResultRequest posted, decode<ResultRequest>(report.body));
  // Accepted or refused (400, naming the field) by one rule, rules::plan_ingest, as the store
  // records it.
  const LeaseRef ref{report.job_id, posted.lease_id};
  const int attempt = posted.attempt;
  const JobResult& result = posted.result;

  BF_ASSIGN_OR_RETURN(const auto outcome, ctx.store.results().record_result(report.agent_id, ref, attempt, result,
                                                                            AgentRequestArrival::current()));
  const std::string job = std::to_string(report.job_id);
  switch (outcome.kind) {
    case store::RecordKind::kStored:
      if (ctx.on_result_stored) ctx.on_result_stored();
      return json_response(
          bhttp::status::created,
          {{"result_id", outcome.result_id}, {"duplicate", false}, {"implied_oom", outcome.implied_oom}}, req);
    case store::RecordKind::kDuplicate:
      return json_response(bhttp::status::ok, {{"result_id", outcome.result_id}, {"duplicate", true}}, req);
    case store::RecordKind::kMismatch:
      return lease_conflict(
          "result_mismatch",
          "a different result for attempt " + std::to_string(attempt) + " of job " + job + " is already stored", req);
    case store::RecordKind::kLost:
      return renewal_conflict(LeaseState::kLost, report.job_id, req);
    case store::RecordKind::kCancelled:
      return renewal_conflict(LeaseState::kCancelled, report.job_id, req);
    case store::RecordKind::kNotFound:
      return Error::not_found("job " + job + " does not exist");
  }
  return Error::internal("unhandled result outcome");
}

Result<http::Response> list_agents(ApiContext& ctx, const http::Request& req, const http::RouteMatch&) {
  BF_ASSIGN_OR_RETURN(const auto agents, ctx.store.agents().list_agents());
  nlohmann::json out = nlohmann::json::array();
  const TimestampMs now = ctx.clock.now_ms();
  for (const auto& a : agents) out.push_back(agent_json(a, now, ctx.config.heartbeat_interval_s));
  return json_response(bhttp::status::ok, {{"agents", out}}, req);
}

Result<http::Response> drain_agent(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  bool draining = true;
  if (!req.body().empty()) {
    BF_ASSIGN_OR_RETURN(const nlohmann::json body, json_body(ctx, req));
    JsonReader r(body, "");
    r.optional("draining", draining);
    BF_RETURN_IF_ERROR(r.finish());
  }
  BF_RETURN_IF_ERROR(ctx.store.agents().set_draining(id, draining));
  BF_ASSIGN_OR_RETURN(const auto agent, ctx.store.agents().get_agent(id));
  return json_response(bhttp::status::ok, agent_json(agent, ctx.clock.now_ms(), ctx.config.heartbeat_interval_s), req);
}

Result<http::Response> approve_agent(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m) {
  BF_ASSIGN_OR_RETURN(const std::int64_t id, id_param(m, "id"));
  BF_RETURN_IF_ERROR(ctx.store.agents().approve_reenrolment(id));
  BF_ASSIGN_OR_RETURN(const auto agent, ctx.store.agents().get_agent(id));
  return json_response(bhttp::status::ok, agent_json(agent, ctx.clock.now_ms(), ctx.config.heartbeat_interval_s), req);
}

}  // namespace benchfleet::api
