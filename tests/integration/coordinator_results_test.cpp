// Integration: results through the real coordinator — the comparison report with OOM and
// implied OOM cells, and durability across a kill -9 and restart (results and live leases).
#include <sys/wait.h>

#include <gtest/gtest.h>

#include <ctime>
#include <set>
#include <string>
#include <thread>

#include "common/codecs.h"
#include "common/stats.h"
#include "tests/support/coordinator_process.h"
#include "tests/support/problem_assertions.h"

namespace benchfleet::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

// The latency each (model, batch, mode) job reports in the report test: distinct per cell.
double posted_mean(const std::string& model, int batch, const std::string& mode) {
  return (model == kResnet ? 100.0 : 200.0) + batch * 2.0 + (mode == "eager" ? 0.25 : 0.0);
}
double posted_median(const std::string& model, int batch, const std::string& mode) {
  return posted_mean(model, batch, mode) - 0.125;
}

const json& table_for(const json& report, int batch) {
  for (const auto& t : report["tables"]) {
    if (t["gpu"] == "a100" && t["batch"] == batch) return t;
  }
  throw std::runtime_error("no a100 table for batch " + std::to_string(batch) + " in " + report.dump());
}

// The cell of `model` in the column with `key` ("latency/stable/libtorch/eager").
const json& cell_for(const json& table, const std::string& model, const std::string& key) {
  std::size_t column = table["columns"].size();
  for (std::size_t i = 0; i < table["columns"].size(); ++i) {
    if (table["columns"][i]["key"] == key) column = i;
  }
  if (column == table["columns"].size()) throw std::runtime_error("no column " + key + " in " + table.dump());
  for (const auto& row : table["rows"]) {
    if (row["model"] == model) return row["cells"][column];
  }
  throw std::runtime_error("no row " + model + " in " + table.dump());
}

