// Integration: the real coordinator on loopback — submitting runs, validation and authorization
// errors (problem+json naming the field), and the service endpoints.
#include <gtest/gtest.h>

#include <fstream>

#include <regex>
#include <string>

#include "tests/support/coordinator_process.h"
#include "tests/support/problem_assertions.h"

namespace benchfleet::testing {
namespace {

namespace bhttp = boost::beast::http;
using nlohmann::json;

// A run with 2 x 2 x 2 = 8 jobs.
json small_matrix() { return matrix({kResnet, kVit}, {1, 4}, {"eager", "default"}); }

// The run is still there, unchanged: same job count, all queued, and the only run listed.
void expect_run_intact(CoordinatorProcess& coord, std::int64_t run_id, std::int64_t job_count) {
  const json run = coord.get_json("/api/v1/runs/" + std::to_string(run_id));
  EXPECT_EQ(run["id"], run_id);
  EXPECT_EQ(run["job_count"], job_count);
  EXPECT_EQ(run["jobs"]["queued"], job_count);
  EXPECT_EQ(run["state"], "queued");
  EXPECT_EQ(run["matrix"]["models"], json({kResnet, kVit}));
  const json list = coord.get_json("/api/v1/runs");
  ASSERT_EQ(list["runs"].size(), 1u) << list.dump();
  EXPECT_EQ(list["runs"][0]["id"], run_id);
}

TEST(CoordinatorApi, SubmittedRunIsListedWithJobCounts) {
  CoordinatorProcess coord;
  const json created = coord.submit(small_matrix());
  const std::int64_t id = created.at("id").get<std::int64_t>();
  EXPECT_GT(id, 0);
  EXPECT_EQ(created["job_count"], 8);
  EXPECT_EQ(created["url"], "/api/v1/runs/" + std::to_string(id));

  const json run = coord.get_json("/api/v1/runs/" + std::to_string(id));
  EXPECT_EQ(run["name"], "it");
  EXPECT_EQ(run["state"], "queued");
  EXPECT_EQ(run["job_count"], 8);
  EXPECT_EQ(run["finished_jobs"], 0);
  EXPECT_EQ(run["jobs"]["queued"], 8);
  for (const char* s : {"leased", "running", "done", "failed", "cancelled"}) EXPECT_EQ(run["jobs"][s], 0) << s;
  for (auto& [status, n] : run["results"].items()) EXPECT_EQ(n, 0) << status;

  const json second = coord.submit(matrix({kResnet}, {1}, {"eager"}));
  const json list = coord.get_json("/api/v1/runs");
  ASSERT_EQ(list["runs"].size(), 2u);
  EXPECT_EQ(list["runs"][0]["id"], second["id"]);  // newest first
  EXPECT_EQ(list["runs"][1]["id"], id);
  EXPECT_EQ(list["runs"][1]["jobs"]["queued"], 8);
  EXPECT_EQ(list["runs"][0]["job_count"], 1);

  auto missing = coord.get("/api/v1/runs/999999");
  expect_problem(missing, 404);
}

TEST(CoordinatorApi, ShortModelNamesAreStoredAsTheirCatalogIdsAndFindTheirSeries) {
  CoordinatorProcess coord;
  const json created = coord.submit(matrix({"resnet18", "ViT-Base-Patch16-224"}, {1}, {"eager"}));
  const json run = coord.get_json("/api/v1/runs/" + std::to_string(created.at("id").get<std::int64_t>()));
  EXPECT_EQ(run["matrix"]["models"], json({"torchvision/resnet18", "google/vit-base-patch16-224"}));

  auto refused = coord.post("/api/v1/runs", matrix({"50"}, {1}, {"eager"}));
  expect_problem(refused, 400, "models[0]");
  EXPECT_NE(refused.body.find("ambiguous model"), std::string::npos) << refused.body;
  auto typo = coord.post("/api/v1/runs", matrix({"resnet81"}, {1}, {"eager"}));
  expect_problem(typo, 400, "models[0]");
  EXPECT_NE(typo.body.find("did you mean \\\"torchvision/resnet18\\\"?"), std::string::npos) << typo.body;

  EXPECT_EQ(coord.get("/api/v1/series?model=resnet18").status, 200u);
  expect_problem(coord.get("/api/v1/series?model=50"), 400, "query.model");
  EXPECT_EQ(coord.get("/api/v1/series?model=acme/retired-model").status, 200u) << "looked up as given";
}

TEST(CoordinatorApi, InvalidMatricesAreRejectedNamingTheField) {
  CoordinatorProcess coord({{"--max-cells", "20"}});
  const json created = coord.submit(small_matrix());
  const std::int64_t run_id = created["id"];

  struct Case {
    std::string name;
    json body;
    std::string field;
  };
  std::vector<Case> cases;
  auto with = [](const std::string& key, json value) {
    json m = small_matrix();
    m[key] = std::move(value);
    return m;
  };
  cases.push_back({"unknown model", with("models", {kResnet, "acme/not-a-model"}), "models[1]"});
  cases.push_back({"batch 0", with("batch_sizes", {0, 4}), "batch_sizes[0]"});
  cases.push_back({"negative batch", with("batch_sizes", {1, -4}), "batch_sizes[1]"});
  cases.push_back({"duplicate gpu", with("gpus", {"a100", "t4", "a100"}), "gpus[2]"});
  cases.push_back({"empty axis", with("modes", json::array()), "modes"});
  cases.push_back({"unknown mode", with("modes", {"eager", "turbo"}), "modes[1]"});
  cases.push_back({"unknown field", with("colour", "blue"), "colour"});
  cases.push_back({"wrong type", with("batch_sizes", "1,4"), "batch_sizes"});
  cases.push_back({"unknown dtype", with("dtypes", {"float64"}), "dtypes[0]"});
  cases.push_back({"duplicate dtype", with("dtypes", {"bfloat16", "bfloat16"}), "dtypes[1]"});
  cases.push_back({"dynamic not a boolean", with("dynamic", "yes"), "dynamic"});
  cases.push_back({"noise threshold out of range", with("noise", {{"max_clock_drop", 1.5}}), "noise.max_clock_drop"});
  json long_walk = with("shape_walk", true);
  long_walk["batch_sizes"] = json::array();
  for (int b = 1; b <= 65; ++b) long_walk["batch_sizes"].push_back(b);
  cases.push_back({"a shape walk over 65 batch sizes", long_walk, "batch_sizes"});
  // 8 jobs x 3 dtypes = 24 > --max-cells 20: the dtypes count.
  cases.push_back({"dtypes multiply the cells", with("dtypes", {"float32", "float16", "bfloat16"}), "models"});
  json no_name = small_matrix();
  no_name.erase("name");
  cases.push_back({"missing name", no_name, "name"});
  // 3 x 3 x 3 = 27 jobs > --max-cells 20.
  cases.push_back({"too many cells",
                   matrix({kResnet, kVit, "facebook/detr-resnet-50"}, {1, 4, 16}, {"eager", "default", "max-autotune"}),
                   "models"});
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    expect_problem(coord.post("/api/v1/runs", c.body), 400, c.field);
  }
  // Just under the limit is fine: 2 x 2 x 5 = 20.
  const json at_limit = coord.submit(
      matrix({kResnet, kVit}, {1, 4}, {"eager", "default", "torchscript", "max-autotune", "reduce-overhead"}));
  EXPECT_EQ(at_limit["job_count"], 20);

