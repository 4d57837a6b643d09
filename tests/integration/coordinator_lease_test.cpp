// Integration: the agent protocol against the real coordinator — leasing by slot constraints,
// renewal, expiry and retries, duplicate results, cancellation, pairing and long polling.
#include <gtest/gtest.h>

#include <future>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/coordinator_process.h"
#include "tests/support/problem_assertions.h"
#include "tests/support/raw_connection.h"

namespace benchfleet::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// The 409 problem an agent gets when it must stop working on a job.
void expect_conflict(const http::ClientResponse& res, const std::string& reason) {
  EXPECT_EQ(res.status, 409u) << res.body;
  EXPECT_EQ(res.content_type, "application/problem+json");
  auto body = res.json();
  ASSERT_TRUE(body.ok()) << res.body;
  EXPECT_EQ(body->value("reason", std::string()), reason) << res.body;
}

std::string expires_of(const http::ClientResponse& res) {
  auto body = res.json();
  if (!body.ok() || !body->contains("lease_expires_at")) return "";
  return body->at("lease_expires_at").get<std::string>();
}

TEST(CoordinatorLease, SlotGetsOnlyJobsItsClassBuildRuntimeAndModesFit) {
  CoordinatorProcess coord;
  // 1 model x 2 batches x {eager, default} x {a100, t4} x {stable, nightly} = 16 jobs.
  const json run = coord.submit(matrix({kResnet}, {1, 4}, {"eager", "default"}, {"a100", "t4"}, {"stable", "nightly"}));
  ASSERT_EQ(run["job_count"], 16);
  // A t4 slot whose stable build runs eager only (no compiled modes), and no nightly build.
  FakeAgent agent(coord, FakeAgent::descriptor("t4-host", {{"gpu0", "t4"}}, {{"stable", {"eager"}}}));
  EXPECT_EQ(agent.enrollment()["lease_ttl_s"], 60);
  EXPECT_EQ(agent.enrollment()["long_poll_timeout_s"], 10);

  std::set<std::int64_t> seen;
  for (int i = 0; i < 10; ++i) {
    auto lease = agent.lease_job("gpu0");
    if (!lease) break;
    EXPECT_TRUE(seen.insert(lease->job_id).second) << "job leased twice: " << lease->job_id;
    EXPECT_EQ(lease->spec()["gpu"], "t4");
    EXPECT_EQ(lease->spec()["torch_build"], "stable");
    EXPECT_EQ(lease->spec()["runtime"], "libtorch");
    EXPECT_EQ(lease->spec()["mode"], "eager");
    EXPECT_EQ(lease->attempt, 1);
    EXPECT_EQ(lease->job["run_id"], run["id"]);
    EXPECT_EQ(lease->job["measurement"]["min_iterations"], 30);
    EXPECT_FALSE(lease->lease_id.empty());
    auto posted = agent.post_result(*lease, ok_result(10.0 + i));
    EXPECT_EQ(posted.status, 201u) << posted.body;
  }
  EXPECT_EQ(seen.size(), 2u);  // batch 1 and 4 of t4/stable/eager
  const json state = coord.get_json(run_url(run));
  // t4/stable/default is a mode this slot's build lacks: unsupported (done), never leased.
  EXPECT_EQ(state["jobs"]["done"], 4);
  EXPECT_EQ(state["results"]["ok"], 2);
  EXPECT_EQ(state["results"]["unsupported"], 2);
  EXPECT_EQ(state["jobs"]["queued"], 12);  // a100 and t4/nightly jobs: not this slot's to judge
  EXPECT_EQ(state["state"], "running");
}