TEST(CoordinatorResults, ReportShowsOomAndImpliedOomCells) {
  CoordinatorProcess coord;
  // 2 models x batch {1, 4, 16} x {eager, default} on one GPU class: 12 jobs.
  const json run = coord.submit(matrix({kResnet, kVit}, {1, 4, 16}, {"eager", "default"}));
  ASSERT_EQ(run["job_count"], 12);
  FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager", "default"}}}));

  // ResNet-50 eager runs out of memory at batch 4; everything else measures.
  std::set<std::tuple<std::string, int, std::string>> leased;
  for (int i = 0; i < 20; ++i) {
    auto lease = agent.lease_job("gpu0");
    if (!lease) break;
    const std::string model = lease->spec()["model"];
    const int batch = lease->spec()["batch"];
    const std::string mode = lease->spec()["mode"];
    ASSERT_TRUE(leased.emplace(model, batch, mode).second) << "leased twice: " << lease->spec().dump();
    const bool oom = model == kResnet && batch == 4 && mode == "eager";
    const json result = oom ? oom_result("warmup", 3LL << 30)
                            : ok_result(posted_mean(model, batch, mode), posted_median(model, batch, mode));
    auto posted = agent.post_result(*lease, result);
    ASSERT_EQ(posted.status, 201u) << posted.body;
    EXPECT_EQ((*posted.json())["implied_oom"], oom ? 1 : 0);
  }
  // Batch 16 eager of ResNet-50 was implied by the OOM at batch 4 and never handed out.
  EXPECT_EQ(leased.size(), 11u);
  EXPECT_FALSE(leased.contains({kResnet, 16, "eager"}));

  const json state = coord.get_json(run_url(run));
  EXPECT_EQ(state["state"], "done");
  EXPECT_EQ(state["jobs"]["done"], 12);
  EXPECT_EQ(state["results"]["ok"], 10);
  EXPECT_EQ(state["results"]["oom"], 1);
  EXPECT_EQ(state["results"]["oom_implied"], 1);
  const json implied = coord.get_json(run_url(run) + "/results?status=oom_implied");
  ASSERT_EQ(implied["results"].size(), 1u);
  EXPECT_EQ(implied["results"][0]["job"]["batch"], 16);
  EXPECT_EQ(implied["results"][0]["job"]["model"], kResnet);
  EXPECT_EQ(implied["results"][0]["job"]["mode"], "eager");
  EXPECT_EQ(coord.get_json(run_url(run) + "/results?model=" + kResnet + "&batch=16")["results"].size(), 2u);

  for (const std::string stat : {"mean", "median"}) {
    SCOPED_TRACE("stat=" + stat);
    const json report = coord.get_json(run_url(run) + "/report?format=json&stat=" + stat);
    EXPECT_EQ(report["stat"], stat);
    ASSERT_EQ(report["tables"].size(), 3u);
    for (int batch : {1, 4, 16}) {
      const json& table = table_for(report, batch);
      ASSERT_EQ(table["rows"].size(), 2u);
      for (const std::string& model : {kResnet, kVit}) {
        for (const std::string mode : {"eager", "default"}) {
          SCOPED_TRACE(model + " batch " + std::to_string(batch) + " " + mode);
          const json& cell = cell_for(table, model, "latency/stable/libtorch/" + mode);
          if (model == kResnet && mode == "eager" && batch == 4) {
            EXPECT_EQ(cell["status"], "oom");
            EXPECT_EQ(cell["text"], "OOM");
            EXPECT_TRUE(cell["value"].is_null());
          } else if (model == kResnet && mode == "eager" && batch == 16) {
            EXPECT_EQ(cell["status"], "oom_implied");
            EXPECT_EQ(cell["text"], "OOM (implied)");
            EXPECT_TRUE(cell["value"].is_null());
          } else {
            EXPECT_EQ(cell["status"], "ok");
            ASSERT_TRUE(cell["value"].is_number()) << cell.dump();
            const double want = stat == "mean" ? posted_mean(model, batch, mode) : posted_median(model, batch, mode);
            EXPECT_DOUBLE_EQ(cell["value"].get<double>(), want);
            EXPECT_EQ(cell["n"], 1);
          }
        }
        const json& speedup = cell_for(table, model, "speedup/stable/libtorch/default");
        const bool eager_ok = !(model == kResnet && batch >= 4);
        EXPECT_EQ(speedup["status"], eager_ok ? "ok" : "unavailable") << speedup.dump();
      }
    }
  }

  auto md = coord.get(run_url(run) + "/report?format=md");
  ASSERT_EQ(md.status, 200u);
  EXPECT_NE(md.content_type.find("text/markdown"), std::string::npos);
  EXPECT_NE(md.body.find("| OOM |"), std::string::npos) << md.body;
  EXPECT_NE(md.body.find("| OOM (implied) |"), std::string::npos) << md.body;
  EXPECT_NE(md.body.find("A100 (batch size: 16)"), std::string::npos) << md.body;

  auto csv = coord.get(run_url(run) + "/report?format=csv");
  ASSERT_EQ(csv.status, 200u);
  EXPECT_NE(csv.content_type.find("text/csv"), std::string::npos);
  EXPECT_EQ(csv.body.substr(0, csv.body.find("\r\n")),
            "gpu,batch,dtype,task_model,model_id,column,build,runtime,mode,kind,value,status,text,accuracy,flags,"
            "compile_ms,compile_cache,peak_memory_mb,samples_per_s,stat,ci_low_ms,ci_high_ms,change");
  EXPECT_NE(csv.body.find(",oom_implied,OOM (implied),,,,,,,median,,,\r\n"), std::string::npos) << csv.body;

  auto bad = coord.get(run_url(run) + "/report?format=xml");
  EXPECT_EQ(bad.status, 400u);

  // Exclude_flagged is true or false, and the report says which it was built with.
  expect_problem(coord.get(run_url(run) + "/report?exclude_flagged=yes"), 400, "query.exclude_flagged");
  auto excluding = coord.get(run_url(run) + "/report?exclude_flagged=true");
  ASSERT_EQ(excluding.status, 200u) << excluding.body;
  EXPECT_EQ(excluding.json().value()["exclude_flagged"], true);
  EXPECT_EQ(coord.get(run_url(run) + "/report").json().value()["exclude_flagged"], false);
}