  const json run = coord.get_json("/api/v1/runs/" + std::to_string(run_id));
  EXPECT_EQ(run["job_count"], 8);
  EXPECT_EQ(run["jobs"]["queued"], 8);
  EXPECT_EQ(coord.get_json("/api/v1/runs")["runs"].size(), 2u);  // nothing from the refused ones
}

TEST(CoordinatorApi, MalformedAndOversizedBodiesAreRefused) {
  CoordinatorProcess coord({{"--max-body-bytes", "4096"}});
  const json created = coord.submit(small_matrix());
  const std::int64_t run_id = created["id"];
  auto& client = coord.client();
  const std::string auth = std::string("Bearer ") + CoordinatorProcess::kOperatorToken;
  auto raw_post = [&](std::string body) {
    auto r = client.request(bhttp::verb::post, "/api/v1/runs", std::move(body),
                            {{"Authorization", auth}, {"Content-Type", "application/json"}});
    if (!r.ok()) throw std::runtime_error(r.error().describe() + "\n" + coord.log_tail());
    return *r;
  };

  {
    SCOPED_TRACE("malformed JSON");
    expect_problem(raw_post(R"({"name": "it", "models": [)"), 400);
  }
  {
    SCOPED_TRACE("not an object");
    expect_problem(raw_post("[1, 2, 3]"), 400);
  }
  {
    SCOPED_TRACE("empty body");
    expect_problem(raw_post(""), 400);
  }
  {
    SCOPED_TRACE("too deep");
    expect_problem(raw_post(std::string(100, '[') + std::string(100, ']')), 400);
  }
  {
    SCOPED_TRACE("oversized body");
    json big = small_matrix();
    big["name"] = std::string(5000, 'x');  // > --max-body-bytes 4096
    auto res = client.request(bhttp::verb::post, "/api/v1/runs", big.dump(),
                              {{"Authorization", auth}, {"Content-Type", "application/json"}});
    ASSERT_TRUE(res.ok()) << res.error().describe();
    expect_problem(*res, 413);
  }
  // The server keeps answering (a fresh connection if it closed the old one).
  expect_run_intact(coord, run_id, 8);
}

TEST(CoordinatorApi, TokensAreRequiredAndChecked) {
  CoordinatorProcess coord;
  const json created = coord.submit(small_matrix());
  const std::int64_t run_id = created["id"];
  auto& client = coord.client();

  {
    SCOPED_TRACE("submit without a token");
    auto r = client.post_json("/api/v1/runs", small_matrix());
    ASSERT_TRUE(r.ok());
    expect_problem(*r, 401);
    EXPECT_EQ(r->headers["www-authenticate"], "Bearer");
  }
  {
    SCOPED_TRACE("submit with a wrong token");
    expect_problem(coord.post("/api/v1/runs", small_matrix(), "wrong-token"), 401);
  }
  {
    SCOPED_TRACE("submit with the enrollment token");
    expect_problem(coord.post("/api/v1/runs", small_matrix(), CoordinatorProcess::kEnrollmentToken), 401);
  }
  {
    SCOPED_TRACE("cancel without a token");
    auto r = client.post_json("/api/v1/runs/" + std::to_string(run_id) + "/cancel", json::object());
    ASSERT_TRUE(r.ok());
    expect_problem(*r, 401);
  }
  // Both agents run every mode of the run: an agent lacking one would judge those cells
  // unsupported as it enrols, and the run must stay as it was.
  const json descriptor = FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager", "default"}}});
  {
    SCOPED_TRACE("enrol with the operator token");
    expect_problem(coord.post("/api/v1/agents/enroll", descriptor), 401);
  }
  {
    SCOPED_TRACE("enrol without a token");
    auto r = client.post_json("/api/v1/agents/enroll", descriptor);
    ASSERT_TRUE(r.ok());
    expect_problem(*r, 401);
  }
  FakeAgent a(coord, descriptor);
  FakeAgent b(coord, FakeAgent::descriptor("b1", {{"gpu0", "a100"}}, {{"stable", {"eager", "default"}}}));
  ASSERT_NE(a.id(), b.id());
  const std::string b_lease = "/api/v1/agents/" + std::to_string(b.id()) + "/lease";
  const std::string b_heartbeat = "/api/v1/agents/" + std::to_string(b.id()) + "/heartbeat";
  {
    SCOPED_TRACE("agent a leases for agent b");
    expect_problem(a.post(b_lease, {{"slot", "gpu0"}, {"wait_s", 0}}), 403);
  }
  {
    SCOPED_TRACE("agent a heartbeats for agent b");
    expect_problem(a.post(b_heartbeat, {{"leases", json::array()}}), 403);
  }
  {
    SCOPED_TRACE("operator token on an agent endpoint");
    expect_problem(coord.post(b_lease, {{"slot", "gpu0"}, {"wait_s", 0}}), 401);
  }
  {
    SCOPED_TRACE("forged agent token");
    const std::string forged = "bfa_" + std::to_string(b.id()) + "_not-the-secret";
    expect_problem(coord.post(b_lease, {{"slot", "gpu0"}, {"wait_s", 0}}, forged), 401);
  }
  {
    SCOPED_TRACE("unknown slot");
    expect_problem(b.lease("gpu7", 0), 404);
  }
  {
    SCOPED_TRACE("drain needs the operator token");
    expect_problem(a.post("/api/v1/agents/" + std::to_string(a.id()) + "/drain", json::object()), 401);
  }
  expect_run_intact(coord, run_id, 8);
  // And the agents' own requests still work.
  auto lease = b.lease_job("gpu0");
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(lease->spec()["gpu"], "a100");
}

TEST(CoordinatorApi, HealthMetricsAndOpenApi) {
  CoordinatorProcess coord;
  const json health = coord.get_json("/healthz");
  EXPECT_EQ(health["status"], "ok");

  auto openapi = coord.get("/api/v1/openapi.json");
  ASSERT_EQ(openapi.status, 200u);
  auto doc = openapi.json();
  ASSERT_TRUE(doc.ok()) << openapi.body.substr(0, 200);
  EXPECT_TRUE(doc->is_object());
  EXPECT_TRUE(doc->contains("paths"));

  const json models = coord.get_json("/api/v1/models");
  bool found = false;
  for (const auto& m : models["models"]) found = found || m["id"] == kResnet;
  EXPECT_TRUE(found) << models.dump();

  coord.submit(small_matrix());                     // 8 jobs
  coord.submit(matrix({kResnet}, {1}, {"eager"}));  // 1 job
  auto jobs_gauge = [&](const std::string& status) {
    auto res = coord.get("/metrics");
    EXPECT_EQ(res.status, 200u);
    std::smatch m;
    const std::regex line("(^|\n)benchfleet_jobs\\{status=\"" + status + "\"\\} ([0-9]+)\n");
    if (!std::regex_search(res.body, m, line)) {
      ADD_FAILURE() << "no benchfleet_jobs{status=\"" << status << "\"} in:\n" << res.body;
      return -1;
    }
    return std::stoi(m[2]);
  };
  EXPECT_EQ(jobs_gauge("queued"), 9);
  EXPECT_EQ(jobs_gauge("leased"), 0);

  // The slot offers every mode of the matrix, so no job is declared unsupported here.
  FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager", "default"}}}));
  ASSERT_TRUE(agent.lease_job("gpu0").has_value());
  EXPECT_EQ(jobs_gauge("queued"), 8);
  EXPECT_EQ(jobs_gauge("leased"), 1);
  const std::string text = coord.get("/metrics").body;
  EXPECT_NE(text.find("benchfleet_active_leases 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("benchfleet_runs 2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("benchfleet_agents{state=\"enrolled\"} 1\n"), std::string::npos) << text;
}

// GET /api/v1/queue, what benchfleet-slurm-launcher sizes its allocations from.
TEST(CoordinatorApi, QueueCountsQueuedAndActiveJobsPerGpuClassAndBuild) {
  CoordinatorProcess coord;
  EXPECT_EQ(coord.get_json("/api/v1/queue"), json({{"cells", json::array()}}));

  json both = small_matrix();  // 8 jobs on (a100, stable) ...
  both["gpus"] = {"t4", "a100"};
  both["torch_builds"] = {"stable", "nightly"};
  both["timeout_s"] = 300;  // the queued jobs by timeout: the launcher leaves out what cannot fit
  coord.submit(both);       // ... 8 on each of (a100, nightly), (t4, stable), (t4, nightly)
  FakeAgent agent(
      coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}, {"gpu1", "a100"}}, {{"stable", {"eager", "default"}}}));
  auto leased = agent.lease_job("gpu0");
  ASSERT_TRUE(leased.has_value());
  auto done = agent.lease_job("gpu1");
  ASSERT_TRUE(done.has_value());
  ASSERT_EQ(agent.post_result(*done, ok_result(12.5)).status, 201u);
  auto running = agent.lease_job("gpu1");
  ASSERT_TRUE(running.has_value());
  ASSERT_EQ(agent.progress(*running).status, 200u);
  const json cancelled = coord.submit(matrix({kResnet}, {1}, {"eager"}));
  ASSERT_EQ(
      coord.post("/api/v1/runs/" + std::to_string(cancelled["id"].get<std::int64_t>()) + "/cancel", json::object())
          .status,
      200u);

  auto cell = [](const char* gpu, const char* build, int queued, int active) {
    json by_timeout = json::array();
    if (queued > 0) by_timeout.push_back({{"timeout_s", 300}, {"queued", queued}});
    return json{{"gpu_class", gpu},
                {"torch_build", build},
                {"queued", queued},
                {"active", active},
                {"queued_by_timeout", by_timeout}};
  };
  const auto res = coord.get("/api/v1/queue");
  ASSERT_EQ(res.status, 200u) << res.body;
  EXPECT_EQ(res.headers.at("content-type"), "application/json");
  EXPECT_EQ(res.json().value(), json({{"cells",
                                       {cell("a100", "nightly", 8, 0), cell("a100", "stable", 5, 2),
                                        cell("t4", "nightly", 8, 0), cell("t4", "stable", 8, 0)}}}));
}