// Accuracy and dtypes through the API: each dtype is its own job, leased with its dtype; a posted verdict's
// accuracy and the noise flags (with the run's thresholds) come back in the listings; accuracy on
// a verdict that measured nothing is refused naming it; python compiled leases carry the walk.
TEST(CoordinatorLease, DtypesAccuracyAndNoiseFlagsTravelThroughTheApi) {
  CoordinatorProcess coord;
  json m = matrix({kResnet}, {1}, {"default"}, {"a100"}, {"stable"});
  m["dtypes"] = {"float32", "bfloat16"};
  m["noise"] = {{"max_cv", 0.05}};
  m["measurement"] = {{"min_iterations", 5}, {"max_iterations", 5}};  // ok_result's count, fixed
  const json run = coord.submit(m);
  ASSERT_EQ(run["job_count"], 2);
  FakeAgent agent(coord, FakeAgent::descriptor("a", {{"gpu0", "a100"}}, {{"stable", {"eager", "default"}}}));

  auto first = agent.lease_job("gpu0");
  ASSERT_TRUE(first);
  EXPECT_EQ(first->spec()["dtype"], "float32");
  EXPECT_FALSE(first->job.contains("walk_batches")) << "libtorch jobs do not walk";
  json wrong = ok_result(10.0);  // samples 0.9x to 1.1x: cv 0.08, above the run's 0.05
  wrong["stop_reason"] = "fixed_count";
  wrong["accuracy"] = {{"verdict", "wrong"},
                       {"compiled_error", 0.049},
                       {"eager_error", 4.3e-7},
                       {"tolerance", 1.0129e-4},
                       {"output", "output0"}};
  ASSERT_EQ(agent.post_result(*first, wrong).status, 201u);

  auto second = agent.lease_job("gpu0");
  ASSERT_TRUE(second);
  EXPECT_EQ(second->spec()["dtype"], "bfloat16");
  json error = {{"status", "error"}, {"error", "export failed"}, {"accuracy", {{"verdict", "unchecked"}}}};
  expect_problem(agent.post_result(*second, error), 400, "result.accuracy");
  error.erase("accuracy");
  ASSERT_EQ(agent.post_result(*second, error).status, 201u);

  const json results = coord.get_json(run_url(run) + "/results");
  ASSERT_EQ(results["results"].size(), 2u) << results.dump();
  for (const json& r : results["results"]) {
    SCOPED_TRACE(r.dump());
    if (r["job"]["dtype"] == "float32") {
      EXPECT_EQ(r["result"]["accuracy"]["verdict"], "wrong");
      EXPECT_EQ(r["flags"], json({"high_cv"}));
    } else {
      EXPECT_EQ(r["job"]["dtype"], "bfloat16");
      EXPECT_EQ(r["flags"], json::array()) << "only ok results are flagged";
    }
  }
  const json bf16 = coord.get_json(run_url(run) + "/results?dtype=bfloat16");
  ASSERT_EQ(bf16["results"].size(), 1u);
  EXPECT_EQ(bf16["results"][0]["result"]["status"], "error");
  expect_problem(coord.get(run_url(run) + "/results?dtype=half"), 400, "query.dtype");

  // A python build: its compiled job of a shape-walking matrix is told the walk.
  json walk = matrix({kResnet}, {4, 1}, {"default"}, {"t4"}, {"stable"});
  walk["runtimes"] = {"python"};
  walk["dynamic"] = true;
  walk["shape_walk"] = true;
  // Its host enrols first: a fleet of a100s alone refuses a t4 matrix.
  FakeAgent python(coord, FakeAgent::descriptor("p", {{"gpu0", "t4"}}, {{"stable", {"eager", "default"}, "python"}}));
  coord.submit(walk);
  auto walking = python.lease_job("gpu0");
  ASSERT_TRUE(walking);
  EXPECT_EQ(walking->spec()["runtime"], "python");
  EXPECT_EQ(walking->job["dynamic"], true);
  EXPECT_EQ(walking->job["walk_batches"], json({1, 4}));
}