// Accuracy and dtypes through the real coordinator: a table per dtype, the posted accuracy verdicts, noise
// flags, compile time and peak memory in the report, and the wrong speedup out of its geomean.
TEST(CoordinatorResults, ReportShowsAccuracyFlagsCompileAndMemoryPerDtype) {
  CoordinatorProcess coord;
  json spec = matrix({kResnet, kVit}, {1}, {"eager", "default"});
  spec["dtypes"] = {"float32", "float16"};
  spec["measurement"] = {{"min_iterations", 5}, {"max_iterations", 5}};  // ok_result's count, fixed
  const json run = coord.submit(spec);
  ASSERT_EQ(run["job_count"], 8);
  FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager", "default"}}}));
  for (int i = 0; i < 8; ++i) {
    auto lease = agent.lease_job("gpu0");
    ASSERT_TRUE(lease.has_value()) << "job " << i;
    const std::string model = lease->spec()["model"];
    const std::string mode = lease->spec()["mode"];
    const std::string dtype = lease->spec()["dtype"];
    json result = ok_result(mode == "eager" ? 20.0 : 10.0);
    result["stop_reason"] = "fixed_count";
    result["memory"]["peak_allocated_bytes"] = (mode == "eager" ? 400LL : 200LL) << 20;
    if (mode == "default") {
      result["export_s"] = 12.5;
      const bool wrong = model == kResnet && dtype == "float32";
      result["accuracy"] = {{"verdict", wrong ? "wrong" : "pass"},
                            {"compiled_error", wrong ? 0.049 : 1e-6},
                            {"eager_error", 4.3e-7},
                            // the rule's: 3 x eager_error + the dtype's floor (on CUDA)
                            {"tolerance", 3 * 4.3e-7 + (dtype == "float16" ? 1e-2 : 1e-4)},
                            {"output", "output0"},
                            {"detail", ""}};
    }
    // ViT's float16 eager ran while the GPU throttled (power cap).
    if (model == kVit && dtype == "float16" && mode == "eager") result["telemetry"]["after_throttle_reasons"] = 4;
    auto posted = agent.post_result(*lease, result);
    ASSERT_EQ(posted.status, 201u) << posted.body;
  }

  const json report = coord.get_json(run_url(run) + "/report?format=json");
  ASSERT_EQ(report["tables"].size(), 2u);
  const json& f32 = report["tables"][0];
  const json& f16 = report["tables"][1];
  EXPECT_EQ(f32["dtype"], "float32");
  EXPECT_EQ(f32["title"], "A100 (batch size: 1, float32)");
  EXPECT_EQ(f16["title"], "A100 (batch size: 1, float16)");
  const json& wrong = cell_for(f32, kResnet, "latency/stable/libtorch/default");
  EXPECT_EQ(wrong["accuracy"], "wrong");
  EXPECT_EQ(wrong["text"], "10.000") << "the latency stays";
  EXPECT_EQ(cell_for(f32, kResnet, "speedup/stable/libtorch/default")["accuracy"], "wrong");
  EXPECT_EQ(cell_for(f32, kVit, "latency/stable/libtorch/default")["accuracy"], "pass");
  EXPECT_TRUE(cell_for(f32, kVit, "latency/stable/libtorch/eager")["accuracy"].is_null());
  EXPECT_EQ(f32["geomeans"][0]["covered"], 1);
  EXPECT_EQ(f32["geomeans"][0]["excluded_inaccurate"], 1);
  EXPECT_EQ(f32["pass_rates"][0]["text"], "Pass rate stable - default: 1/2 (50%): 1 wrong");
  const json& compile = cell_for(f32, kVit, "compile/stable/libtorch/default");
  EXPECT_DOUBLE_EQ(compile["value"].get<double>(), 12'500);
  EXPECT_EQ(compile["text"], "12.5 s");
  EXPECT_DOUBLE_EQ(cell_for(f32, kVit, "memory/stable/libtorch/eager")["value"].get<double>(), 400);
  EXPECT_DOUBLE_EQ(cell_for(f32, kVit, "memory_ratio/stable/libtorch/default")["value"].get<double>(), 2);

  EXPECT_EQ(cell_for(f16, kVit, "latency/stable/libtorch/eager")["flags"], json({"throttled"}));
  EXPECT_EQ(cell_for(f16, kVit, "speedup/stable/libtorch/default")["flags"], json({"throttled"}));
  EXPECT_EQ(f16["geomeans"][0]["covered"], 2) << "flagged speedups count unless asked";
  const json excluding = coord.get_json(run_url(run) + "/report?format=json&exclude_flagged=true");
  EXPECT_EQ(excluding["tables"][1]["geomeans"][0]["covered"], 1);
  EXPECT_EQ(excluding["tables"][1]["geomeans"][0]["excluded_flagged"], 1);

  const auto md = coord.get(run_url(run) + "/report?format=md");
  ASSERT_EQ(md.status, 200u);
  EXPECT_NE(md.body.find("| 10.000 (wrong) | 2.00x (wrong) |"), std::string::npos) << md.body;
  EXPECT_NE(md.body.find("| 20.000* | 10.000 | 2.00x* |"), std::string::npos) << md.body;
  EXPECT_NE(md.body.find("#### Compile time and memory, A100 (batch size: 1, float16)"), std::string::npos) << md.body;
}

TEST(CoordinatorResults, AcknowledgedResultsSurviveKill9) {
  CoordinatorProcess coord;
  const json run = coord.submit(matrix({kResnet}, {1, 2, 4, 8}, {"eager", "default"}));  // 8 jobs
  FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager", "default"}}}));

  std::map<std::int64_t, json> acknowledged;  // result id -> the result posted
  std::optional<Lease> last_lease;
  json last_result;
  for (int i = 0; i < 8; ++i) {
    auto lease = agent.lease_job("gpu0");
    ASSERT_TRUE(lease.has_value()) << "job " << i;
    last_lease = lease;
    json result = ok_result(10.0 + i * 1.337, 9.5 + i * 1.337, 3 + i);
    if (i % 3 == 2) {
      result = {{"status", "error"},
                {"error", "worker exited: \"quoted\" message " + std::to_string(i)},
                {"samples_ms", json::array()},
                {"environment", {{"torch", "2.0.0+test"}}},
                {"telemetry", json::object()}};
    }
    auto posted = agent.post_result(*lease, result);
    ASSERT_EQ(posted.status, 201u) << posted.body;
    acknowledged[(*posted.json())["result_id"].get<std::int64_t>()] = result;
    last_result = result;
  }
  coord.kill9();  // right after the last acknowledgement: nothing gets a chance to flush
  coord.start();

  const json results = coord.get_json(run_url(run) + "/results?samples=true");
  ASSERT_EQ(results["results"].size(), acknowledged.size()) << results.dump();
  for (const auto& row : results["results"]) {
    const std::int64_t id = row["id"];
    ASSERT_TRUE(acknowledged.contains(id)) << "unexpected result " << id;
    EXPECT_EQ(row["result"], acknowledged[id]) << "result " << id;
    EXPECT_EQ(row["agent"], "a1");
    const json single = coord.get_json("/api/v1/results/" + std::to_string(id));
    EXPECT_EQ(single["result"], acknowledged[id]);
  }
  const json state = coord.get_json(run_url(run));
  EXPECT_EQ(state["state"], "done");
  EXPECT_EQ(state["jobs"]["done"], 8);
  EXPECT_EQ(state["results"]["ok"], 6);
  EXPECT_EQ(state["results"]["error"], 2);  // i = 2 and 5
  // An agent that missed the last acknowledgement posts again: acknowledged, no second row.
  auto again = agent.post_result(*last_lease, last_result);
  ASSERT_EQ(again.status, 200u) << again.body;
  EXPECT_EQ((*again.json())["duplicate"], true);
  EXPECT_EQ(coord.get_json(run_url(run) + "/results")["results"].size(), acknowledged.size());
  // The agent's credentials survived too.
  EXPECT_FALSE(agent.lease_job("gpu0").has_value());
}

// Milliseconds since the epoch of "2026-11-21T20:05:00.123Z".
std::int64_t parse_time_ms(const std::string& text) {
  std::tm tm{};
  int ms = 0;
  if (std::sscanf(text.c_str(), "%d-%d-%dT%d:%d:%d.%dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
                  &tm.tm_sec, &ms) != 7) {
    throw std::runtime_error("not an RFC 3339 time: " + text);
  }
  tm.tm_year -= 1900;
  tm.tm_mon -= 1;
  return static_cast<std::int64_t>(timegm(&tm)) * 1000 + ms;
}

// Sleeps until the wall clock (the coordinator's clock: same machine) is past `time` + margin.
void sleep_past(const std::string& time, std::chrono::milliseconds margin) {
  const auto target = std::chrono::system_clock::time_point(std::chrono::milliseconds(parse_time_ms(time))) + margin;
  while (std::chrono::system_clock::now() < target) std::this_thread::sleep_for(50ms);
}

TEST(CoordinatorResults, LeaseGrantedBeforeRestartCanBeRenewedWithinGrace) {
  CoordinatorProcess coord({{"--lease-ttl-s", "2"}, {"--heartbeat-interval-s", "1"}, {"--restart-grace-s", "30"}});
  const json run = coord.submit(matrix({kResnet}, {1}, {"eager"}));
  FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}}));
  auto lease = agent.lease_job("gpu0");
  ASSERT_TRUE(lease.has_value());

  coord.kill9();
  sleep_past(lease->expires_at, 500ms);  // the TTL passes while the coordinator is down
  coord.start();

  auto renewed = agent.progress(*lease);
  ASSERT_EQ(renewed.status, 200u) << renewed.body;
  EXPECT_GT((*renewed.json())["lease_expires_at"].get<std::string>(), lease->expires_at);
  auto hb = agent.heartbeat({*lease}).json();
  ASSERT_TRUE(hb.ok());
  EXPECT_EQ((*hb)["leases"][0]["state"], "active");
  // Nobody else gets the job, and the holder's result is stored.
  FakeAgent other(coord, FakeAgent::descriptor("a2", {{"gpu0", "a100"}}, {{"stable", {"eager"}}}));
  EXPECT_FALSE(other.lease_job("gpu0").has_value());
  auto posted = agent.post_result(*lease, ok_result(7.0));
  EXPECT_EQ(posted.status, 201u) << posted.body;
  EXPECT_EQ(coord.get_json(run_url(run))["state"], "done");
}

