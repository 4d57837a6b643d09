#include "coordinator/api/common.h"

#include "common/codecs.h"
#include "common/http/problem.h"
#include "common/json_reader.h"
#include "common/matrix.h"
#include "coordinator/rules/tokens.h"

namespace benchfleet::api {
namespace {

namespace bhttp = boost::beast::http;

std::string_view authorization(const http::Request& req) {
  auto it = req.find(bhttp::field::authorization);
  return it == req.end() ? std::string_view() : std::string_view(it->value().data(), it->value().size());
}

Status check_token(const http::Request& req, const std::string& expected, std::string_view what) {
  const std::string_view token = rules::bearer_token(authorization(req));
  if (token.empty()) {
    return Error{
        ErrorCode::kUnauthenticated,
        std::string("this endpoint needs the ") + std::string(what) + " token: send \"Authorization: Bearer <token>\"",
        {}};
  }
  if (!rules::constant_time_equal(token, expected)) {
    return Error{ErrorCode::kUnauthenticated, std::string("the ") + std::string(what) + " token is not valid", {}};
  }
  return Status::Ok();
}

}  // namespace

Status require_operator(const ApiContext& ctx, const http::Request& req) {
  return check_token(req, ctx.operator_token, "operator");
}

Status require_enrollment(const ApiContext& ctx, const http::Request& req) {
  return check_token(req, ctx.enrollment_token, "enrollment");
}

Status require_reader(const ApiContext& ctx, const http::Request& req) {
  if (ctx.config.public_reads) return Status::Ok();
  // A reader token reads; the operator token does everything.
  if (const std::string_view token = rules::bearer_token(authorization(req));
      !token.empty() && rules::constant_time_equal(token, ctx.reader_token)) {
    return Status::Ok();
  }
  return check_token(req, ctx.operator_token, "reader or operator");
}

bool holds_client_token(const ApiContext& ctx, const http::Request& req) {
  const std::string_view token = rules::bearer_token(authorization(req));
  if (token.empty()) return false;
  bool held = false;  // every comparison made, so the time says nothing of which token matched
  for (const std::string* known : {&ctx.operator_token, &ctx.reader_token, &ctx.enrollment_token}) {
    held = (!known->empty() && rules::constant_time_equal(token, *known)) || held;
  }
  return held;
}

std::string compose_agent_token(std::int64_t agent_id, const std::string& secret) {
  return "bfa_" + std::to_string(agent_id) + "_" + secret;
}

Result<std::int64_t> authenticate_agent(const ApiContext& ctx, const http::Request& req) {
  return authenticate_agent_token(ctx, rules::bearer_token(authorization(req)));
}

Result<std::int64_t> authenticate_agent_token(const ApiContext& ctx, std::string_view token) {
  const Error unauthenticated{ErrorCode::kUnauthenticated, "the agent token is missing or not valid; re-enrol", {}};
  constexpr std::string_view kPrefix = "bfa_";
  if (token.substr(0, kPrefix.size()) != kPrefix) return unauthenticated;
  const std::string_view rest = token.substr(kPrefix.size());
  const auto sep = rest.find('_');
  std::int64_t agent_id = 0;
  if (sep == std::string_view::npos || !parse_int64(rest.substr(0, sep), agent_id)) return unauthenticated;
  auto creds = ctx.store.agents().agent_credentials(agent_id);
  if (!creds.ok()) {
    if (creds.error().code == ErrorCode::kNotFound) return unauthenticated;
    return creds.error();
  }
  if (!rules::constant_time_equal(rules::hash_token(creds->salt, rest.substr(sep + 1)), creds->hash)) {
    return unauthenticated;
  }
  return agent_id;
}

namespace {
constexpr std::string_view kAgentPrincipal = "agent:";
}  // namespace

std::string agent_principal(std::int64_t agent_id) { return std::string(kAgentPrincipal) + std::to_string(agent_id); }

Result<std::int64_t> admitted_agent(const http::RouteMatch& match) {
  std::int64_t agent_id = 0;
  if (!match.principal.starts_with(kAgentPrincipal) ||
      !parse_int64(std::string_view(match.principal).substr(kAgentPrincipal.size()), agent_id)) {
    // A route table without the agent guard on an agent route: the request is not let through.
    return Error{ErrorCode::kUnauthenticated, "the agent token is missing or not valid; re-enrol", {}};
  }
  return agent_id;
}

Result<std::int64_t> authenticate_agent_path(const ApiContext& ctx, const http::Request& req,
                                             const http::RouteMatch& match) {
  BF_ASSIGN_OR_RETURN(std::int64_t agent_id, authenticate_agent(ctx, req));
  BF_ASSIGN_OR_RETURN(std::int64_t path_id, id_param(match, "id"));
  if (agent_id != path_id) {
    return Error{ErrorCode::kPermissionDenied,
                 "this token belongs to agent " + std::to_string(agent_id) + ", not agent " + std::to_string(path_id),
                 {}};
  }
  return agent_id;
}

Result<nlohmann::json> json_body(const ApiContext& ctx, const http::Request& req) {
  if (req.body().empty()) return Error::invalid("", "the request needs a JSON body");
  return parse_json(req.body(), ctx.config.max_json_depth);
}

Result<rules::Stat> stat_query(const http::RouteMatch& m) {
  const auto text = str_query(m, "stat");
  if (!text) return rules::kDefaultStat;
  const auto stat = rules::parse_stat(*text);
  if (!stat) return Error::invalid("query.stat", "must be mean or median");
  return *stat;
}

Result<std::string> format_query(const http::RouteMatch& m) {
  std::string format = str_query(m, "format").value_or("json");
  if (format != "json" && format != "md" && format != "csv") {
    return Error::invalid("query.format", "must be json, md or csv");
  }
  return format;
}

Result<rules::Report> report_of_run(ApiContext& ctx, const store::RunInfo& run, rules::Stat stat,
                                    bool exclude_flagged) {
  BF_ASSIGN_OR_RETURN(auto cells, ctx.store.results().report_cells(run.id));
  rules::ReportInput input;
  input.run_id = run.id;
  input.run_name = run.name;
  input.matrix = run.spec;
  const std::shared_ptr<const Catalog> models = ctx.models.catalog();
  for (const auto& model : models->models()) input.labels.push_back({model.key(), model.display_name()});
  input.cells = std::move(cells);
  input.stat = stat;
  input.exclude_flagged = exclude_flagged;
  return rules::build_report(input);
}

Result<std::vector<JobSpec>> expand_submitted_matrix(const ApiContext& ctx, const MatrixSpec& spec) {
  return expand_matrix(spec, *ctx.models.catalog(), ExpansionLimits{ctx.config.max_cells});
}

nlohmann::json run_json(const store::RunInfo& run) {
  nlohmann::json jobs = nlohmann::json::object();
  for (JobStatus s : all_job_statuses()) {
    auto it = run.jobs_by_status.find(s);
    jobs[std::string(to_string(s))] = it == run.jobs_by_status.end() ? 0 : it->second;
  }
  nlohmann::json results = nlohmann::json::object();
  for (ResultStatus s : all_result_statuses()) {
    auto it = run.results_by_status.find(s);
    results[std::string(to_string(s))] = it == run.results_by_status.end() ? 0 : it->second;
  }
  std::int64_t finished = 0;
  for (const auto& [status, n] : run.jobs_by_status) {
    if (!is_active(status)) finished += n;
  }
  return {{"id", run.id},
          {"name", run.name},
          {"state", run.state},
          {"job_count", run.job_count},
          {"finished_jobs", finished},
          {"jobs", jobs},
          {"results", results},
          {"gpus", run.spec.gpus},
          {"torch_builds", run.spec.torch_builds},
          {"created_at", format_time(run.created_at)},
          {"cancelled_at", time_or_null(run.cancelled_at)},
          {"finished_at", time_or_null(run.finished_at)},
          {"eta_s", nullptr},
          {"matrix", run.spec}};
}

nlohmann::json agent_json(const store::AgentInfo& a, TimestampMs now, int heartbeat_interval_s) {
  nlohmann::json leases = nlohmann::json::array();
  for (const auto& l : a.leases) {
    leases.push_back(
        {{"slot", l.slot}, {"job_id", l.job_id}, {"run_id", l.run_id}, {"status", l.status}, {"job", l.spec}});
  }
  const bool online = now - a.last_seen_at <= 3LL * heartbeat_interval_s * 1000;
  return {{"id", a.id},
          {"name", a.descriptor.name},
          {"hostname", a.descriptor.hostname},
          {"version", a.descriptor.version},
          {"slots", a.descriptor.slots},
          {"torch_builds", a.descriptor.torch_builds},
          {"enrolled_at", format_time(a.enrolled_at)},
          {"last_seen_at", format_time(a.last_seen_at)},
          {"online", online},
          {"draining", a.draining},
          {"reenrolment_approved", a.reenrolment_approved},
          {"leases", leases}};
}

nlohmann::json result_json(const store::ResultRow& row) {
  nlohmann::json result = row.result;
  result.erase("samples_ms");
  return {{"id", row.id},
          {"job_id", row.job_id},
          {"run_id", row.run_id},
          {"attempt", row.attempt},
          {"job", row.spec},
          {"result", result},
          {"flags", row.flags},
          {"agent", row.agent_name ? nlohmann::json(*row.agent_name) : nlohmann::json(nullptr)},
          {"slot", row.slot ? nlohmann::json(*row.slot) : nlohmann::json(nullptr)},
          {"created_at", format_time(row.created_at)}};
}

namespace {

std::string dump_json(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// `member` ("\"key\":value") added as the last member of `object`, the text of a JSON object.
void append_member(std::string& object, std::string_view member) {
  object.pop_back();  // '}'
  if (object.size() > 1) object += ',';
  object += member;
  object += '}';
}

// The stored samples text is what nlohmann::json wrote for an array of numbers: checked for
// that alphabet before it is spliced into a response, so it cannot change the JSON around it.
bool is_number_array_text(std::string_view text) {
  if (text.size() < 2 || text.front() != '[' || text.back() != ']') return false;
  for (const char c : text.substr(1, text.size() - 2)) {
    const bool ok = (c >= '0' && c <= '9') || c == '.' || c == ',' || c == '-' || c == '+' || c == 'e' || c == 'E';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

ResultJsonParts result_json_parts(const store::ResultRow& row) {
  // A control character never appears in dump_json's output (it escapes them): a safe marker.
  static constexpr std::string_view kMarker = "\x01samples\x01";
  nlohmann::json outer = result_json(row);
  std::string result = dump_json(outer["result"]);
  outer.erase("result");
  std::string text = dump_json(outer);
  append_member(result, "\"samples_ms\":" + std::string(kMarker));
  append_member(text, "\"result\":" + result);
  const auto at = text.find(kMarker);
  return {text.substr(0, at), text.substr(at + kMarker.size())};
}

bool is_number_array_piece(std::string_view piece) {
  for (const char c : piece) {
    const bool ok = (c >= '0' && c <= '9') || c == '.' || c == ',' || c == '-' || c == '+' || c == 'e' || c == 'E' ||
                    c == '[' || c == ']';
    if (!ok) return false;
  }
  return true;
}

Result<std::string> result_json_text(const store::ResultRow& row) {
  const std::string_view samples = row.samples_json ? std::string_view(*row.samples_json) : std::string_view("[]");
  if (!is_number_array_text(samples)) {
    return Error::internal("the stored samples of result " + std::to_string(row.id) +
                           " are not a JSON array of numbers");
  }
  const ResultJsonParts parts = result_json_parts(row);
  std::string text;
  text.reserve(parts.before.size() + samples.size() + parts.after.size());
  text.append(parts.before).append(samples).append(parts.after);
  return text;
}

nlohmann::json job_json(const store::JobRow& job) {
  nlohmann::json result = nullptr;
  if (job.result_id && job.result_status) {
    result = {{"id", *job.result_id}, {"status", *job.result_status}};
  }
  return {{"id", job.id},
          {"spec", job.spec},
          {"status", job.status},
          {"attempt", job.attempt},
          {"result", result},
          {"agent", job.agent_name ? nlohmann::json(*job.agent_name) : nlohmann::json(nullptr)},
          {"slot", job.slot ? nlohmann::json(*job.slot) : nlohmann::json(nullptr)},
          {"updated_at", format_time(job.updated_at)}};
}

nlohmann::json model_json(const CatalogModel& m) {
  return {{"id", m.id},
          {"key", m.key()},
          {"version", m.version},
          {"digest", m.digest},
          {"current", m.current},
          {"retired", m.retired},
          {"source", m.source},
          {"task", m.task},
          {"name", m.name},
          {"display_name", m.display_name()},
          {"architecture", m.architecture},
          {"definition", m.definition}};
}

nlohmann::json lease_response_json(const store::LeaseAnswer& answer, const Intervals& intervals,
                                   const Catalog& catalog) {
  LeaseResponse response;
  if (answer.grant) response.job = static_cast<const LeasedJob&>(*answer.grant);
  response.draining = answer.draining;
  response.intervals = intervals;
  nlohmann::json out = response;
  if (answer.grant) {
    // The job's whole model definition: the agent builds the model from it, with no catalog.
    const CatalogModel* model = catalog.find(answer.grant->spec.model);
    out["job"]["model"] = model ? model_json(*model) : nlohmann::json();
  }
  return out;
}

http::Response error_response(const Error& error, const http::Request& req) {
  return http::problem_from_error(error, req);
}

}  // namespace benchfleet::api
