// fault_partition: the fault class R3. A real benchfleet-coordinator and a real
// benchfleet-agent (with the real worker on a tiny CPU model) run in two network namespaces joined
// by a veth pair (netns.h); mid-job the link is cut (every packet dropped) for a while, then
// healed. Two scenarios, one row of the fault table (fault_table.h) each:
//
//   A "partition 60 s, lease holds": lease_ttl_s (120) outlives the partition. The worker
//     finishes while cut, the agent spools its result; after the heal the result arrives from the
//     spool: one result row, attempt 1, the job done, the spool empty.
//   B "partition, lease expires": lease_ttl_s (15) is shorter than the partition. The job goes
//     back to the queue when the lease expires; after the heal the spooled attempt-1 result is
//     refused (409) and dropped, the job runs again and ends with one result, attempt 2.
//
// Recovery = heal -> the result stored (for B, attempt 2's, which includes running it again).
// Exit 0 when both rows are clean and every check held, 1 otherwise, 77 without the privileges
// to make namespaces (ctest SKIP_RETURN_CODE).
//
//   fault_partition [--scenario a|b|both] [--partition-s 60] [--expiry-partition-s 45] [--json]
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/http/client.h"
#include "tests/fault/fault_table.h"
#include "tests/fault/netns.h"
#include "tests/support/agent_process.h"
#include "tests/support/coordinator_child.h"
#include "tests/support/temp_dir.h"

namespace {

namespace fs = std::filesystem;
using namespace benchfleet::testing;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr int kNoPrivilege = 77;
constexpr const char* kOperatorToken = "partition-operator-token-0123456789";
constexpr const char* kEnrollmentToken = "partition-enrollment-token-0123456789";
constexpr const char* kModel = "torchvision/mobilenet_v3_small";
constexpr const char* kAgentName = "partitioned";

// SIGINT/SIGTERM/SIGHUP: every wait throws Interrupted, so the stack unwinds through the guards
// (processes stopped, qdiscs removed, namespaces deleted).
volatile sig_atomic_t g_signalled = 0;
void on_signal(int) { g_signalled = 1; }

struct Interrupted : std::runtime_error {
  Interrupted() : std::runtime_error("interrupted by a signal") {}
};

void sleep_checked(std::chrono::milliseconds d) {
  const auto until = Clock::now() + d;
  while (Clock::now() < until) {
    if (g_signalled) throw Interrupted();
    std::this_thread::sleep_for(std::min<Clock::duration>(100ms, until - Clock::now()));
  }
  if (g_signalled) throw Interrupted();
}

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// "12.3 s", or "never".
std::string when(const std::optional<double>& seconds) {
  if (!seconds) return "never";
  char text[32];
  std::snprintf(text, sizeof text, "%.1f s", *seconds);
  return text;
}

struct Options {
  std::string scenario = "both";
  double partition_s = 60;         // A
  double expiry_partition_s = 45;  // B
  int lease_ttl_s = 120;           // A
  int expiry_lease_ttl_s = 15;     // B
  double measure_s = 10;           // the worker's measurement (min = max duration)
  double cut_after_s = 3;          // after the worker started
  bool json = false;
  bool keep = false;
};

struct Scenario {
  std::string name;  // "A", "B"
  std::string fault_class;
  int lease_ttl_s = 0;
  int heartbeat_s = 0;
  double partition_s = 0;
  bool lease_expires = false;
};

// Progress lines, timestamped from the program's start.
class Log {
 public:
  void operator()(const std::string& line) const {
    std::fprintf(stderr, "[%7.1f s] %s\n", seconds_since(start_), line.c_str());
  }

 private:
  Clock::time_point start_ = Clock::now();
};

// The coordinator's REST API as an operator, from a thread inside its namespace (its address
// exists only there). Throws std::runtime_error on transport errors and unexpected statuses.
class Api {
 public:
  Api(std::string ns, std::string base_url) : ns_(std::move(ns)), base_url_(std::move(base_url)) {}

  json get(const std::string& target) const { return parse(target, call(target, std::nullopt, 200)); }
  json submit(const json& matrix) const { return parse("/api/v1/runs", call("/api/v1/runs", matrix, 201)); }

