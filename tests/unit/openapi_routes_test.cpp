// Real responses of every endpoint, driven through the Router, against the OpenAPI document:
// every route is documented with its route name as operationId and nothing else is, and each
// answer's status code, media type and body are the documented ones.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/http/verb.hpp>
#include <nlohmann/json.hpp>

#include "common/catalog.h"
#include "common/clock.h"
#include "common/codecs.h"
#include "common/http/router.h"
#include "common/stats.h"
#include "coordinator/api/api.h"
#include "coordinator/api/metrics.h"
#include "coordinator/config/config.h"
#include "coordinator/services/work_signal.h"
#include "coordinator/store/store.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/openapi_support.h"

namespace benchfleet::testing {
namespace {

namespace fs = std::filesystem;
namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using nlohmann::json;

constexpr const char* kOperatorToken = "operator-secret";
constexpr const char* kEnrollmentToken = "enrollment-secret";

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

class OpenApiRoutes : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "web" / "vendor");
    std::ofstream(dir_ / "web" / "index.html") << "<!doctype html><title>benchfleet</title>\n";
    std::ofstream(dir_ / "web" / "app.js") << "console.log('hi');\n";
    std::ofstream(dir_ / "web" / "vendor" / "data.json") << "{\"any\": [1, 2]}\n";
    config_.web_root = (dir_ / "web").string();
    store::StoreOptions options;
    options.path = (dir_ / "bf.db").string();
    auto s = store::Store::open(options, clock_);
    ASSERT_TRUE(s.ok()) << s.error().message;
    store_ = std::move(*s);
    auto catalog = Catalog::load_file(default_catalog_path());
    ASSERT_TRUE(catalog.ok()) << catalog.error().describe();
    catalog_ = std::move(*catalog);
    ctx_.emplace(api::ApiContext{.store = *store_,
                                 .catalog = catalog_,
                                 .config = config_,
                                 .clock = clock_,
                                 .work = work_,
                                 .metrics = metrics_,
                                 .operator_token = kOperatorToken,
                                 .enrollment_token = kEnrollmentToken,
                                 .stopping = stopping_,
                                 .blocking = blocking_.get_executor()});
    api::register_routes(router_, *ctx_);
  }
  void TearDown() override {
    ctx_.reset();
    store_.reset();
  }

  struct Call {
    unsigned status = 0;
    std::string route;
    std::string content_type;
    std::string body;
    std::string etag;
    json parsed;  // null unless JSON
  };

  // Dispatches through the router and checks the answer against the document: the route's
  // operation documents this status with this media type, and a JSON body matches its schema.
  Call call(bhttp::verb method, const std::string& target, const std::optional<json>& body = std::nullopt,
            const std::string& token = "", const std::string& if_none_match = "") {
    http::Request req{method, target, 11};
    if (!token.empty()) req.set(bhttp::field::authorization, "Bearer " + token);
    if (!if_none_match.empty()) req.set(bhttp::field::if_none_match, if_none_match);
    if (body) {
      req.set(bhttp::field::content_type, "application/json");
      req.body() = body->dump();
    }
    req.prepare_payload();
    Call out;
    std::optional<http::Response> res;
    asio::io_context io;
    asio::co_spawn(
        io, [&]() -> asio::awaitable<void> { res = co_await router_.dispatch(req, out.route); },
        [](std::exception_ptr e) {
          if (e) std::rethrow_exception(e);
        });
    io.run();
    EXPECT_TRUE(res.has_value());
    if (!res) return out;
    out.status = res->result_int();
    out.content_type = std::string((*res)[bhttp::field::content_type]);
    out.body = res->body();
    out.etag = std::string((*res)[bhttp::field::etag]);
    const std::string media = lower(out.content_type.substr(0, out.content_type.find(';')));
    if (media == "application/json" || media == "application/problem+json") out.parsed = json::parse(out.body);
    expect_documented(method, out, media);
    return out;
  }

  void expect_documented(bhttp::verb method, const Call& c, const std::string& media) {
    const std::string where = std::string(bhttp::to_string(method)) + " " + c.route + " -> " + std::to_string(c.status);
    const json* op = nullptr;
    for (const auto& [path, item] : document()["paths"].items()) {
      for (const auto& m : kMethods) {
        if (item.contains(m) && item[m]["operationId"] == c.route) op = &item[m];
      }
    }
    ASSERT_NE(op, nullptr) << where << ": no operation";
    const std::string status = std::to_string(c.status);
    ASSERT_TRUE((*op)["responses"].contains(status)) << where << ": status not documented; body " << c.body;
    const json& resp = deref((*op)["responses"][status]);
    if (c.status == 304 || c.status == 204) {  // Not Modified, No Content: no body, so no content is documented
      EXPECT_FALSE(resp.contains("content")) << where;
      EXPECT_TRUE(c.body.empty()) << where;
      exercised_.insert(c.route + " " + status);
      return;
    }
    ASSERT_TRUE(resp.contains("content")) << where;
    ASSERT_TRUE(resp["content"].contains(media)) << where << ": media type " << media << " not documented";
    exercised_.insert(c.route + " " + status);
    if (c.parsed.is_null()) return;
    const auto errors = SchemaChecker().check(c.parsed, resp["content"][media]["schema"]);
    EXPECT_TRUE(errors.empty()) << where << join(errors) << "\nbody: " << c.body;
  }

  testing::TempDir tmp_{"bf-openapi"};
  const fs::path dir_ = tmp_.path();
  SystemClock clock_;
  std::unique_ptr<store::Store> store_;
  Catalog catalog_;
  CoordinatorConfig config_;
  WorkSignal work_;
  Metrics metrics_;
  std::atomic<bool> stopping_{false};
  asio::thread_pool blocking_{2};  // where the handlers that touch the store run
  std::optional<api::ApiContext> ctx_;
  http::Router router_;
  std::set<std::string> exercised_;
};