TEST(CoordinatorResults, WithoutGraceAnExpiredLeaseIsRequeuedAfterRestart) {
  CoordinatorProcess coord({{"--lease-ttl-s", "2"}, {"--heartbeat-interval-s", "1"}, {"--restart-grace-s", "0"}});
  const json run = coord.submit(matrix({kResnet}, {1}, {"eager"}));
  FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}}));
  auto lease = agent.lease_job("gpu0");
  ASSERT_TRUE(lease.has_value());

  const int status = coord.stop();  // graceful this time: SIGTERM
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "exit status " << status;
  sleep_past(lease->expires_at, 500ms);
  coord.start();

  ASSERT_TRUE(eventually([&] { return coord.get_json(run_url(run))["jobs"]["queued"] == 1; }))
      << coord.get_json(run_url(run)).dump();
  auto stale = agent.progress(*lease);
  EXPECT_EQ(stale.status, 409u) << stale.body;
  auto again = agent.lease_job("gpu0");
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->job_id, lease->job_id);
  EXPECT_EQ(again->attempt, 2);
}

// docs/design.md §7: a result or renewal under a stale lease is refused (409). A lease whose TTL has
// passed is stale whether or not the periodic expiry sweep has run yet. Here the TTL passes while
// the coordinator is down and --restart-grace-s is 0, so nothing extends it; the renewal sent
// right after the restart reaches the server before its first sweep (a quarter TTL later).
// Store::renew_locked and Store::record_result only compare lease id, agent and status, never
// lease_expires_at with the clock, so today this renewal is answered 200 "active" (and a result
// 201); whether it is refused depends on a race with the sweep.
TEST(CoordinatorResults, ExpiredLeaseIsRefusedEvenBeforeTheExpirySweep) {
  CoordinatorProcess coord({{"--lease-ttl-s", "2"}, {"--heartbeat-interval-s", "1"}, {"--restart-grace-s", "0"}});
  const json run = coord.submit(matrix({kResnet}, {1}, {"eager"}));
  FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}}));
  auto lease = agent.lease_job("gpu0");
  ASSERT_TRUE(lease.has_value());

  coord.kill9();
  sleep_past(lease->expires_at, 500ms);
  coord.start();

  auto renewal = agent.progress(*lease);
  EXPECT_EQ(renewal.status, 409u) << "an expired lease was renewed: " << renewal.body;
  auto result = agent.post_result(*lease, ok_result(7.0));
  EXPECT_EQ(result.status, 409u) << "a result from an expired lease was stored: " << result.body;
  // Whatever was answered, the job ends up consistent: requeued with a second attempt to come.
  if (renewal.status == 409u && result.status == 409u) {
    auto again = agent.lease_job("gpu0", 2);
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(again->attempt, 2);
  }
}