  // How many requests to `route` (the router's name, "jobs.result") were answered with a status
  // of class `code` ("2xx", "4xx"), from the Prometheus text at /metrics.
  long answered(const std::string& route, const std::string& code) const {
    const std::string series =
        "benchfleet_http_request_duration_seconds_count{route=\"" + route + "\",code=\"" + code + "\"} ";
    const std::string text = call("/metrics", std::nullopt, 200).body;
    const std::size_t at = text.find(series);
    return at == std::string::npos ? 0 : std::atol(text.c_str() + at + series.size());
  }

 private:
  static json parse(const std::string& target, const benchfleet::http::ClientResponse& response) {
    auto parsed = response.json();
    if (!parsed.ok()) throw std::runtime_error(target + ": " + parsed.error().message);
    return *parsed;
  }

  benchfleet::http::ClientResponse call(const std::string& target, const std::optional<json>& body,
                                        unsigned expected) const {
    auto answer = in_network_namespace(ns_, [&] {
      benchfleet::http::Client client(base_url_);
      return body ? client.post_json(target, *body, kOperatorToken, 10s) : client.get(target, kOperatorToken, 10s);
    });
    if (!answer.ok()) throw std::runtime_error(target + ": " + answer.error().message);
    if (!answer->ok()) throw std::runtime_error(target + ": " + answer->error().message);
    const auto& response = answer->value();
    if (response.status != expected) {
      throw std::runtime_error(target + ": HTTP " + std::to_string(response.status) + ": " + response.body);
    }
    return response;
  }

