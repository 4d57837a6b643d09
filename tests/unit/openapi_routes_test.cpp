// Real responses of every endpoint, driven through the Router, against the OpenAPI document:
// every route is documented with its route name as operationId and nothing else is, and each
// answer's status code, media type and body are the documented ones.
#include "tests/unit/openapi_routes_fixture.h"

#include <fstream>

namespace benchfleet::testing::openapi_routes {
namespace {

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
  EXPECT_EQ(routes.size(), 45u);
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
  EXPECT_EQ(call(verb::get, "/api/v1/models?all=true").status, 200u);
  // Registered models: created, unchanged, refused, shown, removed.
  const json regnet = {{"id", "acme/regnet"}, {"source", "torchvision"}, {"architecture", "regnet_y_400mf"}};
  EXPECT_EQ(call(verb::post, "/api/v1/models", regnet).status, 401u);
  EXPECT_EQ(call(verb::post, "/api/v1/models", regnet, op).status, 201u);
  EXPECT_EQ(call(verb::post, "/api/v1/models", regnet, op).parsed["outcome"], "unchanged");
  Call unknown_source = call(verb::post, "/api/v1/models", json{{"id", "x"}, {"source", "onnx"}}, op);
  EXPECT_EQ(unknown_source.status, 400u);
  EXPECT_EQ(unknown_source.parsed["field"], "source") << unknown_source.body;
  EXPECT_EQ(call(verb::get, "/api/v1/models/acme%2Fregnet").parsed["versions"].size(), 1u);
  EXPECT_EQ(call(verb::get, "/api/v1/models/resnet18").parsed["id"], "torchvision/resnet18") << "a short name";
  EXPECT_EQ(call(verb::get, "/api/v1/models/acme%2Fnone").status, 404u);
  EXPECT_EQ(call(verb::delete_, "/api/v1/models/acme%2Fregnet", std::nullopt, op).parsed["outcome"], "removed");
  EXPECT_EQ(call(verb::delete_, "/api/v1/models/acme%2Fregnet", std::nullopt, op).status, 404u);
  // Artifacts: an upload's bytes come through the server's sink (the integration tests), so a
  // dispatch without one is a 400; a stored one is listed and served.
  EXPECT_EQ(call(verb::post, "/api/v1/artifacts?kind=file", std::nullopt, op).status, 400u);
  EXPECT_EQ(call(verb::post, "/api/v1/artifacts?kind=zip", std::nullopt, op).status, 400u);
  const std::string digest = "sha256:" + std::string(64, 'c');
  std::ofstream(dir_ / "artifacts" / std::string(64, 'c')) << "bytes";
  ASSERT_TRUE(store_->models().add_artifact({digest, 5, "file", "f.py", 1}).ok());
  EXPECT_EQ(call(verb::get, "/api/v1/artifacts").parsed["artifacts"].size(), 1u);
  EXPECT_EQ(call(verb::get, "/api/v1/artifacts/" + digest, std::nullopt, op).status, 200u);
  EXPECT_EQ(call(verb::get, "/api/v1/artifacts/sha256:" + std::string(64, 'd'), std::nullopt, op).status, 404u);
  EXPECT_EQ(call(verb::get, "/api/v1/artifacts/md5:x", std::nullopt, op).status, 400u);
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
  if (job["spec"].value("mode", "") == "eager") result["result"].erase("accuracy");  // compiled modes only
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
  // Its name is taken: enrolling under it needs its token or an operator's approval.
  EXPECT_EQ(call(verb::post, "/api/v1/agents/enroll", descriptor, kEnrollmentToken).status, 409u);
  EXPECT_EQ(call(verb::post, agent + "/approve", std::nullopt).status, 401u);
  EXPECT_EQ(call(verb::post, "/api/v1/agents/999/approve", std::nullopt, op).status, 404u);
  Call approved = call(verb::post, agent + "/approve", std::nullopt, op);
  EXPECT_EQ(approved.status, 200u);
  EXPECT_EQ(approved.parsed["reenrolment_approved"], true);
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

  exercise_history(one, op, agent, token);

  // The comparison of this run with a second of the same matrix (nothing measured there yet):
  // A's ok cell is counted and said uncompared.
  Call second = call(verb::post, "/api/v1/runs", matrix, op);
  ASSERT_EQ(second.status, 201u) << second.body;
  ASSERT_EQ(call(verb::post, "/api/v1/runs/" + std::to_string(second.parsed["id"].get<std::int64_t>()) + "/cancel",
                 std::nullopt, op)
                .status,
            200u);
  const std::string a_side = std::to_string(submitted.parsed["id"].get<std::int64_t>());
  const std::string b_side = std::to_string(second.parsed["id"].get<std::int64_t>());
  Call compared = call(verb::get, "/api/v1/compare?a=" + a_side + "&b=" + b_side + ":stable");
  ASSERT_EQ(compared.status, 200u) << compared.body;
  EXPECT_EQ(compared.parsed["expected"], 1) << compared.body;
  EXPECT_EQ(compared.parsed["compared"], 0) << compared.body;
  EXPECT_EQ(compared.parsed["uncompared"][0]["why"], "B's cell is not run") << compared.body;
  for (const char* q : {"&format=md", "&format=csv", "&stat=mean"}) {
    EXPECT_EQ(call(verb::get, "/api/v1/compare?a=" + a_side + "&b=" + b_side + q).status, 200u) << q;
  }
  EXPECT_EQ(call(verb::get, "/api/v1/compare?a=" + a_side + ":stabel&b=" + b_side).status, 400u);
  EXPECT_EQ(call(verb::get, "/api/v1/compare?a=" + a_side + "&b=" + a_side).status, 400u);
  EXPECT_EQ(call(verb::get, "/api/v1/compare?a=x&b=" + b_side).status, 400u);
  EXPECT_EQ(call(verb::get, "/api/v1/compare?b=" + b_side).status, 400u);
  EXPECT_EQ(call(verb::get, "/api/v1/compare?a=999&b=" + b_side).status, 404u);

  // With public_reads off, reads need the operator token.
  config_.public_reads = false;
  EXPECT_EQ(call(verb::get, "/api/v1/runs").status, 401u);
  EXPECT_EQ(call(verb::get, "/api/v1/runs", std::nullopt, op).status, 200u);
  for (const std::string& target : std::vector<std::string>{run, run + "/results", run + "/jobs", run + "/report",
                                                            "/api/v1/results/1", "/api/v1/compare?a=1&b=2"}) {
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
}  // namespace benchfleet::testing::openapi_routes