TEST(CoordinatorLease, ProgressAndHeartbeatRenewTheLease) {
  CoordinatorProcess coord;
  coord.submit(matrix({kResnet}, {1}, {"eager"}));
  FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}}));
  auto lease = agent.lease_job("gpu0");
  ASSERT_TRUE(lease.has_value());

  // Progress moves lease_expires_at forward (timestamps have millisecond resolution).
  std::string last = lease->expires_at;
  ASSERT_TRUE(eventually([&] {
    auto res = agent.progress(*lease);
    EXPECT_EQ(res.status, 200u) << res.body;
    const std::string e = expires_of(res);
    const bool moved = e > last;
    if (!e.empty()) last = e;
    return moved;
  })) << "progress never moved lease_expires_at past "
      << lease->expires_at;

  // The job shows as running on the agent.
  const json agents = coord.get_json("/api/v1/agents");
  ASSERT_EQ(agents["agents"].size(), 1u);
  ASSERT_EQ(agents["agents"][0]["leases"].size(), 1u);
  EXPECT_EQ(agents["agents"][0]["leases"][0]["status"], "running");
  EXPECT_EQ(agents["agents"][0]["leases"][0]["job_id"], lease->job_id);

  // So does a heartbeat listing the lease.
  const std::string before_heartbeat = last;
  ASSERT_TRUE(eventually([&] {
    auto res = agent.heartbeat({*lease});
    EXPECT_EQ(res.status, 200u) << res.body;
    auto body = res.json();
    if (!body.ok() || (*body)["leases"].size() != 1) return false;
    const json& l = (*body)["leases"][0];
    EXPECT_EQ(l["state"], "active") << body->dump();
    if (!l["lease_expires_at"].is_string()) return false;
    return l["lease_expires_at"].get<std::string>() > before_heartbeat;
  })) << "heartbeat never moved lease_expires_at past "
      << before_heartbeat;

  // A lease id that is not the current one is not renewed.
  Lease forged = *lease;
  forged.lease_id = "not-a-lease";
  expect_conflict(agent.progress(forged), "lease_lost");
  auto hb = agent.heartbeat({forged}).json();
  ASSERT_TRUE(hb.ok());
  EXPECT_EQ((*hb)["leases"][0]["state"], "lost");
}

TEST(CoordinatorLease, ExpiredLeaseIsRequeuedThenFailsAfterMaxAttempts) {
  CoordinatorProcess coord({{"--lease-ttl-s", "2"}, {"--heartbeat-interval-s", "1"}, {"--max-attempts", "2"}});
  const json run = coord.submit(matrix({kResnet}, {1}, {"eager"}));
  const json descriptor = FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}});
  FakeAgent first(coord, descriptor);
  FakeAgent second(coord, FakeAgent::descriptor("a2", {{"gpu0", "a100"}}, {{"stable", {"eager"}}}));

  auto stale = first.lease_job("gpu0");
  ASSERT_TRUE(stale.has_value());
  EXPECT_EQ(stale->attempt, 1);
  // Nobody renews it: after the TTL it goes back to the queue and the other agent gets it.
  std::optional<Lease> retry;
  ASSERT_TRUE(eventually([&] {
    retry = second.lease_job("gpu0", 2);
    return retry.has_value();
  })) << "the expired job was never leased again";
  EXPECT_EQ(retry->job_id, stale->job_id);
  EXPECT_EQ(retry->attempt, 2);
  EXPECT_NE(retry->lease_id, stale->lease_id);

  // The first holder's lease is stale: renewal and result are refused.
  expect_conflict(first.progress(*stale), "lease_lost");
  expect_conflict(first.post_result(*stale, ok_result(5.0)), "lease_lost");
  auto hb = first.heartbeat({*stale}).json();
  ASSERT_TRUE(hb.ok());
  EXPECT_EQ((*hb)["leases"][0]["state"], "lost");
  EXPECT_EQ(coord.get_json(run_url(run))["results"]["ok"], 0);

  // The second attempt expires too: with --max-attempts 2 the job fails for good.
  ASSERT_TRUE(eventually([&] { return coord.get_json(run_url(run))["jobs"]["failed"] == 1; }))
      << coord.get_json(run_url(run)).dump();
  const json state = coord.get_json(run_url(run));
  EXPECT_EQ(state["jobs"]["queued"], 0);
  EXPECT_EQ(state["state"], "done");
  expect_conflict(second.progress(*retry), "lease_lost");
  EXPECT_FALSE(first.lease_job("gpu0").has_value());
  EXPECT_FALSE(second.lease_job("gpu0").has_value());
}