  std::string ns_, base_url_;
};

// The run's one job, and its stored results (without samples).
struct Observed {
  json job;
  std::vector<json> results;
};
Observed observe(const Api& api, std::int64_t run_id) {
  const std::string run = "/api/v1/runs/" + std::to_string(run_id);
  Observed o;
  o.job = api.get(run + "/jobs").at("jobs").at(0);
  o.results = api.get(run + "/results?samples=false&limit=100").at("results").get<std::vector<json>>();
  return o;
}

template <class F>
bool wait_for(F&& condition, std::chrono::milliseconds limit, std::chrono::milliseconds step = 250ms) {
  const auto deadline = Clock::now() + limit;
  while (true) {
    if (condition()) return true;
    if (Clock::now() >= deadline) return false;
    sleep_checked(step);
  }
}

std::string write_agent_config(const fs::path& dir) {
  const std::string path = (dir / "agent.yaml").string();
  std::ofstream(path) << "builds:\n  - {name: local, python: " << BENCHFLEET_TORCH_PYTHON
                      << ", worker: " << BENCHFLEET_WORKER_BIN << "}\n";
  return path;
}

// The agent log's lines after byte `from` that speak of uploads, refusals or lost leases.
std::string upload_lines(const std::string& log, std::size_t from) {
  std::string out;
  std::stringstream lines(log.substr(std::min(from, log.size())));
  for (std::string line; std::getline(lines, line);) {
    if (line.find("upload") != std::string::npos || line.find("refused") != std::string::npos ||
        line.find("lost its lease") != std::string::npos) {
      out += "    " + line + "\n";
    }
  }
  return out;
}

// Runs one scenario with a fresh coordinator and agent; the row, with every failed check added
// to `problems`.
FaultRow run_scenario(const Options& o, NetnsPair& net, const Scenario& s, const fs::path& dir,
                      std::vector<std::string>& problems, const Log& log) {
  const auto fail = [&](const std::string& what) {
    problems.push_back(s.name + ": " + what);
    log(s.name + ": FAIL: " + what);
  };
  FaultRow row;
  row.fault_class = s.fault_class;
  row.injected = 1;
  row.checked = 1;
  row.recovery_meaning = s.lease_expires
                             ? "heal -> attempt 2's result stored (the stale one refused, the job run again)"
                             : "heal -> the spooled result stored";
  fs::create_directories(dir);

  LaunchOptions launch;
  launch.wrapper = net.exec_in(net.coord_ns());
  launch.listen_address = net.coord_address();
  launch.flags = {{"--db", (dir / "benchfleet.db").string()},
                  {"--operator-token", kOperatorToken},
                  {"--enrollment-token", kEnrollmentToken},
                  {"--lease-ttl-s", std::to_string(s.lease_ttl_s)},
                  {"--heartbeat-interval-s", std::to_string(s.heartbeat_s)},
                  {"--long-poll-timeout-s", "10"},
                  {"--log-level", "info"}};
  launch.port_file = (dir / "port").string();
  launch.log_file = (dir / "coordinator.log").string();
  launch.clean_environment = true;
  launch.start_timeout = 30s;
  auto coordinator = CoordinatorChild::start(launch);
  if (!coordinator.ok()) throw std::runtime_error(coordinator.error().message);
  const std::string url = "http://" + net.coord_address() + ":" + std::to_string((*coordinator)->port());
  const Api api(net.coord_ns(), url);

  AgentOptions agent_options;
  agent_options.binary = BENCHFLEET_AGENT_BIN;
  agent_options.name = kAgentName;
  agent_options.coordinator_url = url;
  agent_options.state_dir = (dir / "agent").string();
  agent_options.config_file = write_agent_config(dir);
  agent_options.enrollment_token = kEnrollmentToken;
  agent_options.wrapper = net.exec_in(net.agent_ns());
  AgentProcess agent(agent_options);
  agent.start();
  log(s.name + ": coordinator at " + url + " in " + net.coord_ns() + ", agent in " + net.agent_ns() + " (lease_ttl_s " +
      std::to_string(s.lease_ttl_s) + ")");
  const bool online = wait_for(
      [&] {
        const json agents = api.get("/api/v1/agents").at("agents");
        for (const auto& a : agents) {
          if (a.value("name", "") == kAgentName && a.value("online", false)) return true;
        }
        return false;
      },
      180s, 500ms);
  if (!online) throw std::runtime_error("the agent never came online; its log:\n" + agent.log_tail());

  const json matrix = {{"name", "partition-" + s.name},
                       {"models", {kModel}},
                       {"batch_sizes", {1}},
                       {"modes", {"eager"}},
                       {"torch_builds", {"local"}},
                       {"gpus", {"cpu"}},
                       {"runtimes", {"libtorch"}},
                       {"timeout_s", 600},
                       {"measurement",
                        {{"warmup", 1},
                         {"min_iterations", 3},
                         {"max_iterations", 1000000},
                         {"min_duration_s", o.measure_s},
                         {"max_duration_s", o.measure_s}}}};
  const std::int64_t run_id = api.submit(matrix).at("id").get<std::int64_t>();
  const std::int64_t job_id = observe(api, run_id).job.at("id").get<std::int64_t>();

  // Mid-job: the worker runs (exported, loaded, measuring) when the link is cut.
  std::vector<pid_t> workers;
  if (!wait_for([&] { return !(workers = agent.children_named("benchfleet-work")).empty(); }, 240s, 100ms)) {
    throw std::runtime_error("no worker started; the agent's log:\n" + agent.log_tail());
  }
  const pid_t worker = workers.front();
  sleep_checked(std::chrono::milliseconds(static_cast<long>(o.cut_after_s * 1000)));
  const Observed before = observe(api, run_id);
  if (!process_alive(worker) || !before.results.empty()) fail("the job ended before the cut: measure longer");

  auto method = net.cut();
  if (!method.ok()) throw std::runtime_error(method.error().message);
  const auto cut_at = Clock::now();
  log(s.name + ": job " + std::to_string(job_id) + " " + before.job.value("status", "") + " attempt " +
      std::to_string(before.job.value("attempt", 0)) + "; link cut by " + describe(*method));

  std::optional<double> worker_done_s, spooled_s, requeued_s;
  std::vector<std::string> spool_while_cut;
  const auto heal_at = cut_at + std::chrono::milliseconds(static_cast<long>(s.partition_s * 1000));
  while (Clock::now() < heal_at) {
    if (!worker_done_s && !process_alive(worker)) worker_done_s = seconds_since(cut_at);
    if (!spooled_s && !(spool_while_cut = agent.spool_entries()).empty()) spooled_s = seconds_since(cut_at);
    const Observed now = observe(api, run_id);
    if (!now.results.empty()) fail("a result was stored while the agent was cut off");
    if (!requeued_s && now.job.value("status", "") == "queued") {
      requeued_s = seconds_since(cut_at);
      log(s.name + ": lease expired during the partition: job queued (attempt " +
          std::to_string(now.job.value("attempt", 0)) + " so far)");
    }
    sleep_checked(250ms);
  }
  const std::size_t log_at_heal = agent.log().size();
  if (auto healed = net.heal(); !healed.ok()) throw std::runtime_error(healed.error().message);
  const auto healed_at = Clock::now();
  log(s.name + ": healed after " + when(s.partition_s) + "; while cut: worker done at " + when(worker_done_s) +
      ", result spooled at " + when(spooled_s) + ", job requeued at " + when(requeued_s));
  if (!worker_done_s) fail("the worker did not finish during the partition: measure shorter or cut longer");
  if (!spooled_s) fail("the agent had not spooled the result when the partition ended");
  if (s.lease_expires && !requeued_s) fail("the expired lease did not put the job back in the queue");
  if (!s.lease_expires && requeued_s) fail("the job was requeued although its lease outlived the partition");

  // After the heal: the result (A: from the spool; B: attempt 2's) is stored.
  const int expected_attempt = s.lease_expires ? 2 : 1;
  std::optional<double> recovered_s;
  Observed end;
  wait_for(
      [&] {
        end = observe(api, run_id);
        for (const auto& r : end.results) {
          if (!recovered_s && r.value("attempt", 0) == expected_attempt) recovered_s = seconds_since(healed_at);
        }
        const std::string status = end.job.value("status", "");
        return status == "done" || status == "failed" || status == "cancelled";
      },
      240s, 200ms);
  if (recovered_s) row.recovery_s.push_back(*recovered_s);
  const bool spool_drained = wait_for([&] { return agent.spool_entries().empty(); }, 60s);
  sleep_checked(2s);  // anything still to come (a second row) would show now
  end = observe(api, run_id);

  long with_expected = 0;
  for (const auto& r : end.results) {
    if (r.value("attempt", 0) == expected_attempt) {
      ++with_expected;
    } else {
      fail("a result of attempt " + std::to_string(r.value("attempt", 0)) + " was stored: " + r.dump());
    }
    if (r.at("result").value("status", "") != "ok") fail("the result is not ok: " + r.dump());
  }
  row.lost = with_expected == 0 ? 1 : 0;
  row.duplicated = end.results.size() > 1 ? static_cast<long>(end.results.size()) - 1 : 0;
  if (end.job.value("status", "") != "done") fail("the job ended " + end.job.dump());
  if (end.job.value("attempt", 0) != expected_attempt) {
    fail("the job took " + std::to_string(end.job.value("attempt", 0)) + " attempts, not " +
         std::to_string(expected_attempt));
  }
  if (!spool_drained) fail("the spool still holds a result: not retried forever? " + agent.spool_dir());
  // Each result post the coordinator answered: one acknowledgement (201), and for B one refusal
  // of the stale attempt (409), which the agent must not post again.
  const long acknowledged = api.answered("jobs.result", "2xx");
  const long refused = api.answered("jobs.result", "4xx");
  if (acknowledged != 1) fail(std::to_string(acknowledged) + " result posts acknowledged, not 1");
  if (refused != (s.lease_expires ? 1 : 0)) fail(std::to_string(refused) + " result posts refused");
  const std::string after_heal = upload_lines(agent.log(), log_at_heal);
  if (s.lease_expires && after_heal.find("refused the result") == std::string::npos) {
    fail("the agent's log shows no refusal of the stale attempt-1 result");
  }
  log(s.name + ": job " + end.job.value("status", "") + " at attempt " + std::to_string(end.job.value("attempt", 0)) +
      ", " + std::to_string(end.results.size()) + " result row(s), result posts acknowledged " +
      std::to_string(acknowledged) + " / refused " + std::to_string(refused) + ", recovery " + when(recovered_s) +
      "; the agent after the heal:\n" + after_heal);

  agent.sigterm();
  if (!agent.wait_exit(60s)) agent.kill_host();
  (*coordinator)->stop();
  return row;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "fault_partition: a partition between the coordinator's and an agent's network namespaces mid-job "
      "(R3); the result must arrive once, from the spool, with the lease rules kept"};
  app.add_option("--scenario", o.scenario, "a (lease outlives the partition), b (lease expires) or both")
      ->check(CLI::IsMember({"a", "b", "both"}));
  app.add_option("--partition-s", o.partition_s, "A: seconds the link stays cut")->check(CLI::Range(1.0, 600.0));
  app.add_option("--expiry-partition-s", o.expiry_partition_s, "B: seconds the link stays cut")
      ->check(CLI::Range(1.0, 600.0));
  app.add_option("--lease-ttl-s", o.lease_ttl_s, "A: the coordinator's lease_ttl_s (longer than the partition)");
  app.add_option("--expiry-lease-ttl-s", o.expiry_lease_ttl_s, "B: lease_ttl_s (shorter than the partition)")
      ->check(CLI::Range(4, 3600));
  app.add_option("--measure-s", o.measure_s, "seconds the worker measures")->check(CLI::Range(1.0, 600.0));
  app.add_option("--cut-after-s", o.cut_after_s, "seconds after the worker started that the link is cut");
  app.add_flag("--json", o.json, "print each row as JSON too");
  app.add_flag("--keep", o.keep, "keep the logs and databases (kept anyway when a check fails)");
  CLI11_PARSE(app, argc, argv);