TEST(CoordinatorApi, QueueNeedsTheOperatorTokenWhenReadsAreNotPublic) {
  CoordinatorProcess coord({{"--public-reads", "false"}});
  auto anonymous = coord.client().get("/api/v1/queue");
  ASSERT_TRUE(anonymous.ok());
  expect_problem(*anonymous, 401);
  EXPECT_EQ(coord.get_json("/api/v1/queue"), json({{"cells", json::array()}}));  // with the operator token
}

// The reader token reads and does nothing else: for dashboards and reporting scripts of a
// coordinator whose reads are not public. Generated into <db>.reader-token unless set.
TEST(CoordinatorApi, TheReaderTokenReadsButCannotWrite) {
  CoordinatorProcess coord({{"--public-reads", "false"}});
  std::ifstream in(coord.db_path() + ".reader-token");
  std::string reader;
  std::getline(in, reader);
  ASSERT_GE(reader.size(), 20u);
  EXPECT_NE(reader, CoordinatorProcess::kOperatorToken);
  const json run = coord.submit(matrix({kResnet}, {1}, {"eager"}));
  const std::vector<std::string> reads = {"/api/v1/runs",  run_url(run),     run_url(run) + "/report?format=md",
                                          "/api/v1/queue", "/api/v1/agents", "/api/v1/models"};
  for (const std::string& target : reads) {
    auto read = coord.client().get(target, reader);
    ASSERT_TRUE(read.ok());
    EXPECT_EQ(read->status, 200u) << target << ": " << read->body;
    auto wrong = coord.client().get(target, std::string(reader.size(), 'x'));
    ASSERT_TRUE(wrong.ok());
    EXPECT_EQ(wrong->status, 401u) << target;
  }
  auto submit = coord.post("/api/v1/runs", matrix({kResnet}, {1}, {"eager"}), reader);
  expect_problem(submit, 401);
  expect_problem(coord.post(run_url(run) + "/cancel", json::object(), reader), 401);
  EXPECT_EQ(coord.get_json(run_url(run))["state"], "queued");
}