// Results that contradict themselves are refused with a problem naming the
// field, the lease stays the agent's, and a consistent result is stored afterwards.
TEST(CoordinatorResults, NonsenseResultsAreRefusedNamingTheField) {
  CoordinatorProcess coord;
  const json run = coord.submit(matrix({kResnet}, {1}, {"eager"}));
  FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}}));
  auto lease = agent.lease_job("gpu0");
  ASSERT_TRUE(lease.has_value());

  const auto refused = [&](const json& result, const std::string& field) {
    auto res = agent.post_result(*lease, result);
    EXPECT_EQ(res.status, 400u) << field << ": " << res.body;
    EXPECT_NE(res.body.find("\"" + field), std::string::npos) << res.body;
  };
  json huge = ok_result(7.0);
  huge["samples_ms"] = json::array({1.7e308, 1.7e308, 1.7e308, 1.7e308, 1.7e308});
  refused(huge, "result.samples_ms[0]");
  json lying = ok_result(1.0, 1.0, 3);
  lying["samples_ms"] = json::array({1.0, 1.0, 1.0});
  lying["stats"]["mean_ms"] = 5e8;
  lying["stats"]["max_ms"] = 5e8;
  refused(lying, "result.stats.mean_ms");
  json swapped = ok_result(7.0);
  swapped["stats"]["p99_ms"] = swapped["stats"]["p90_ms"].get<double>() - 1;
  refused(swapped, "result.stats.p99_ms");
  json negative = ok_result(7.0);
  negative["first_call_ms"] = -1.0;
  refused(negative, "result.first_call_ms");
  refused(json{{"status", "oom_implied"}}, "result.status");
  json error_with_stats = ok_result(7.0);
  error_with_stats["status"] = "error";
  refused(error_with_stats, "result.stats");

  EXPECT_EQ(coord.get_json(run_url(run) + "/results")["results"].size(), 0u);
  auto posted = agent.post_result(*lease, ok_result(7.0));
  EXPECT_EQ(posted.status, 201u) << posted.body;
}