TEST(CoordinatorLease, DuplicateResultIsAcknowledgedAndDifferentOneRefused) {
  CoordinatorProcess coord;
  const json run = coord.submit(matrix({kResnet}, {1}, {"eager"}));
  FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}}));
  auto lease = agent.lease_job("gpu0");
  ASSERT_TRUE(lease.has_value());

  const json result = ok_result(12.5);
  auto stored = agent.post_result(*lease, result);
  ASSERT_EQ(stored.status, 201u) << stored.body;
  const json stored_body = *stored.json();
  EXPECT_EQ(stored_body["duplicate"], false);

  auto again = agent.post_result(*lease, result);
  ASSERT_EQ(again.status, 200u) << again.body;
  EXPECT_EQ((*again.json())["duplicate"], true);
  EXPECT_EQ((*again.json())["result_id"], stored_body["result_id"]);

  expect_conflict(agent.post_result(*lease, ok_result(99.0)), "result_mismatch");

  const json results = coord.get_json(run_url(run) + "/results?samples=true");
  ASSERT_EQ(results["results"].size(), 1u) << results.dump();
  EXPECT_EQ(results["results"][0]["id"], stored_body["result_id"]);
  EXPECT_EQ(results["results"][0]["result"], result);
  EXPECT_EQ(results["results"][0]["attempt"], 1);
  const json state = coord.get_json(run_url(run));
  EXPECT_EQ(state["results"]["ok"], 1);
  EXPECT_EQ(state["jobs"]["done"], 1);
  EXPECT_EQ(state["state"], "done");
}

TEST(CoordinatorLease, CancelStopsQueuedJobsAndTellsTheHolder) {
  CoordinatorProcess coord;
  const json run = coord.submit(matrix({kResnet}, {1, 4}, {"eager", "default"}));  // 4 jobs
  FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager", "default"}}}));
  auto lease = agent.lease_job("gpu0");
  ASSERT_TRUE(lease.has_value());
  ASSERT_EQ(agent.progress(*lease).status, 200u);

  auto cancelled = coord.post(run_url(run) + "/cancel", json::object());
  ASSERT_EQ(cancelled.status, 200u) << cancelled.body;
  const json body = *cancelled.json();
  EXPECT_EQ(body["cancelled_jobs"], 4);
  EXPECT_EQ(body["already_cancelled"], false);
  EXPECT_EQ(body["state"], "cancelled");

  expect_conflict(agent.progress(*lease), "cancelled");
  auto hb = agent.heartbeat({*lease}).json();
  ASSERT_TRUE(hb.ok());
  EXPECT_EQ((*hb)["leases"][0]["state"], "cancelled");
  expect_conflict(agent.post_result(*lease, ok_result(3.0)), "cancelled");

  const json state = coord.get_json(run_url(run));
  EXPECT_EQ(state["state"], "cancelled");
  EXPECT_EQ(state["jobs"]["cancelled"], 4);
  EXPECT_EQ(state["jobs"]["queued"], 0);
  EXPECT_TRUE(state["cancelled_at"].is_string());
  EXPECT_FALSE(agent.lease_job("gpu0").has_value());
  EXPECT_EQ(coord.get_json(run_url(run) + "/results")["results"].size(), 0u);

  auto twice = coord.post(run_url(run) + "/cancel", json::object());
  ASSERT_EQ(twice.status, 200u) << twice.body;
  EXPECT_EQ((*twice.json())["already_cancelled"], true);
}

