// Integration: benchfleet-agent daemons with the real worker against the real coordinator, all
// as processes on loopback — a matrix shared by two agents, an agent killed (-9) mid-job, and the
// coordinator killed (-9) mid-run with results spooled by the agents meanwhile.
// (Faults of the worker, drain and cancellation: agent_fault_test.cpp.)
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>

#include "tests/integration/agent_test_util.h"

namespace benchfleet::testing {
namespace {

// Checks a finished run's stored results: exactly one `ok` result per job (positive latency),
// one per cell of `cells` (model, batch, mode). Returns the results by job id.
std::map<std::int64_t, json> expect_one_ok_result_per_cell(CoordinatorProcess& coord, const json& run,
                                                           std::size_t cells) {
  std::map<std::int64_t, json> by_job;
  std::set<std::tuple<std::string, int, std::string>> seen_cells;
  const auto results = results_of(coord, run);
  EXPECT_EQ(results.size(), cells) << json(results).dump(1);
  for (const auto& r : results) {
    const std::int64_t job = r.at("job_id").get<std::int64_t>();
    EXPECT_TRUE(by_job.emplace(job, r).second) << "two results for job " << job;
    const json& spec = r.at("job");
    EXPECT_TRUE(seen_cells.emplace(spec.at("model"), spec.at("batch"), spec.at("mode")).second) << spec.dump();
    EXPECT_EQ(r["result"].value("status", ""), "ok") << r.dump(1);
    EXPECT_GT(r["result"]["stats"].value("mean_ms", 0.0), 0.0) << r.dump(1);
  }
  EXPECT_EQ(seen_cells.size(), cells);
  return by_job;
}

TEST(AgentFleet, TwoAgentsRunAMatrixTogether) {
  CoordinatorProcess coord({BENCHFLEET_FAST_LEASES});
  AgentProcess a1(agent_options(coord, "a1"));
  AgentProcess a2(agent_options(coord, "a2"));
  a1.start();
  a2.start();
  // Both are enrolled, and their slots long-poll from then on.
  ASSERT_TRUE(wait_online(coord, {"a1", "a2"})) << agents_of(coord).dump(1);

  // 2 models x batch {1, 2} x {eager, torchscript} on cpu = 8 jobs. Every job takes seconds
  // (an export at least: each agent's cache is cold), so while one agent is busy with its first
  // job the other, polling, leases the next: both get work.
  const json run = coord.submit(cpu_matrix({kMobilenet, kSqueezenet}, {1, 2}, {"eager", "torchscript"}));
  ASSERT_EQ(run["job_count"], 8);
  ASSERT_TRUE(wait_run_state(coord, run, "done")) << run_of(coord, run).dump(1);

  const auto by_job = expect_one_ok_result_per_cell(coord, run, 8);
  std::set<std::string> producers;
  for (const auto& [job, r] : by_job) {
    producers.insert(r.value("agent", ""));
    EXPECT_EQ(r.value("slot", ""), "cpu");
  }
  EXPECT_EQ(producers, (std::set<std::string>{"a1", "a2"}));

  std::set<std::string> listed;
  for (const auto& a : agents_of(coord)) {
    listed.insert(a.value("name", ""));
    EXPECT_EQ(a["slots"].size(), 1u) << a.dump();
    EXPECT_EQ(a["slots"][0].value("gpu_class", ""), "cpu") << a.dump();
    EXPECT_EQ(a["torch_builds"][0].value("name", ""), "local") << a.dump();
  }
  EXPECT_EQ(listed, (std::set<std::string>{"a1", "a2"}));

  // The report: one table per batch on cpu, one row per model, every cell one ok result.
  const json report = coord.get_json(run_url(run) + "/report?format=json");
  int latency_cells = 0;
  ASSERT_EQ(report["tables"].size(), 2u) << report.dump(1);
  for (const auto& table : report["tables"]) {
    EXPECT_EQ(table.value("gpu", ""), "cpu");
    ASSERT_EQ(table["rows"].size(), 2u) << table.dump(1);
    for (const auto& row : table["rows"]) {
      ASSERT_EQ(row["cells"].size(), table["columns"].size()) << table.dump(1);
      for (std::size_t c = 0; c < row["cells"].size(); ++c) {
        const json& cell = row["cells"][c];
        EXPECT_EQ(cell.value("status", ""), "ok") << cell.dump();
        EXPECT_GT(cell.value("value", 0.0), 0.0) << cell.dump();
        if (table["columns"][c].value("kind", "") == "latency_ms") {
          ++latency_cells;
          EXPECT_EQ(cell.value("n", 0), 1) << cell.dump();
          EXPECT_EQ(cell["result_ids"].size(), 1u) << cell.dump();
        }
      }
    }
  }
  EXPECT_EQ(latency_cells, 8);
  EXPECT_TRUE(poll_until([&] { return a1.spool_entries().empty() && a2.spool_entries().empty(); }, 10s));
}

TEST(AgentFleet, AgentKilledMidJobItsJobIsLeasedAgainAndFinished) {
  CoordinatorProcess coord({BENCHFLEET_FAST_LEASES});
  AgentProcess a1(agent_options(coord, "a1"));
  a1.start();
  ASSERT_TRUE(wait_online(coord, {"a1"}));
  const json run = coord.submit(cpu_matrix({kMobilenet}, {1}, {"eager", "torchscript"}));
  ASSERT_EQ(run["job_count"], 2);

  // Caught with a worker measuring (frozen, so that job is certainly not reported), then the
  // host dies: the agent and the worker's process group, by SIGKILL.
  const auto running = freeze_with_running_worker(a1);
  ASSERT_TRUE(running) << "no worker ran on a1";
  const auto groups = a1.kill_host();
  EXPECT_FALSE(groups.empty());
  for (pid_t g : groups) EXPECT_TRUE(poll_until([&] { return !process_group_alive(g); }, 10s)) << "group " << g;
  for (const auto& r : results_of(coord, run)) EXPECT_NE(r["job_id"], running->job_id) << r.dump();

  // A second agent gets that job once its lease (3 s) expired, and the rest of the run.
  AgentProcess a2(agent_options(coord, "a2"));
  a2.start();
  ASSERT_TRUE(wait_run_state(coord, run, "done")) << run_of(coord, run).dump(1);
  const auto by_job = expect_one_ok_result_per_cell(coord, run, 2);
  ASSERT_TRUE(by_job.contains(running->job_id));
  const json& again = by_job.at(running->job_id);
  EXPECT_EQ(again.value("agent", ""), "a2") << again.dump(1);
  EXPECT_GT(again.value("attempt", 0), running->attempt) << again.dump(1);
  const json state = run_of(coord, run);
  EXPECT_EQ(state["jobs"]["done"], 2) << state.dump(1);
  EXPECT_EQ(state["jobs"]["failed"], 0) << state.dump(1);
}

TEST(AgentFleet, CoordinatorKilledMidRunResultsArriveFromTheSpool) {
  // A fixed port: the agents keep the URL they were given across the coordinator's restart.
  const int port = free_loopback_port();
  ASSERT_GT(port, 0);
  CoordinatorProcess coord(port, {BENCHFLEET_FAST_LEASES, {"--restart-grace-s", "60"}});
  AgentProcess a1(agent_options(coord, "a1"));
  AgentProcess a2(agent_options(coord, "a2"));
  a1.start();
  a2.start();
  ASSERT_TRUE(wait_online(coord, {"a1", "a2"}));
  const json run = coord.submit(cpu_matrix({kMobilenet, kSqueezenet}, {1}, {"eager", "torchscript"}));
  ASSERT_EQ(run["job_count"], 4);

  // Kill the coordinator once a result is acknowledged while another job is under way.
  std::vector<json> before;
  ASSERT_TRUE(poll_until(
      [&] {
        before = results_of(coord, run);
        const bool busy = !a1.children().empty() || !a2.children().empty();
        return !before.empty() && before.size() < 4 && busy;
      },
      120s, 50ms))
      << run_of(coord, run).dump(1);
  coord.kill9();

  // While it is down, a job finishes: its result waits in that agent's spool.
  AgentProcess* spooler = nullptr;
  std::string spooled;
  ASSERT_TRUE(poll_until(
      [&] {
        for (AgentProcess* a : {&a1, &a2}) {
          if (auto entries = a->spool_entries(); !entries.empty()) {
            spooler = a;
            spooled = entries.front();
            return true;
          }
        }
        return false;
      },
      90s, 100ms))
      << "no result was spooled while the coordinator was down";
  std::int64_t spooled_job = 0;
  int spooled_attempt = 0;
  ASSERT_EQ(std::sscanf(spooled.c_str(), "job-%" SCNd64 "-attempt-%d.json", &spooled_job, &spooled_attempt), 2)
      << spooled;

  coord.start();  // same database, same port
  ASSERT_TRUE(wait_run_state(coord, run, "done")) << run_of(coord, run).dump(1);
  const auto by_job = expect_one_ok_result_per_cell(coord, run, 4);
  // Everything acknowledged before the kill is still there, unchanged.
  for (const auto& r : before) {
    const std::int64_t job = r.at("job_id").get<std::int64_t>();
    ASSERT_TRUE(by_job.contains(job)) << r.dump(1);
    EXPECT_EQ(by_job.at(job)["id"], r["id"]);
    EXPECT_EQ(by_job.at(job)["attempt"], r["attempt"]);
    EXPECT_EQ(by_job.at(job)["result"]["stats"], r["result"]["stats"]);
  }
  // The spooled result was uploaded after the restart, and left the spool once acknowledged.
  ASSERT_TRUE(by_job.contains(spooled_job)) << spooled;
  EXPECT_EQ(by_job.at(spooled_job).value("attempt", 0), spooled_attempt);
  EXPECT_EQ(by_job.at(spooled_job).value("agent", ""), spooler->name());
  EXPECT_TRUE(poll_until([&] { return a1.spool_entries().empty() && a2.spool_entries().empty(); }, 10s));
  // The agents rode it out: neither exited or had to be restarted.
  EXPECT_TRUE(a1.running());
  EXPECT_TRUE(a2.running());
}

}  // namespace
}  // namespace benchfleet::testing
