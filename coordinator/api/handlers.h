// Request handlers, one function per route (see api.cpp for the route table, whose guards check
// access before a handler runs). Synchronous
// handlers return the response or an Error, which the route table turns into problem+json
// (error_response); the long-poll lease handler is a coroutine and answers errors itself.
#pragma once

#include <boost/asio/awaitable.hpp>

#include "coordinator/api/common.h"

namespace benchfleet::api {

// The arrival time of the agent request this thread is handling: set by the agent lane around
// the handler (api.cpp agent_offload), read by the handlers that judge a lease (heartbeat,
// progress, result) so the lease is judged as of the request's arrival. 0 outside one.
class AgentRequestArrival {
 public:
  explicit AgentRequestArrival(TimestampMs at) : was_(current_) { current_ = at; }
  ~AgentRequestArrival() { current_ = was_; }
  AgentRequestArrival(const AgentRequestArrival&) = delete;
  AgentRequestArrival& operator=(const AgentRequestArrival&) = delete;
  static TimestampMs current() { return current_; }

 private:
  static inline thread_local TimestampMs current_ = 0;
  TimestampMs was_;
};

// runs_handlers.cpp
Result<http::Response> submit_run(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> list_runs(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> get_run(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> cancel_run(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> list_results(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> list_jobs(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> get_result(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> run_report(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> compare_runs(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);

// models_handlers.cpp: registered models and artifacts (docs/models.md)
Result<http::Response> list_models(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> get_model(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> register_model(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> delete_model(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
// The body arrives through the route's sink (an ArtifactUpload), already on disk and hashed.
Result<http::Response> upload_artifact(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
// An upload's query (kind, name), checked with its headers, before its body is read.
Status check_upload_query(const http::RouteMatch& m);
Result<http::Response> list_artifacts(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
// Streams the artifact's file; agents (their token) and readers may fetch it.
Result<http::Response> get_artifact(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);

// agents_handlers.cpp
Result<http::Response> enroll_agent(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> agent_heartbeat(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
boost::asio::awaitable<http::Response> agent_lease(ApiContext& ctx, const http::Request& req,
                                                   const http::RouteMatch& m);
Result<http::Response> job_progress(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> job_release(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> job_result(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> list_agents(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> drain_agent(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
// The operator allows the next enrolment under the agent's name without its token.
Result<http::Response> approve_agent(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);

// history_handlers.cpp: schedules, series, regressions
Result<http::Response> create_schedule(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> list_schedules(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> get_schedule(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> schedule_summary(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> pause_schedule(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> resume_schedule(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> delete_schedule(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> list_series(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> get_series(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> list_regressions(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> get_regression(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> acknowledge_regression(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> resolve_regression(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> reopen_regression(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);

// queue_handlers.cpp: the queue by GPU class and torch build (the Slurm launcher's input)
Result<http::Response> queue_summary(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);

// service_handlers.cpp
Result<http::Response> healthz(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> metrics(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
Result<http::Response> openapi(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);
// GET / (the index) and any other path no route matches: a file of config.web_root.
Result<http::Response> web_asset(ApiContext& ctx, const http::Request& req, const http::RouteMatch& m);

}  // namespace benchfleet::api
