#include "cli/fleet_client.h"

#include <algorithm>
#include <utility>

#include "cli/history_commands.h"
#include "common/display_text.h"

namespace benchfleet::cli {

namespace bhttp = boost::beast::http;

namespace {

// Everything the CLI prints from the server goes through here: text an agent or another
// operator wrote (names, versions, errors, notes) reaches this terminal as visible escapes,
// never as control sequences, whatever the server let through.
nlohmann::json escaped(nlohmann::json j) {
  if (j.is_string()) return escape_display_text(j.get_ref<const std::string&>(), TextLines::kMany);
  if (j.is_array()) {
    for (auto& v : j) v = escaped(std::move(v));
  } else if (j.is_object()) {
    nlohmann::json out = nlohmann::json::object();
    for (auto& [k, v] : j.items()) out[escape_display_text(k)] = escaped(std::move(v));
    return out;
  }
  return j;
}

}  // namespace

FleetClient::FleetClient(std::string base_url, std::string operator_token, std::chrono::milliseconds timeout)
    : base_url_(std::move(base_url)), token_(std::move(operator_token)), timeout_(timeout), http_(base_url_) {}

Result<http::ClientResponse> FleetClient::send(bhttp::verb verb, const std::string& target, const std::string& what,
                                               unsigned expected_status, const nlohmann::json* body) {
  http::Client::Headers headers;
  if (!token_.empty()) headers.emplace_back("Authorization", "Bearer " + token_);
  std::string payload;
  if (body) {
    headers.emplace_back("Content-Type", "application/json");
    payload = body->dump();
  }
  auto r = http_.request(verb, target, std::move(payload), headers, timeout_);
  if (r.ok() && (r->status == expected_status || (expected_status == 0 && r->status / 100 == 2))) return r;
  return refusal(r, what);
}

Error FleetClient::refusal(const Result<http::ClientResponse>& r, const std::string& what) const {
  if (!r.ok()) {
    return Error{r.error().code,
                 what + ": cannot reach the coordinator at " + base_url_ + " (" + r.error().message +
                     "); set --url or BENCHFLEET_URL",
                 {}};
  }
  Error e = http::error_for_response(*r, what);
  // A 400 names the offending field of the request (problem extension member "field").
  if (auto problem = r->json(); problem.ok() && problem->is_object()) {
    if (auto it = problem->find("field"); it != problem->end() && it->is_string()) e.field = it->get<std::string>();
  }
  if (r->status == 401 && token_.empty()) {
    e.message += " (no operator token: set --operator-token, BENCHFLEET_OPERATOR_TOKEN or operator_token_file)";
  }
  e.message = escape_display_text(e.message, TextLines::kMany);
  e.field = escape_display_text(e.field);
  return e;
}

Result<nlohmann::json> FleetClient::send_json(bhttp::verb verb, const std::string& target, const std::string& what,
                                              unsigned expected_status, const nlohmann::json* body) {
  BF_ASSIGN_OR_RETURN(auto r, send(verb, target, what, expected_status, body));
  auto j = r.json();
  if (!j.ok()) return Error{ErrorCode::kUnavailable, what + ": " + j.error().message, {}};
  return escaped(std::move(*j));
}

Result<nlohmann::json> FleetClient::submit(const nlohmann::json& matrix, bool allow_pending) {
  return send_json(bhttp::verb::post, allow_pending ? "/api/v1/runs?allow_pending=true" : "/api/v1/runs", "submit", 201,
                   &matrix);
}

Result<nlohmann::json> FleetClient::check_submit(const nlohmann::json& matrix, bool allow_pending) {
  return send_json(bhttp::verb::post,
                   allow_pending ? "/api/v1/runs?dry_run=true&allow_pending=true" : "/api/v1/runs?dry_run=true",
                   "check", 200, &matrix);
}

Result<nlohmann::json> FleetClient::run(std::int64_t id) {
  return send_json(bhttp::verb::get, "/api/v1/runs/" + std::to_string(id), "run " + std::to_string(id), 200);
}

Result<nlohmann::json> FleetClient::runs(int limit) {
  return send_json(bhttp::verb::get, "/api/v1/runs?limit=" + std::to_string(limit), "list runs", 200);
}

Result<nlohmann::json> FleetClient::results_page(std::int64_t run_id, const std::string& cursor) {
  std::string target = "/api/v1/runs/" + std::to_string(run_id) + "/results?samples=false&limit=500";
  if (!cursor.empty()) target += "&cursor=" + cursor;
  return send_json(bhttp::verb::get, target, "results of run " + std::to_string(run_id), 200);
}

Result<std::string> FleetClient::report(std::int64_t run_id, const std::string& format, const std::string& stat,
                                        bool exclude_flagged) {
  std::string target = "/api/v1/runs/" + std::to_string(run_id) + "/report?format=" + format + "&stat=" + stat;
  if (exclude_flagged) target += "&exclude_flagged=true";
  BF_ASSIGN_OR_RETURN(auto r, send(bhttp::verb::get, target, "report of run " + std::to_string(run_id), 200));
  return escape_display_text(r.body, TextLines::kMany);
}

Result<nlohmann::json> FleetClient::report_json(std::int64_t run_id, const std::string& stat) {
  return send_json(bhttp::verb::get, "/api/v1/runs/" + std::to_string(run_id) + "/report?format=json&stat=" + stat,
                   "report of run " + std::to_string(run_id), 200);
}

namespace {

// `text` percent-encoded for a query value (RFC 3986 unreserved characters and ':' kept).
std::string query_value(const std::string& text) { return percent_encode(text, "-._~:"); }

std::string compare_target(const std::string& a, const std::string& b, const std::string& stat,
                           const std::string& format) {
  return "/api/v1/compare?a=" + query_value(a) + "&b=" + query_value(b) + "&stat=" + query_value(stat) +
         "&format=" + format;
}

}  // namespace

Result<nlohmann::json> FleetClient::compare_json(const std::string& a, const std::string& b, const std::string& stat) {
  return send_json(bhttp::verb::get, compare_target(a, b, stat, "json"), "compare " + a + " with " + b, 200);
}

Result<std::string> FleetClient::compare(const std::string& a, const std::string& b, const std::string& stat,
                                         const std::string& format) {
  BF_ASSIGN_OR_RETURN(auto r,
                      send(bhttp::verb::get, compare_target(a, b, stat, format), "compare " + a + " with " + b, 200));
  return escape_display_text(r.body, TextLines::kMany);
}

Result<nlohmann::json> FleetClient::cancel(std::int64_t run_id) {
  return send_json(bhttp::verb::post, "/api/v1/runs/" + std::to_string(run_id) + "/cancel",
                   "cancel run " + std::to_string(run_id), 200);
}

Result<nlohmann::json> FleetClient::agents() {
  return send_json(bhttp::verb::get, "/api/v1/agents", "list agents", 200);
}

Result<nlohmann::json> FleetClient::approve(std::int64_t agent_id) {
  return send_json(bhttp::verb::post, "/api/v1/agents/" + std::to_string(agent_id) + "/approve",
                   "approve the re-enrolment of agent " + std::to_string(agent_id), 200, nullptr);
}

Result<nlohmann::json> FleetClient::drain(std::int64_t agent_id, bool draining) {
  const nlohmann::json body = {{"draining", draining}};
  return send_json(bhttp::verb::post, "/api/v1/agents/" + std::to_string(agent_id) + "/drain",
                   (draining ? "drain agent " : "resume agent ") + std::to_string(agent_id), 200, &body);
}

Result<nlohmann::json> FleetClient::models() {
  return send_json(bhttp::verb::get, "/api/v1/models", "list models", 200);
}

namespace {
// A model id as one path segment: its '/' percent-encoded, "@N" kept.
std::string model_target(const std::string& id) { return "/api/v1/models/" + percent_encode(id, "-_.@"); }
}  // namespace

Result<nlohmann::json> FleetClient::register_model(const nlohmann::json& definition, bool new_version) {
  return send_json(bhttp::verb::post, new_version ? "/api/v1/models?new_version=true" : "/api/v1/models",
                   "register model", 0, &definition);
}

Result<nlohmann::json> FleetClient::model(const std::string& id) {
  return send_json(bhttp::verb::get, model_target(id), "model " + id, 200);
}

Result<nlohmann::json> FleetClient::delete_model(const std::string& id, bool retire) {
  return send_json(bhttp::verb::delete_, model_target(id) + (retire ? "?retire=true" : ""),
                   (retire ? "retire model " : "remove model ") + id, 200);
}

Result<nlohmann::json> FleetClient::upload_artifact(const std::string& path, const std::string& kind,
                                                    const std::string& name) {
  http::Client::Headers headers{{"Content-Type", "application/octet-stream"}};
  if (!token_.empty()) headers.emplace_back("Authorization", "Bearer " + token_);
  std::string target = "/api/v1/artifacts?kind=" + kind;
  if (!name.empty()) target += "&name=" + encode_query_value(name);
  // An upload of gigabytes takes minutes: the whole request gets an hour.
  auto r = http_.post_file(target, path, headers, std::max<std::chrono::milliseconds>(timeout_, std::chrono::hours(1)));
  if (!r.ok() && r.error().code == ErrorCode::kNotFound) return r.error();
  if (!r.ok() || r->status / 100 != 2) return refusal(r, "upload " + path);
  auto j = r->json();
  if (!j.ok()) return Error{ErrorCode::kUnavailable, "upload " + path + ": " + j.error().message, {}};
  return std::move(*j);
}

Result<nlohmann::json> FleetClient::artifacts() {
  return send_json(bhttp::verb::get, "/api/v1/artifacts", "list artifacts", 200);
}

namespace {
std::string with_query(std::string target, const std::string& query) {
  if (!query.empty()) target += "?" + query;
  return target;
}
}  // namespace

Result<nlohmann::json> FleetClient::create_schedule(const nlohmann::json& request) {
  return send_json(bhttp::verb::post, "/api/v1/schedules", "add schedule", 201, &request);
}

Result<nlohmann::json> FleetClient::schedules() {
  return send_json(bhttp::verb::get, "/api/v1/schedules", "list schedules", 200);
}

Result<nlohmann::json> FleetClient::schedule(std::int64_t id) {
  return send_json(bhttp::verb::get, "/api/v1/schedules/" + std::to_string(id), "schedule " + std::to_string(id), 200);
}

Result<nlohmann::json> FleetClient::set_schedule_enabled(std::int64_t id, bool enabled) {
  return send_json(bhttp::verb::post, "/api/v1/schedules/" + std::to_string(id) + (enabled ? "/resume" : "/pause"),
                   (enabled ? "resume schedule " : "pause schedule ") + std::to_string(id), 200);
}

Status FleetClient::delete_schedule(std::int64_t id) {
  BF_ASSIGN_OR_RETURN(auto r, send(bhttp::verb::delete_, "/api/v1/schedules/" + std::to_string(id),
                                   "delete schedule " + std::to_string(id), 204));
  (void)r;
  return Status::Ok();
}

Result<nlohmann::json> FleetClient::series_list(const std::string& query) {
  return send_json(bhttp::verb::get, with_query("/api/v1/series", query), "list series", 200);
}

Result<nlohmann::json> FleetClient::series(std::int64_t id, const std::string& query) {
  return send_json(bhttp::verb::get, with_query("/api/v1/series/" + std::to_string(id), query),
                   "series " + std::to_string(id), 200);
}

Result<nlohmann::json> FleetClient::regressions(const std::string& query) {
  return send_json(bhttp::verb::get, with_query("/api/v1/regressions", query), "list regressions", 200);
}

Result<nlohmann::json> FleetClient::change_regression(std::int64_t id, const std::string& action,
                                                      const std::optional<std::string>& note) {
  nlohmann::json body = nlohmann::json::object();
  if (note) body["note"] = *note;
  return send_json(bhttp::verb::post, "/api/v1/regressions/" + std::to_string(id) + "/" + action,
                   action + " regression " + std::to_string(id), 200, &body);
}

}  // namespace benchfleet::cli