// What an agent says about itself and its results reaches operators' terminals (CLI, CSV,
// Markdown, the dashboard): text holding escape sequences or bidirectional overrides is refused
// at the door, naming the field, and nothing stored is lost.
TEST(CoordinatorResults, TextThatWouldDriveATerminalIsRefusedNamingTheField) {
  CoordinatorProcess coord;
  const json run = coord.submit(matrix({kResnet}, {1}, {"eager"}));
  const auto enrol = [&](const json& descriptor) {
    return coord.post("/api/v1/agents/enroll", descriptor, CoordinatorProcess::kEnrollmentToken);
  };
  json hostile = FakeAgent::descriptor("node\x1b]0;owned\a", {{"gpu0", "a100"}}, {{"stable", {"eager"}}});
  auto res = enrol(hostile);
  EXPECT_EQ(res.status, 400u) << res.body;
  EXPECT_NE(res.body.find("\"field\":\"name\""), std::string::npos) << res.body;
  hostile = FakeAgent::descriptor("node-1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}});
  hostile["hostname"] = "host\x1b[2J";
  res = enrol(hostile);
  EXPECT_EQ(res.status, 400u) << res.body;
  EXPECT_NE(res.body.find("\"field\":\"hostname\""), std::string::npos) << res.body;
  hostile["hostname"] = "host";
  hostile["torch_builds"][0]["version"] = "2.6\xe2\x80\xae";
  res = enrol(hostile);
  EXPECT_NE(res.body.find("\"field\":\"torch_builds[0].version\""), std::string::npos) << res.body;
  EXPECT_EQ(coord.get_json("/api/v1/agents")["agents"].size(), 0u);

  FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}}));
  auto lease = agent.lease_job("gpu0");
  ASSERT_TRUE(lease.has_value());
  const auto refused = [&](const json& result, const std::string& field) {
    auto r = agent.post_result(*lease, result);
    EXPECT_EQ(r.status, 400u) << field << ": " << r.body;
    EXPECT_NE(r.body.find("\"field\":\"" + field + "\""), std::string::npos) << r.body;
  };
  json error = {{"status", "error"}, {"error", "boom \x1b[41mX\x1b[0m"}};
  refused(error, "result.error");
  json version = ok_result(7.0);
  version["environment"]["torch_version"] = "2.6.0\a";
  refused(version, "result.environment.torch_version");

  // A regression note is an operator's text: the same rule, before the regression is looked up.
  res = coord.post("/api/v1/regressions/1/acknowledge", json{{"note", std::string("ok\0\x07", 4)}});
  EXPECT_EQ(res.status, 400u) << res.body;
  EXPECT_NE(res.body.find("\"field\":\"note\""), std::string::npos) << res.body;

  EXPECT_EQ(coord.get_json(run_url(run) + "/results")["results"].size(), 0u);
  EXPECT_EQ(agent.post_result(*lease, ok_result(7.0)).status, 201u);
}