TEST(CoordinatorLease, ModesOfOneModelAndBatchRunOnTheSameAgent) {
  CoordinatorProcess coord;
  const json run = coord.submit(matrix({kVit}, {1, 4}, {"eager", "default", "max-autotune"}));  // 6 jobs
  const std::vector<BuildSpec> builds = {{"stable", {"eager", "default", "max-autotune"}}};
  FakeAgent a(coord, FakeAgent::descriptor("agent-a", {{"gpu0", "a100"}}, builds));
  FakeAgent b(coord, FakeAgent::descriptor("agent-b", {{"gpu0", "a100"}}, builds));

  // Both agents work in lockstep: each holds one job at a time.
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    auto la = a.lease_job("gpu0");
    auto lb = b.lease_job("gpu0");
    ASSERT_TRUE(la.has_value());
    ASSERT_TRUE(lb.has_value());
    ASSERT_EQ(a.post_result(*la, ok_result(10.0)).status, 201u);
    ASSERT_EQ(b.post_result(*lb, ok_result(20.0)).status, 201u);
  }
  EXPECT_FALSE(a.lease_job("gpu0").has_value());

  const json results = coord.get_json(run_url(run) + "/results?samples=false");
  ASSERT_EQ(results["results"].size(), 6u);
  std::map<int, std::set<std::string>> agents_by_batch;
  std::map<int, std::set<std::string>> modes_by_batch;
  for (const auto& r : results["results"]) {
    const int batch = r["job"]["batch"];
    agents_by_batch[batch].insert(r["agent"].get<std::string>());
    modes_by_batch[batch].insert(r["job"]["mode"].get<std::string>());
    EXPECT_EQ(r["slot"], "gpu0");
    EXPECT_FALSE(r["result"].contains("samples_ms"));  // samples=false
  }
  ASSERT_EQ(agents_by_batch.size(), 2u);
  for (const auto& [batch, agents] : agents_by_batch) {
    EXPECT_EQ(agents.size(), 1u) << "batch " << batch << " ran on several agents";
    EXPECT_EQ(modes_by_batch[batch].size(), 3u);
  }
  EXPECT_NE(*agents_by_batch[1].begin(), *agents_by_batch[4].begin()) << "both groups ran on one agent";
}

TEST(CoordinatorLease, LongPollReturnsNullAfterWaitOnAnEmptyQueue) {
  CoordinatorProcess coord;
  FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}}));
  const auto start = std::chrono::steady_clock::now();
  auto res = agent.lease("gpu0", 5);
  const auto elapsed = std::chrono::steady_clock::now() - start;
  ASSERT_EQ(res.status, 200u) << res.body;
  const json body = *res.json();
  EXPECT_TRUE(body["job"].is_null()) << body.dump();
  EXPECT_EQ(body["draining"], false);
  // The server held the request for the wait (a lower bound: it cannot answer "nothing" early).
  EXPECT_GE(elapsed, 4500ms);
  EXPECT_LT(elapsed, 20s);
}

TEST(CoordinatorLease, WaitingLeaseIsWokenBySubmission) {
  CoordinatorProcess coord({{"--long-poll-timeout-s", "60"}});
  FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}}));
  // The request waits up to 60 s; the job must arrive long before. The answer is awaited for at
  // most 20 s, so a coordinator that only looks again at the deadline fails here.
  auto waiting = std::async(std::launch::async, [&agent] { return agent.lease("gpu0", 60); });
  // Submit once the request is parked on the server (it counts as in flight in /metrics only
  // after it finished, so just give it a moment; the test passes either way when wake-up works).
  std::this_thread::sleep_for(300ms);
  const json run = coord.submit(matrix({kResnet}, {16}, {"eager"}));
  if (waiting.wait_for(20s) != std::future_status::ready) {
    coord.kill9();  // ends the parked request, so the future's destructor does not wait for it
    FAIL() << "the waiting lease was not woken by the submission";
  }
  auto res = waiting.get();
  ASSERT_EQ(res.status, 200u) << res.body;
  const json body = *res.json();
  ASSERT_TRUE(body["job"].is_object()) << body.dump();
  EXPECT_EQ(body["job"]["run_id"], run["id"]);
  EXPECT_EQ(body["job"]["spec"]["batch"], 16);
}

// ---- a lease goes only to a live poll, and a retried poll does not burn attempts ----

unsigned short port_of(const CoordinatorProcess& coord) {
  const std::string url = coord.base_url();
  return static_cast<unsigned short>(std::stoi(url.substr(url.rfind(':') + 1)));
}