TEST_F(OpenApiRoutes, EveryRouteIsDocumentedAndNothingElse) {
  const json& paths = document()["paths"];
  std::set<std::pair<std::string, std::string>> routes;
  std::vector<http::RouteInfo> all = router_.routes();
  ASSERT_TRUE(router_.fallback().has_value());
  all.push_back(*router_.fallback());  // the dashboard's files: "/{path}"
  for (const auto& r : all) {
    const std::string method = lower(bhttp::to_string(r.method));
    routes.insert({r.pattern, method});
    ASSERT_TRUE(paths.contains(r.pattern)) << r.pattern << " is not documented";
    ASSERT_TRUE(paths[r.pattern].contains(method)) << method << " " << r.pattern << " is not documented";
    EXPECT_EQ(paths[r.pattern][method]["operationId"], r.name) << method << " " << r.pattern;
  }
  EXPECT_EQ(routes.size(), 36u);
  for (const auto& [path, item] : paths.items()) {
    for (const auto& m : kMethods) {
      if (item.contains(m)) {
        EXPECT_TRUE(routes.contains({path, m})) << m << " " << path << " is not a route";
      }
    }
  }
}

TEST_F(OpenApiRoutes, ResponsesMatchTheDocument) {
  using bhttp::verb;
  const std::string op = kOperatorToken;
  json matrix = json::object();
  matrix["name"] = "doc check";
  matrix["models"] = json::array({"microsoft/resnet-50"});
  matrix["batch_sizes"] = json::array({1, 4});
  matrix["modes"] = json::array({"eager", "default"});
  matrix["torch_builds"] = json::array({"stable"});
  matrix["gpus"] = json::array({"a100"});

  // Operators.
  EXPECT_EQ(call(verb::post, "/api/v1/runs", matrix).status, 401u);
  EXPECT_EQ(call(verb::post, "/api/v1/runs", json{{"name", "x"}}, op).status, 400u);
  EXPECT_EQ(call(verb::post, "/api/v1/runs", json::array(), op).status, 400u);
  Call submitted = call(verb::post, "/api/v1/runs", matrix, op);
  ASSERT_EQ(submitted.status, 201u) << submitted.body;
  const std::string run = "/api/v1/runs/" + std::to_string(submitted.parsed["id"].get<std::int64_t>());
  EXPECT_EQ(call(verb::get, "/api/v1/runs").status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/runs?limit=1").status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/runs?limit=0").status, 400u);
  EXPECT_EQ(call(verb::get, run).status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/runs/0").status, 400u);
  EXPECT_EQ(call(verb::get, "/api/v1/runs/999").status, 404u);
  EXPECT_EQ(call(verb::get, "/api/v1/models").status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/agents").status, 200u);
  Call queue = call(verb::get, "/api/v1/queue");
  ASSERT_EQ(queue.status, 200u) << queue.body;
  ASSERT_EQ(queue.parsed["cells"].size(), 1u) << queue.body;
  EXPECT_EQ(queue.parsed["cells"][0],
            (json{{"gpu_class", "a100"},
                  {"torch_build", "stable"},
                  {"queued", 4},
                  {"active", 0},
                  {"queued_by_timeout", json::array({{{"timeout_s", 1800}, {"queued", 4}}})}}));

  // An agent enrols, leases, reports progress and results.
  json descriptor = full_agent();
  EXPECT_EQ(call(verb::post, "/api/v1/agents/enroll", descriptor, op).status, 401u);
  EXPECT_EQ(call(verb::post, "/api/v1/agents/enroll", json{{"name", "x"}}, kEnrollmentToken).status, 400u);
  Call enrolled = call(verb::post, "/api/v1/agents/enroll", descriptor, kEnrollmentToken);
  ASSERT_EQ(enrolled.status, 201u) << enrolled.body;
  const std::int64_t agent_id = enrolled.parsed["agent_id"];
  const std::string agent = "/api/v1/agents/" + std::to_string(agent_id);
  const std::string token = enrolled.parsed["agent_token"];
  EXPECT_EQ(call(verb::post, agent + "/heartbeat", json::object()).status, 401u);
  EXPECT_EQ(
      call(verb::post, "/api/v1/agents/" + std::to_string(agent_id + 1) + "/heartbeat", json::object(), token).status,
      403u);
  EXPECT_EQ(call(verb::post, agent + "/heartbeat", json{{"leases", 1}}, token).status, 400u);
  EXPECT_EQ(call(verb::post, agent + "/heartbeat", json::object(), token).status, 200u);
  EXPECT_EQ(call(verb::post, agent + "/lease", json{{"slot", "nope"}, {"wait_s", 0}}, token).status, 404u);
  EXPECT_EQ(call(verb::post, agent + "/lease", json{{"wait_s", 0}}, token).status, 400u);
  Call leased = call(verb::post, agent + "/lease", json{{"slot", "gpu0"}, {"wait_s", 0}}, token);
  ASSERT_EQ(leased.status, 200u) << leased.body;
  ASSERT_TRUE(leased.parsed["job"].is_object()) << leased.body;
  const json job = leased.parsed["job"];
  const std::string job_url = "/api/v1/jobs/" + std::to_string(job["id"].get<std::int64_t>());
  const std::string lease_id = job["lease_id"];
  EXPECT_EQ(call(verb::post, job_url + "/progress",
                 json{{"lease_id", lease_id}, {"phase", "measure"}, {"iterations", 3}}, token)
                .status,
            200u);
  json held = json::object();
  held["job_id"] = job["id"];
  held["lease_id"] = lease_id;
  json beat = json::object();
  beat["leases"] = json::array({held});
  beat["draining"] = false;
  EXPECT_EQ(call(verb::post, agent + "/heartbeat", beat, token).status, 200u);
  json result = {{"lease_id", lease_id}, {"attempt", job["attempt"]}, {"result", posted_result(ResultStatus::kOk)}};
  EXPECT_EQ(call(verb::post, job_url + "/result", json{{"lease_id", lease_id}}, token).status, 400u);
  EXPECT_EQ(call(verb::post, job_url + "/result", result, token).status, 201u);
  EXPECT_EQ(call(verb::post, job_url + "/result", result, token).status, 200u);
  json different = result;
  different["result"]["first_call_ms"] = 1.0;
  Call mismatch = call(verb::post, job_url + "/result", different, token);
  EXPECT_EQ(mismatch.status, 409u);
  EXPECT_EQ(mismatch.parsed["reason"], "result_mismatch");
  Call lost = call(verb::post, job_url + "/progress", json{{"lease_id", lease_id}}, token);
  EXPECT_EQ(lost.status, 409u);
  EXPECT_EQ(lost.parsed["reason"], "lease_lost");
  EXPECT_EQ(call(verb::post, "/api/v1/jobs/999999/result", result, token).status, 404u);

  // A second job ends in an OOM.
  Call leased2 = call(verb::post, agent + "/lease", json{{"slot", "gpu0"}, {"wait_s", 0}}, token);
  ASSERT_TRUE(leased2.parsed["job"].is_object()) << leased2.body;
  const json job2 = leased2.parsed["job"];
  EXPECT_EQ(
      call(verb::post, "/api/v1/jobs/" + std::to_string(job2["id"].get<std::int64_t>()) + "/result",
           json{{"lease_id", job2["lease_id"]}, {"attempt", 1}, {"result", posted_result(ResultStatus::kOom)}}, token)
          .status,
      201u);

  // Reads of what happened.
  Call results = call(verb::get, run + "/results?limit=1");
  EXPECT_EQ(results.status, 200u);
  ASSERT_TRUE(results.parsed["next_cursor"].is_string()) << results.body;
  EXPECT_EQ(call(verb::get, run + "/results?cursor=" + results.parsed["next_cursor"].get<std::string>() +
                                "&samples=false&status=oom&mode=eager&runtime=libtorch&batch=1&gpu=a100&build=stable"
                                "&model=microsoft/resnet-50&dtype=float32")
                .status,
            200u);
  EXPECT_EQ(call(verb::get, run + "/results?samples=maybe").status, 400u);
  EXPECT_EQ(call(verb::get, run + "/results?mode=fast").status, 400u);
  EXPECT_EQ(call(verb::get, run + "/results?dtype=float64").status, 400u);
  EXPECT_EQ(call(verb::get, "/api/v1/runs/999/results").status, 404u);
  Call jobs = call(verb::get, run + "/jobs?limit=1");
  EXPECT_EQ(jobs.status, 200u);
  ASSERT_TRUE(jobs.parsed["next_cursor"].is_string()) << jobs.body;
  Call rest = call(verb::get, run + "/jobs?cursor=" + jobs.parsed["next_cursor"].get<std::string>());
  EXPECT_EQ(rest.status, 200u);
  EXPECT_EQ(rest.parsed["jobs"].size(), 3u) << rest.body;
  EXPECT_TRUE(rest.parsed["next_cursor"].is_null());
  int with_result = 0;  // the ok and the oom verdict, as {id, status}, checked against the schema above
  for (const json* page : {&jobs.parsed, &rest.parsed}) {
    for (const auto& j : (*page)["jobs"]) with_result += j["result"].is_object() ? 1 : 0;
  }
  EXPECT_GE(with_result, 2) << jobs.body << rest.body;
  EXPECT_EQ(call(verb::get, run + "/jobs?limit=10001").status, 400u);
  EXPECT_EQ(call(verb::get, run + "/jobs?cursor=x").status, 400u);
  EXPECT_EQ(call(verb::get, "/api/v1/runs/999/jobs").status, 404u);
  const std::int64_t result_id = results.parsed["results"][0]["id"];
  EXPECT_EQ(call(verb::get, "/api/v1/results/" + std::to_string(result_id)).status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/results/999999").status, 404u);
  for (const char* q : {"", "?format=json&stat=median", "?format=md", "?format=csv"}) {
    EXPECT_EQ(call(verb::get, run + "/report" + q).status, 200u) << q;
  }
  // The report names the torch version the ok result's fingerprint recorded (checked against
  // the schema like every response here).
  const Call report = call(verb::get, run + "/report");
  ASSERT_EQ(report.status, 200u) << report.body;
  EXPECT_EQ(report.parsed["tables"][0]["columns"][0]["torch_versions"], json::array({"2.11.0+cu130"})) << report.body;
  EXPECT_EQ(report.parsed["tables"][0]["columns"][0]["header"], "stable (torch 2.11.0) - eager") << report.body;
  EXPECT_EQ(call(verb::get, run + "/report?format=pdf").status, 400u);
  EXPECT_EQ(call(verb::get, "/api/v1/runs/999/report").status, 404u);
  EXPECT_EQ(call(verb::get, "/api/v1/agents").status, 200u);
  EXPECT_EQ(call(verb::get, "/healthz").status, 200u);
  EXPECT_EQ(call(verb::get, "/metrics").status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/openapi.json").status, 200u);

  // The dashboard's files.
  Call index = call(verb::get, "/");
  EXPECT_EQ(index.status, 200u);
  EXPECT_EQ(index.content_type, "text/html; charset=utf-8");
  EXPECT_EQ(call(verb::get, "/", std::nullopt, "", index.etag).status, 304u);
  EXPECT_EQ(call(verb::get, "/app.js").status, 200u);
  EXPECT_EQ(call(verb::get, "/vendor/data.json").status, 200u);
  EXPECT_EQ(call(verb::get, "/vendor/data.json", std::nullopt, "", "*").status, 304u);
  EXPECT_EQ(call(verb::get, "/missing.css").status, 404u);
  EXPECT_EQ(call(verb::get, "/%2e%2e/bf.db").status, 404u);
  Call unknown_api = call(verb::get, "/api/v1/nope");
  EXPECT_EQ(unknown_api.status, 404u);
  EXPECT_EQ(unknown_api.parsed["detail"], "no route for GET /api/v1/nope");

  // Drain, resume; then a job whose run gets cancelled under it.
  EXPECT_EQ(call(verb::post, agent + "/drain", std::nullopt).status, 401u);
  EXPECT_EQ(call(verb::post, agent + "/drain", json{{"draining", "yes"}}, op).status, 400u);
  EXPECT_EQ(call(verb::post, "/api/v1/agents/999/drain", std::nullopt, op).status, 404u);
  EXPECT_EQ(call(verb::post, agent + "/drain", std::nullopt, op).status, 200u);
  Call drained = call(verb::post, agent + "/lease", json{{"slot", "gpu0"}, {"wait_s", 0}}, token);
  EXPECT_TRUE(drained.parsed["job"].is_null());
  EXPECT_EQ(drained.parsed["draining"], true);
  EXPECT_EQ(call(verb::post, agent + "/drain", json{{"draining", false}}, op).status, 200u);
  Call leased3 = call(verb::post, agent + "/lease", json{{"slot", "gpu0"}, {"wait_s", 0}}, token);
  ASSERT_TRUE(leased3.parsed["job"].is_object()) << leased3.body;
  EXPECT_EQ(call(verb::post, run + "/cancel", std::nullopt).status, 401u);
  EXPECT_EQ(call(verb::post, "/api/v1/runs/999/cancel", std::nullopt, op).status, 404u);
  EXPECT_EQ(call(verb::post, run + "/cancel", std::nullopt, op).status, 200u);
  EXPECT_EQ(call(verb::post, run + "/cancel", std::nullopt, op).status, 200u);
  Call cancelled =
      call(verb::post, "/api/v1/jobs/" + std::to_string(leased3.parsed["job"]["id"].get<std::int64_t>()) + "/progress",
           json{{"lease_id", leased3.parsed["job"]["lease_id"]}}, token);
  EXPECT_EQ(cancelled.status, 409u);
  EXPECT_EQ(cancelled.parsed["reason"], "cancelled");
  Call idle = call(verb::post, agent + "/lease", json{{"slot", "gpu0"}, {"wait_s", 0}}, token);
  EXPECT_EQ(idle.status, 200u);
  EXPECT_TRUE(idle.parsed["job"].is_null());

  // A run that finished cannot be cancelled.
  json one = matrix;
  one["batch_sizes"] = json::array({1});
  one["modes"] = json::array({"eager"});
  Call small = call(verb::post, "/api/v1/runs", one, op);
  ASSERT_EQ(small.status, 201u);
  Call leased4 = call(verb::post, agent + "/lease", json{{"slot", "gpu0"}, {"wait_s", 0}}, token);
  ASSERT_TRUE(leased4.parsed["job"].is_object()) << leased4.body;
  // Released unfinished, the job is leased again at once as attempt 2.
  const std::string release =
      "/api/v1/jobs/" + std::to_string(leased4.parsed["job"]["id"].get<std::int64_t>()) + "/release";
  Call stale = call(verb::post, release, json{{"lease_id", "not-the-lease"}}, token);
  EXPECT_EQ(stale.status, 409u);
  EXPECT_EQ(stale.parsed["reason"], "lease_lost");
  EXPECT_EQ(call(verb::post, release, json{{"lease_id", leased4.parsed["job"]["lease_id"]}}, token).status, 200u);
  leased4 = call(verb::post, agent + "/lease", json{{"slot", "gpu0"}, {"wait_s", 0}}, token);
  ASSERT_TRUE(leased4.parsed["job"].is_object()) << leased4.body;
  EXPECT_EQ(leased4.parsed["job"]["attempt"], 2);
  json error_result = {{"status", "error"}, {"error", "boom"}};
  EXPECT_EQ(
      call(verb::post, "/api/v1/jobs/" + std::to_string(leased4.parsed["job"]["id"].get<std::int64_t>()) + "/result",
           json{{"lease_id", leased4.parsed["job"]["lease_id"]}, {"attempt", 2}, {"result", error_result}}, token)
          .status,
      201u);
  EXPECT_EQ(call(verb::post, "/api/v1/runs/" + std::to_string(small.parsed["id"].get<std::int64_t>()) + "/cancel",
                 std::nullopt, op)
                .status,
            409u);

  // History: a schedule's life; a series and the regression found in 8 nightly runs.
  json nightly = one;
  nightly["batch_sizes"] = json::array({2});
  EXPECT_EQ(call(verb::post, "/api/v1/schedules", json{{"cron", "0 2 * * *"}, {"matrix", nightly}}).status, 401u);
  Call bad_cron = call(verb::post, "/api/v1/schedules", json{{"cron", "61 * * * *"}, {"matrix", nightly}}, op);
  EXPECT_EQ(bad_cron.status, 400u);
  EXPECT_EQ(bad_cron.parsed["field"], "cron");
  json unknown_model = nightly;
  unknown_model["models"] = json::array({"no/such-model"});
  Call bad_matrix = call(verb::post, "/api/v1/schedules", json{{"cron", "0 2 * * *"}, {"matrix", unknown_model}}, op);
  EXPECT_EQ(bad_matrix.status, 400u);
  EXPECT_EQ(bad_matrix.parsed["field"], "matrix.models[0]") << bad_matrix.body;
  Call schedule = call(verb::post, "/api/v1/schedules", json{{"cron", "@daily"}, {"matrix", nightly}}, op);
  ASSERT_EQ(schedule.status, 201u) << schedule.body;
  const std::string schedule_url = schedule.parsed["url"];
  EXPECT_EQ(call(verb::get, "/api/v1/schedules").status, 200u);
  EXPECT_EQ(call(verb::get, schedule_url).status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/schedules/0").status, 400u);
  EXPECT_EQ(call(verb::get, "/api/v1/schedules/999").status, 404u);
  EXPECT_EQ(call(verb::post, schedule_url + "/pause", std::nullopt).status, 401u);
  Call paused = call(verb::post, schedule_url + "/pause", std::nullopt, op);
  EXPECT_EQ(paused.status, 200u);
  EXPECT_TRUE(paused.parsed["next_due_at"].is_null()) << paused.body;
  EXPECT_EQ(call(verb::post, schedule_url + "/resume", std::nullopt, op).status, 200u);
  EXPECT_EQ(call(verb::post, "/api/v1/schedules/999/resume", std::nullopt, op).status, 404u);
  EXPECT_EQ(call(verb::delete_, schedule_url).status, 401u);
  EXPECT_EQ(call(verb::delete_, schedule_url, std::nullopt, op).status, 204u);
  EXPECT_EQ(call(verb::delete_, schedule_url, std::nullopt, op).status, 404u);

  for (int night = 1; night <= 8; ++night) {
    nightly["name"] = "night " + std::to_string(night);
    ASSERT_EQ(call(verb::post, "/api/v1/runs", nightly, op).status, 201u);
    Call leased_night = call(verb::post, agent + "/lease", json{{"slot", "gpu0"}, {"wait_s", 0}}, token);
    ASSERT_TRUE(leased_night.parsed["job"].is_object()) << leased_night.body;
    JobResult r = posted_result(ResultStatus::kOk);
    r.samples_ms.clear();
    for (int i = 0; i < 30; ++i) r.samples_ms.push_back((night <= 6 ? 10.0 : 11.5) + 0.01 * ((i * 7 + night) % 30));
    r.stats = compute_statistics(r.samples_ms);
    r.accuracy.reset();
    r.environment["torch_version"] = "2.12.0.dev2025010" + std::to_string(night);
    const json& j = leased_night.parsed["job"];
    ASSERT_EQ(call(verb::post, "/api/v1/jobs/" + std::to_string(j["id"].get<std::int64_t>()) + "/result",
                   json{{"lease_id", j["lease_id"]}, {"attempt", j["attempt"]}, {"result", r}}, token)
                  .status,
              201u);
  }
  for (bool more = true; more;) {
    auto pass = store_->history().detect_changes(history::DetectorOptions{}, /*enqueue_alerts=*/false);
    ASSERT_TRUE(pass.ok()) << pass.error().describe();
    more = pass->more;
  }
  Call series_list = call(verb::get,
                          "/api/v1/series?model=microsoft/resnet-50&batch=2&mode=eager&dtype=float32"
                          "&runtime=libtorch&gpu=a100&build=stable&limit=10&after=0");
  ASSERT_EQ(series_list.status, 200u);
  ASSERT_EQ(series_list.parsed["series"].size(), 1u) << series_list.body;
  const std::string series_url = series_list.parsed["series"][0]["url"];
  EXPECT_EQ(call(verb::get, "/api/v1/series").status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/series?mode=fast").status, 400u);
  EXPECT_EQ(call(verb::get, "/api/v1/series?limit=501").status, 400u);
  Call series_page = call(verb::get, series_url + "?limit=3");
  ASSERT_EQ(series_page.status, 200u);
  EXPECT_EQ(series_page.parsed["points"].size(), 3u);
  ASSERT_FALSE(series_page.parsed["next_after_point"].is_null()) << series_page.body;
  Call series_rest =
      call(verb::get, series_url + "?after_point=" + series_page.parsed["next_after_point"].dump() + "&limit=5000");
  EXPECT_EQ(series_rest.status, 200u);
  EXPECT_EQ(series_rest.parsed["points"].size(), 5u) << series_rest.body;
  EXPECT_EQ(series_rest.parsed["regressions"].size(), 1u) << series_rest.body;
  EXPECT_EQ(call(verb::get, series_url + "?limit=0").status, 400u);
  EXPECT_EQ(call(verb::get, "/api/v1/series/999").status, 404u);

  Call regressions = call(verb::get, "/api/v1/regressions");
  ASSERT_EQ(regressions.status, 200u);
  ASSERT_EQ(regressions.parsed["regressions"].size(), 1u) << regressions.body;
  const std::string regression_url = regressions.parsed["regressions"][0]["url"];
  EXPECT_EQ(regressions.parsed["regressions"][0]["first_bad"]["torch_version"], "2.12.0.dev20250107");
  EXPECT_EQ(call(verb::get, "/api/v1/regressions?state=all&direction=all&series=1&limit=5&before=999").status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/regressions?state=closed").status, 400u);
  EXPECT_EQ(call(verb::get, "/api/v1/regressions?direction=up").status, 400u);
  EXPECT_EQ(call(verb::get, regression_url).status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/regressions/999").status, 404u);
  EXPECT_EQ(call(verb::post, regression_url + "/acknowledge", std::nullopt).status, 401u);
  Call bad_note = call(verb::post, regression_url + "/acknowledge", json{{"note", 3}}, op);
  EXPECT_EQ(bad_note.status, 400u);
  EXPECT_EQ(bad_note.parsed["field"], "note");
  Call acked = call(verb::post, regression_url + "/acknowledge", json{{"note", "bisecting"}}, op);
  EXPECT_EQ(acked.status, 200u);
  EXPECT_EQ(acked.parsed["state"], "acknowledged");
  EXPECT_EQ(acked.parsed["note"], "bisecting");
  EXPECT_EQ(call(verb::post, regression_url + "/resolve", std::nullopt, op).parsed["state"], "resolved");
  EXPECT_EQ(call(verb::post, regression_url + "/reopen", std::nullopt, op).parsed["state"], "open");
  EXPECT_EQ(call(verb::post, "/api/v1/regressions/999/resolve", std::nullopt, op).status, 404u);

  // With public_reads off, reads need the operator token.
  config_.public_reads = false;
  EXPECT_EQ(call(verb::get, "/api/v1/runs").status, 401u);
  EXPECT_EQ(call(verb::get, "/api/v1/runs", std::nullopt, op).status, 200u);
  for (const std::string& target :
       std::vector<std::string>{run, run + "/results", run + "/jobs", run + "/report", "/api/v1/results/1"}) {
    EXPECT_EQ(call(verb::get, target).status, 401u) << target;
  }
  for (const char* target : {"/api/v1/models", "/api/v1/agents", "/api/v1/queue", "/metrics", "/api/v1/schedules",
                             "/api/v1/series", "/api/v1/regressions"}) {
    EXPECT_EQ(call(verb::get, target).status, 401u) << target;
  }
  EXPECT_EQ(call(verb::get, "/healthz").status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/openapi.json").status, 200u);
  EXPECT_EQ(call(verb::get, "/").status, 200u);  // the pages load; their API calls need the token
  EXPECT_EQ(call(verb::get, "/app.js").status, 200u);

  // Without a web_root the dashboard is disabled.
  config_.web_root.clear();
  Call disabled = call(verb::get, "/");
  EXPECT_EQ(disabled.status, 404u);
  EXPECT_NE(disabled.parsed["detail"].get<std::string>().find("disabled"), std::string::npos) << disabled.body;

  // Every route answered at least once.
  std::vector<http::RouteInfo> all = router_.routes();
  all.push_back(*router_.fallback());
  for (const auto& r : all) {
    EXPECT_TRUE(std::any_of(exercised_.begin(), exercised_.end(),
                            [&](const std::string& e) { return e.rfind(r.name + " ", 0) == 0; }))
        << r.name << " was never called";
  }
}

TEST_F(OpenApiRoutes, ServedDocumentIsTheEmbeddedOne) {
  http::Request req{bhttp::verb::get, "/api/v1/openapi.json", 11};
  std::optional<http::Response> res;
  asio::io_context io;
  asio::co_spawn(
      io, [&]() -> asio::awaitable<void> { res = co_await router_.dispatch(req); },
      [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
      });
  io.run();
  ASSERT_TRUE(res);
  EXPECT_EQ(res->result_int(), 200u);
  EXPECT_EQ(json::parse(res->body()), document());
}

}  // namespace
}  // namespace benchfleet::testing