// Claims a result makes that its own job refutes: an accuracy verdict on an eager job, a pass
// above its tolerance, a fixed count that was not reached or not given, a CI target its CI does
// not show. The first four are refused (a correct worker never makes them); the last is flagged
// ci_not_met, since the stopping rule's CI and the final one are different bootstrap draws.
TEST(CoordinatorResults, ClaimsTheJobRefutesAreRefusedOrFlagged) {
  CoordinatorProcess coord;
  json m = matrix({kResnet}, {1}, {"eager", "default"});
  m["measurement"] = {{"min_iterations", 300}, {"max_iterations", 300}};
  const json fixed_run = coord.submit(m);
  FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager", "default"}}}));
  const json accuracy = {{"verdict", "pass"},     {"compiled_error", 0.9}, {"eager_error", 1e-7},
                         {"tolerance", 1.003e-4}, {"output", "output0"},   {"detail", ""}};
  for (int i = 0; i < 2; ++i) {
    auto lease = agent.lease_job("gpu0");
    ASSERT_TRUE(lease.has_value());
    const bool eager = lease->spec().value("mode", "") == "eager";
    SCOPED_TRACE(lease->spec().dump());
    json two = ok_result(7.0, std::nullopt, 2);  // 2 samples of a run fixed at 300
    two["stop_reason"] = "fixed_count";
    auto r = agent.post_result(*lease, two);
    EXPECT_EQ(r.status, 400u) << r.body;
    EXPECT_NE(r.body.find("is fixed_count with 2 samples"), std::string::npos) << r.body;
    json judged = ok_result(7.0, std::nullopt, 300);
    judged["accuracy"] = accuracy;
    r = agent.post_result(*lease, judged);
    EXPECT_EQ(r.status, 400u) << r.body;
    EXPECT_NE(r.body.find("\"field\":\"result.accuracy.verdict\""), std::string::npos) << r.body;
    judged["accuracy"]["verdict"] = "wrong";
    if (eager) {
      r = agent.post_result(*lease, judged);
      EXPECT_EQ(r.status, 400u) << r.body;
      EXPECT_NE(r.body.find("\"field\":\"result.accuracy\""), std::string::npos) << r.body;
      judged.erase("accuracy");
    }
    EXPECT_EQ(agent.post_result(*lease, judged).status, 201u);
  }
  EXPECT_EQ(coord.get_json(run_url(fixed_run) + "/results")["results"].size(), 2u);

  // A ci_target claim whose 95% CI is ~200% of its median: stored, and flagged.
  json loose = matrix({kResnet}, {4}, {"eager"});
  loose["measurement"] = {{"min_iterations", 5}, {"max_iterations", 100}, {"target_ci_rel_width", 0.05}};
  const json run = coord.submit(loose);
  auto lease = agent.lease_job("gpu0");
  ASSERT_TRUE(lease.has_value());
  http::ClientResponse r;
  // fixed_count on a job whose count is not fixed: neither stopping rule says that.
  json unfixed = ok_result(7.0, std::nullopt, 5);
  unfixed["stop_reason"] = "fixed_count";
  r = agent.post_result(*lease, unfixed);
  EXPECT_EQ(r.status, 400u) << r.body;
  EXPECT_NE(r.body.find("is fixed_count with 5 samples"), std::string::npos) << r.body;
  json wide = ok_result(7.0, std::nullopt, 5);
  wide["samples_ms"] = {1.0, 2.0, 7.0, 12.0, 13.0};
  wide["stats"] = json(compute_statistics(wide["samples_ms"].get<std::vector<double>>()));
  wide["stats"]["ci_low_ms"] = 1.0;
  wide["stats"]["ci_high_ms"] = 13.0;
  wide["stop_reason"] = "ci_target";
  r = agent.post_result(*lease, wide);
  ASSERT_EQ(r.status, 201u) << r.body;
  const json stored = coord.get_json(run_url(run) + "/results")["results"].at(0);
  EXPECT_NE(stored.dump().find("ci_not_met"), std::string::npos) << stored.dump(1);
}