// A lease request written by hand on a raw socket, so the test can hang up mid-wait.
std::string raw_lease_request(const FakeAgent& agent, const std::string& slot, int wait_s) {
  const std::string body = json{{"slot", slot}, {"wait_s", wait_s}}.dump();
  return "POST /api/v1/agents/" + std::to_string(agent.id()) +
         "/lease HTTP/1.1\r\n"
         "Host: 127.0.0.1\r\nAuthorization: Bearer " +
         agent.token() + "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

TEST(CoordinatorLease, LongPollWhoseClientHungUpIsNeverGranted) {
  CoordinatorProcess coord({{"--long-poll-timeout-s", "60"}});
  FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}}));
  {
    RawConnection gone(port_of(coord));
    gone.send(raw_lease_request(agent, "gpu0", 20));
    std::this_thread::sleep_for(500ms);
  }  // closes the socket while the poll waits
  std::this_thread::sleep_for(300ms);
  const json run = coord.submit(matrix({kResnet}, {1}, {"eager"}));
  // Had the hung-up poll been granted, the job would be leased now; give it time to happen.
  std::this_thread::sleep_for(1500ms);
  json state = coord.get_json(run_url(run));
  EXPECT_EQ(state["jobs"]["queued"], 1) << state.dump();
  EXPECT_EQ(state["jobs"].value("leased", 0), 0) << state.dump();

  // The next live poll gets it, at attempt 1, and it finishes.
  auto lease = agent.lease_job("gpu0", 5);
  ASSERT_TRUE(lease.has_value());
  EXPECT_EQ(lease->attempt, 1);
  auto posted = agent.post_result(*lease, ok_result(7.0));
  EXPECT_EQ(posted.status, 201u) << posted.body;
  state = coord.get_json(run_url(run));
  EXPECT_EQ(state["results"]["ok"], 1) << state.dump();
  EXPECT_EQ(state["state"], "done") << state.dump();
}

TEST(CoordinatorLease, ConcurrentPollsOfOneSlotShareOneLeaseAndAttempt) {
  CoordinatorProcess coord({{"--long-poll-timeout-s", "60"}});
  FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}}));
  const std::string target = "/api/v1/agents/" + std::to_string(agent.id()) + "/lease";
  std::vector<std::future<http::ClientResponse>> polls;
  for (int i = 0; i < 4; ++i) {
    polls.push_back(std::async(std::launch::async, [&coord, &agent, &target] {
      auto client = coord.make_client();
      auto res = client->post_json(target, json{{"slot", "gpu0"}, {"wait_s", 20}}, agent.token(), 40s);
      if (!res.ok()) throw std::runtime_error(res.error().message);
      return *res;
    }));
  }
  std::this_thread::sleep_for(500ms);  // all four parked
  const json run = coord.submit(matrix({kResnet}, {1}, {"eager"}));

  std::set<std::string> lease_ids;
  std::set<int> attempts;
  std::optional<Lease> lease;
  for (auto& poll : polls) {
    ASSERT_EQ(poll.wait_for(30s), std::future_status::ready);
    const http::ClientResponse res = poll.get();
    ASSERT_EQ(res.status, 200u) << res.body;
    const json body = *res.json();
    ASSERT_TRUE(body["job"].is_object()) << body.dump();  // every live poll is answered the lease
    lease_ids.insert(body["job"]["lease_id"].get<std::string>());
    attempts.insert(body["job"]["attempt"].get<int>());
    lease = Lease{body["job"]["id"].get<std::int64_t>(), body["job"]["lease_id"].get<std::string>(),
                  body["job"]["attempt"].get<int>(), body["job"]["lease_expires_at"].get<std::string>(), body["job"]};
  }
  EXPECT_EQ(lease_ids.size(), 1u);
  EXPECT_EQ(attempts, std::set<int>{1});
  ASSERT_TRUE(lease.has_value());
  auto posted = agent.post_result(*lease, ok_result(7.0));
  EXPECT_EQ(posted.status, 201u) << posted.body;
  const json state = coord.get_json(run_url(run));
  EXPECT_EQ(state["results"]["ok"], 1) << state.dump();
  EXPECT_EQ(state["jobs"].value("failed", 0), 0) << state.dump();
  EXPECT_EQ(state["state"], "done") << state.dump();
}

