// Helpers shared by the API handlers: authentication, body and parameter parsing, JSON views.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/agent_protocol.h"
#include "common/http/router.h"
#include "common/http/types.h"
#include "common/json_optional.h"
#include "common/result.h"
#include "common/time_format.h"
#include "coordinator/api/api.h"
#include "coordinator/api/query_params.h"
#include "coordinator/rules/report.h"
#include "coordinator/store/run_types.h"

namespace benchfleet::api {

// Operator token required (writes). Error is kUnauthenticated / kPermissionDenied.
Status require_operator(const ApiContext& ctx, const http::Request& req);
// The enrollment token required (enrolment). Error is kUnauthenticated.
Status require_enrollment(const ApiContext& ctx, const http::Request& req);
// Reads: public unless config.public_reads is false, then the operator token.
Status require_reader(const ApiContext& ctx, const http::Request& req);
// The request carries the operator, reader or enrollment token (agent tokens are checked by
// authenticate_agent, against the store).
bool holds_client_token(const ApiContext& ctx, const http::Request& req);
// The agent id a valid agent token ("bfa_<id>_<secret>") belongs to.
Result<std::int64_t> authenticate_agent(const ApiContext& ctx, const http::Request& req);
// The same check of an agent token ("bfa_<id>_<secret>") given on its own.
Result<std::int64_t> authenticate_agent_token(const ApiContext& ctx, std::string_view token);
// As above, and the token's agent must be the {id} in the path.
Result<std::int64_t> authenticate_agent_path(const ApiContext& ctx, const http::Request& req,
                                             const http::RouteMatch& match);
// The principal the agent guards name (http::Admission::principal): "agent:<id>".
std::string agent_principal(std::int64_t agent_id);
// The agent the route's guard authenticated (its token; on /agents/{id}/... also the path's
// agent), read from the principal it handed over: handlers do not check the token again.
// kUnauthenticated on a route without an agent guard.
Result<std::int64_t> admitted_agent(const http::RouteMatch& match);
// "bfa_<id>_<secret>".
std::string compose_agent_token(std::int64_t agent_id, const std::string& secret);

// The body parsed as JSON (whatever the content type says), refusing nesting beyond the
// configured depth.
Result<nlohmann::json> json_body(const ApiContext& ctx, const http::Request& req);

// ?stat= of a report, comparison or summary: mean or median, the median when absent
// (rules::kDefaultStat); anything else a 400 naming query.stat.
Result<rules::Stat> stat_query(const http::RouteMatch& m);
// ?format= of a report or comparison: json (absent), md or csv; anything else a 400.
Result<std::string> format_query(const http::RouteMatch& m);

// The comparison tables of a run (rules::build_report over its stored cells, labelled from the
// catalog).
Result<rules::Report> report_of_run(ApiContext& ctx, const store::RunInfo& run, rules::Stat stat, bool exclude_flagged);

// The jobs a submitted matrix (a run's, or a schedule's) expands to against the catalog and
// max_cells, refusing a shape-walk matrix with more batch sizes than a lease carries (64: agents
// refuse more, common/agent_protocol.cpp). Errors name the matrix's own fields ("batch_sizes").
Result<std::vector<JobSpec>> expand_submitted_matrix(const ApiContext& ctx, const MatrixSpec& spec);

nlohmann::json run_json(const store::RunInfo& run);
nlohmann::json agent_json(const store::AgentInfo& agent, TimestampMs now, int heartbeat_interval_s);
// A result without its samples.
nlohmann::json result_json(const store::ResultRow& row);
// A result's JSON around its samples array: before + samples text + after is result_json_text
// (so a large result's samples can be streamed between the two).
struct ResultJsonParts {
  std::string before, after;
};
ResultJsonParts result_json_parts(const store::ResultRow& row);
// Whether a piece of a stored samples text holds only the characters of a JSON array of numbers.
bool is_number_array_piece(std::string_view piece);
// A result as JSON text with its samples (result.samples_ms): the store's samples_json spliced
// in as it is, so 10^6 samples are copied once and never parsed. Error when the stored text is
// not a JSON array of numbers (it is only ever written so by the coordinator).
Result<std::string> result_json_text(const store::ResultRow& row);
nlohmann::json job_json(const store::JobRow& job);
nlohmann::json model_json(const CatalogModel& model);
// The answer to a lease poll (LeaseResponse): `answer` as agents read it (common/agent_protocol.h)
// plus job.model, the model the job names (model_json: its whole definition, which the agent
// builds it from; null for a model the coordinator does not know).
nlohmann::json lease_response_json(const store::LeaseAnswer& answer, const Intervals& intervals,
                                   const Catalog& catalog);

// Turns an Error into its problem+json response.
http::Response error_response(const Error& error, const http::Request& req);

}  // namespace benchfleet::api