  std::string why_not;
  if (!has_network_admin(why_not)) {
    std::cerr << "fault_partition: skipped: " << why_not << "\n";
    return kNoPrivilege;
  }
  struct sigaction action = {};
  action.sa_handler = on_signal;
  for (int signo : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(signo, &action, nullptr);

  std::vector<Scenario> scenarios;
  if (o.scenario != "b") {
    scenarios.push_back({"A", "partition " + std::to_string(static_cast<int>(o.partition_s)) + " s, lease holds",
                         o.lease_ttl_s, 5, o.partition_s, false});
  }
  if (o.scenario != "a") {
    scenarios.push_back({"B", "partition, lease expires", o.expiry_lease_ttl_s, std::max(1, o.expiry_lease_ttl_s / 5),
                         o.expiry_partition_s, true});
  }
  for (const auto& s : scenarios) {
    if (s.lease_expires != (s.lease_ttl_s < s.partition_s)) {
      std::cerr << "fault_partition: scenario " << s.name << " needs lease_ttl_s "
                << (s.lease_expires ? "shorter" : "longer") << " than the partition\n";
      return 2;
    }
  }

  const Log log;
  benchfleet::testing::TempDir tmp("fault_partition");
  const fs::path& dir = tmp.path();
  std::vector<FaultRow> rows;
  std::vector<std::string> problems;
  try {
    auto net = NetnsPair::create("bf");
    if (!net.ok()) {
      std::cerr << "fault_partition: cannot make the namespaces: " << net.error().message << "\n";
      return 1;
    }
    for (const auto& s : scenarios) rows.push_back(run_scenario(o, **net, s, dir / s.name, problems, log));
  } catch (const std::exception& e) {
    problems.push_back(e.what());
    log(std::string("FAIL: ") + e.what());
  }

  print_fault_table(rows);
  if (o.json) {
    for (const auto& row : rows) std::printf("%s\n", fault_row_json(row).c_str());
  }
  bool clean = problems.empty() && rows.size() == scenarios.size();
  for (const auto& row : rows) clean = clean && fault_row_clean(row);
  for (const auto& p : problems) std::printf("FAIL: %s\n", p.c_str());
  if (!clean || o.keep) {
    tmp.keep();
    std::printf("logs and databases kept in %s\n", dir.c_str());
  }
  return clean ? 0 : 1;
}