// Anyone holding the enrolment token could enrol under a live agent's name and take over its id
// and its lease: the lease's holder was then refused (409 lease_lost) when it posted its result.
TEST(CoordinatorApi, ReenrollingAnAgentsNameNeedsItsTokenOrAnOperatorsApproval) {
  CoordinatorProcess coord;
  const json descriptor = FakeAgent::descriptor("gpu-host-1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}});
  FakeAgent agent(coord, descriptor);
  coord.submit(matrix({kResnet}, {1}, {"eager"}));
  const auto lease = agent.lease_job("gpu0");
  ASSERT_TRUE(lease.has_value());

  const auto enrol = [&](const std::string& held) {
    http::Client::Headers headers = {{"Authorization", std::string("Bearer ") + CoordinatorProcess::kEnrollmentToken},
                                     {"Content-Type", "application/json"}};
    if (!held.empty()) headers.emplace_back("X-Agent-Token", held);
    auto r = coord.make_client()->request(boost::beast::http::verb::post, "/api/v1/agents/enroll", descriptor.dump(),
                                          headers);
    EXPECT_TRUE(r.ok());
    return r.ok() ? *r : http::ClientResponse{};
  };
  {
    SCOPED_TRACE("the enrolment token alone");
    const auto taken = enrol("");
    expect_problem(taken, 409);
    EXPECT_NE(taken.problem_detail().find("benchfleet agents approve gpu-host-1"), std::string::npos) << taken.body;
    EXPECT_NE(taken.problem_detail().find("X-Agent-Token"), std::string::npos) << taken.body;
    expect_problem(enrol("bfa_" + std::to_string(agent.id()) + "_forged"), 409);
    // The agent keeps its lease and its token.
    EXPECT_EQ(agent.heartbeat({*lease}).status, 200u);
    EXPECT_EQ(agent.post_result(*lease, ok_result(10.0)).status, 201u);
  }
  std::string token = agent.token();
  {
    SCOPED_TRACE("with the agent's current token");
    const auto again = enrol(token);
    ASSERT_EQ(again.status, 201u) << again.body;
    const json answer = json::parse(again.body);
    EXPECT_EQ(answer["agent_id"], agent.id());
    expect_problem(enrol(token), 409);  // that token was replaced by this enrolment
    token = answer["agent_token"].get<std::string>();
  }
  {
    SCOPED_TRACE("with an operator's approval, once");
    expect_problem(coord.post("/api/v1/agents/" + std::to_string(agent.id()) + "/approve", json::object(),
                              CoordinatorProcess::kEnrollmentToken),
                   401);
    const auto approved = coord.post("/api/v1/agents/" + std::to_string(agent.id()) + "/approve", json::object());
    ASSERT_EQ(approved.status, 200u) << approved.body;
    EXPECT_EQ(json::parse(approved.body)["reenrolment_approved"], true);
    const auto again = enrol("");
    ASSERT_EQ(again.status, 201u) << again.body;
    EXPECT_EQ(json::parse(again.body)["agent_id"], agent.id());
    expect_problem(enrol(""), 409);  // the approval was used up
    expect_problem(coord.post("/api/v1/agents/999/approve", json::object()), 404);
  }
  {
    SCOPED_TRACE("with the key the agent keeps (an enrolment whose answer was lost)");
    const json keyed = FakeAgent::descriptor("gpu-host-3", {{"gpu0", "a100"}}, {{"stable", {"eager"}}});
    const auto enrol_keyed = [&](const std::string& key) {
      auto r = coord.make_client()->request(
          boost::beast::http::verb::post, "/api/v1/agents/enroll", keyed.dump(),
          {{"Authorization", std::string("Bearer ") + CoordinatorProcess::kEnrollmentToken},
           {"Content-Type", "application/json"},
           {"X-Agent-Key", key}});
      EXPECT_TRUE(r.ok());
      return r.ok() ? *r : http::ClientResponse{};
    };
    const auto first = enrol_keyed("key-of-host-3-0123456789");
    ASSERT_EQ(first.status, 201u) << first.body;
    const auto again = enrol_keyed("key-of-host-3-0123456789");  // the first answer never arrived
    ASSERT_EQ(again.status, 201u) << again.body;
    EXPECT_EQ(json::parse(again.body)["agent_id"], json::parse(first.body)["agent_id"]);
    expect_problem(enrol_keyed("another-key-0123456789"), 409);
    expect_problem(enrol_keyed("short"), 400, "X-Agent-Key");
  }
  {
    SCOPED_TRACE("a new name needs nothing more");
    const json other = FakeAgent::descriptor("gpu-host-2", {{"gpu0", "a100"}}, {{"stable", {"eager"}}});
    auto r = coord.client().post_json("/api/v1/agents/enroll", other, CoordinatorProcess::kEnrollmentToken);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->status, 201u) << r->body;
  }
  {
    SCOPED_TRACE("a name that reads as an enrolled one is that name: refused, naming it");
    for (const char* alike : {"gpu-host-2 ", "GPU-Host-2", "gpu-h\xd0\xbest-2", "gpu-host-\xef\xbc\x92"}) {
      const json other = FakeAgent::descriptor(alike, {{"gpu0", "a100"}}, {{"stable", {"eager"}}});
      auto r = coord.client().post_json("/api/v1/agents/enroll", other, CoordinatorProcess::kEnrollmentToken);
      ASSERT_TRUE(r.ok());
      expect_problem(*r, 409, "name");
      EXPECT_NE(r->body.find("reads as the enrolled agent \\\"gpu-host-2\\\""), std::string::npos) << r->body;
    }
    EXPECT_EQ(coord.get_json("/api/v1/agents")["agents"].size(), 3u) << "gpu-host-1, -2 and -3 only";
  }
}

TEST(CoordinatorApi, OpenReenrolmentLetsTheEnrolmentTokenTakeOverAName) {
  CoordinatorProcess coord({{"--reenrolment", "open"}});
  const json descriptor = FakeAgent::descriptor("gpu-host-1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}});
  FakeAgent first(coord, descriptor);
  FakeAgent second(coord, descriptor);  // throws unless 201
  EXPECT_EQ(second.id(), first.id());
}

}  // namespace
}  // namespace benchfleet::testing