TEST(CoordinatorLease, RetriedPollGetsTheSameLeaseUntilAcknowledged) {
  CoordinatorProcess coord;
  const json run = coord.submit(matrix({kResnet}, {1, 4}, {"eager"}));
  FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}}));
  const std::string target = "/api/v1/agents/" + std::to_string(agent.id()) + "/lease";
  const json poll = {{"slot", "gpu0"}, {"wait_s", 0}, {"request_id", "r-1"}};
  const json first = *agent.post(target, poll).json();
  ASSERT_TRUE(first["job"].is_object()) << first.dump();
  // The answer was lost; the agent retries: same lease, same attempt (with or without the id).
  const json retried = *agent.post(target, poll).json();
  ASSERT_TRUE(retried["job"].is_object()) << retried.dump();
  EXPECT_EQ(retried["job"]["lease_id"], first["job"]["lease_id"]);
  EXPECT_EQ(retried["job"]["attempt"], 1);
  auto plain = agent.lease_job("gpu0");
  ASSERT_TRUE(plain.has_value());
  EXPECT_EQ(plain->lease_id, first["job"]["lease_id"]);
  EXPECT_EQ(plain->attempt, 1);
  // A retry of the same request still gets it once the agent has acknowledged it (heartbeat).
  ASSERT_EQ(agent.heartbeat({*plain}).status, 200u);
  const json after_ack = *agent.post(target, poll).json();
  EXPECT_EQ(after_ack["job"]["lease_id"], first["job"]["lease_id"]);
  // A new poll (another request id) after the acknowledgement: the slot gave the job up, as
  // before (an agent restart): it is released at attempt 1 and the slot gets the next job.
  const json fresh = *agent.post(target, json{{"slot", "gpu0"}, {"wait_s", 0}, {"request_id", "r-2"}}).json();
  ASSERT_TRUE(fresh["job"].is_object()) << fresh.dump();
  EXPECT_NE(fresh["job"]["lease_id"], first["job"]["lease_id"]);
  expect_conflict(agent.progress(*plain), "lease_lost");
  // A malformed request id is refused.
  EXPECT_EQ(agent.post(target, json{{"slot", "gpu0"}, {"request_id", "a b"}}).status, 400u);
  (void)run;
}

}  // namespace
}  // namespace benchfleet::testing

namespace benchfleet::testing {
namespace {

// GET /runs/{id}'s eta_s: none before a job finished, then from the run's job times, moving while
// a job runs (not frozen until it ends), none once the run ended.
TEST(CoordinatorLease, TheRunsEtaIsReestimatedWhileAJobRuns) {
  CoordinatorProcess coord;
  const json run = coord.submit(matrix({kResnet}, {1, 4, 16}, {"eager"}, {"t4"}, {"stable"}));
  FakeAgent agent(coord, FakeAgent::descriptor("t4-host", {{"gpu0", "t4"}}, {{"stable", {"eager"}}}));
  const auto eta = [&] { return coord.get_json(run_url(run))["eta_s"]; };
  EXPECT_TRUE(eta().is_null()) << "no job finished: no basis";

  auto first = agent.lease_job("gpu0");
  ASSERT_TRUE(first.has_value());
  std::this_thread::sleep_for(300ms);
  ASSERT_EQ(agent.post_result(*first, ok_result(10.0)).status, 201u);
  const json after_one = eta();
  ASSERT_TRUE(after_one.is_number()) << coord.get_json(run_url(run)).dump();
  EXPECT_GE(after_one.get<double>(), 2 * 0.3) << "two jobs left, the first took at least 300 ms";

  auto second = agent.lease_job("gpu0");
  ASSERT_TRUE(second.has_value());
  std::this_thread::sleep_for(100ms);
  const json early = eta();
  std::this_thread::sleep_for(150ms);
  const json later = eta();
  ASSERT_TRUE(early.is_number() && later.is_number());
  EXPECT_NE(early.get<double>(), later.get<double>()) << "re-estimated as the running job spends time";

  ASSERT_EQ(agent.post_result(*second, ok_result(10.0)).status, 201u);
  auto third = agent.lease_job("gpu0");
  ASSERT_TRUE(third.has_value());
  ASSERT_EQ(agent.post_result(*third, ok_result(10.0)).status, 201u);
  const json done = coord.get_json(run_url(run));
  EXPECT_EQ(done["state"], "done");
  EXPECT_TRUE(done["eta_s"].is_null());
}

}  // namespace
}  // namespace benchfleet::testing