// Claims that once went around the rules, each refused 400 naming the field, nothing stored: a
// result without stop_reason (every count rule skipped), an invalid result over max_iterations,
// a pass where eager itself is 90% off, a wrong whose error is within its tolerance, and a
// tolerance the agent chose.
TEST(CoordinatorResults, ClaimsThatSkippedTheRulesAreRefused) {
  CoordinatorProcess coord;
  json m = matrix({kResnet}, {1}, {"default"});
  m["measurement"] = {{"min_iterations", 30}, {"max_iterations", 1000}};
  const json run = coord.submit(m);
  FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager", "default"}}}));
  auto lease = agent.lease_job("gpu0");
  ASSERT_TRUE(lease.has_value());
  const auto refused = [&](const json& result, const std::string& field, const std::string& words) {
    const auto r = agent.post_result(*lease, result);
    EXPECT_EQ(r.status, 400u) << r.body;
    EXPECT_NE(r.body.find("\"field\":\"" + field + "\""), std::string::npos) << r.body;
    EXPECT_NE(r.body.find(words), std::string::npos) << r.body;
  };
  json two = ok_result(7.0, std::nullopt, 2);
  two.erase("stop_reason");
  refused(two, "result.stop_reason", "is required when status is ok");
  json many = ok_result(7.0, std::nullopt, 5000);
  many["status"] = "invalid";
  many.erase("stop_reason");
  refused(many, "result.samples_ms", "holds 5000 samples, more than the job's max_iterations 1000");
  const auto with_accuracy = [](json a) {
    json r = ok_result(7.0, std::nullopt, 40);
    r["accuracy"] = std::move(a);
    return r;
  };
  refused(with_accuracy({{"verdict", "pass"},
                         {"compiled_error", 0.1},
                         {"eager_error", 0.9},
                         {"tolerance", 2.7001},
                         {"output", "output0"},
                         {"detail", ""}}),
          "result.accuracy.verdict", "the rule does not judge such an output");
  refused(with_accuracy({{"verdict", "wrong"},
                         {"compiled_error", 0.0},
                         {"eager_error", 1e-7},
                         {"tolerance", 1.003e-4},
                         {"output", "output0"},
                         {"detail", ""}}),
          "result.accuracy.verdict", "is wrong but compiled_error 0.0 is within its tolerance");
  refused(with_accuracy({{"verdict", "pass"},
                         {"compiled_error", 0.04},
                         {"eager_error", 1e-7},
                         {"tolerance", 0.05},
                         {"output", "output0"},
                         {"detail", ""}}),
          "result.accuracy.tolerance", "where the rule gives");
  EXPECT_TRUE(coord.get_json(run_url(run) + "/results")["results"].empty());
  // What the rule gives is stored.
  const auto stored = agent.post_result(*lease, with_accuracy({{"verdict", "pass"},
                                                               {"compiled_error", 2e-7},
                                                               {"eager_error", 1e-7},
                                                               {"tolerance", 1.003e-4},
                                                               {"output", "output0"},
                                                               {"detail", ""}}));
  EXPECT_EQ(stored.status, 201u) << stored.body;
}

}  // namespace
}  // namespace benchfleet::testing
