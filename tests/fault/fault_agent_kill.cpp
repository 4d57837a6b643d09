// fault_agent_kill: the fault class R1 with real processes. A real benchfleet-coordinator
// and one real benchfleet-agent (the real worker, a tiny CPU model measured for ~1.5 s a job);
// N times: wait a random moment into a running worker, kill -9 the agent (its worker group is
// left running, as after a real kill -9), start it again on the same state directory (same
// identity: it must kill that orphan before it leases anything) and time the recovery. At the
// end every job must hold exactly one stored result (REST API and the SQLite file, read-only)
// and no worker may be left running. Prints one row of tests/fault/fault_table.h's table.
//
//   fault_agent_kill [--kills 100] [--kills-per-job 2] [--job-seconds 1.5] [--lease-ttl-s 5]
//                    [--seed S] [--json] [--dir D] [--keep-dir]
//
// Attempts: a kill burns at most the killed attempt (the restarted agent's first poll gives an
// acknowledged lease back, or it expires; an unacknowledged one is handed to it again, same
// attempt), and a job fails after the coordinator's max_attempts (docs/design.md §6, §7). The coordinator
// runs with --max-attempts = kills-per-job + 1 and no job is killed more often than
// kills-per-job, so a job that ends "failed" is a lost result, not the documented rule at work.
// Exit code 0 only when nothing was lost or duplicated, every kill landed while a worker ran,
// every run finished with "ok" results, and no worker outlived a restart or the end.
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cinttypes>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/http/client.h"
#include "tests/fault/fault_table.h"
#include "tests/support/agent_process.h"
#include "tests/support/coordinator_child.h"
#include "tests/support/temp_dir.h"

namespace {

namespace fs = std::filesystem;
namespace bt = benchfleet::testing;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

constexpr const char* kOperatorToken = "fault-operator-token-0123456789";
constexpr const char* kEnrollmentToken = "fault-enrollment-token-0123456789";
constexpr const char* kModel = "torchvision/mobilenet_v3_small";

struct Options {
  int kills = 100;
  int kills_per_job = 2;
  double job_seconds = 1.5;
  int lease_ttl_s = 5;
  std::uint64_t seed = std::random_device{}();
  std::string dir;
  bool keep_dir = false;
  bool json_row = false;
};

// A failure of the harness itself (a process that did not start, a wait that ran out).
struct HarnessError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// (job id, attempt) a worker measures, from its --job <work>/<slot>/job-<id>-<attempt>/job.json.
std::optional<std::pair<std::int64_t, int>> worker_job(pid_t worker) {
  const auto args = bt::command_line(worker);
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != "--job") continue;
    const std::string dir = fs::path(args[i + 1]).parent_path().filename().string();
    std::int64_t job = 0;
    int attempt = 0;
    if (std::sscanf(dir.c_str(), "job-%" SCNd64 "-%d", &job, &attempt) == 2) return std::make_pair(job, attempt);
  }
  return std::nullopt;
}

// The first "slot cpu: job <id> attempt <n>" line of the agent's log at or after byte `from`.
std::optional<std::pair<std::int64_t, int>> lease_logged(const bt::AgentProcess& agent, std::size_t from) {
  std::ifstream in(agent.log_path(), std::ios::binary);
  in.seekg(static_cast<std::streamoff>(from));
  std::string line;
  while (std::getline(in, line)) {
    const std::size_t at = line.find("slot cpu: job ");
    std::int64_t job = 0;
    int attempt = 0;
    if (at != std::string::npos &&
        std::sscanf(line.c_str() + at, "slot cpu: job %" SCNd64 " attempt %d", &job, &attempt) == 2) {
      return std::make_pair(job, attempt);
    }
  }
  return std::nullopt;
}

std::size_t file_size(const std::string& path) {
  std::error_code ec;
  const auto n = fs::file_size(path, ec);
  return ec ? 0 : static_cast<std::size_t>(n);
}

// Kills, when the harness gives up halfway, the worker groups a killed agent left that no
// restarted agent swept (the agents themselves die with AgentProcess and PR_SET_PDEATHSIG).
struct WorkerReaper {
  std::set<pid_t> workers;
  ~WorkerReaper() {
    for (pid_t w : workers) {
      if (bt::process_alive(w) && bt::command_name(w).starts_with("benchfleet-work")) ::kill(-w, SIGKILL);
    }
  }
};

// The coordinator, the operator's client and the agent, in one work directory.
class Fleet {
 public:
  explicit Fleet(const Options& o) : dir_(o.dir) {
    fs::create_directories(dir_);
    bt::LaunchOptions launch;
    launch.flags = {{"--db", db_path()},
                    {"--operator-token", kOperatorToken},
                    {"--enrollment-token", kEnrollmentToken},
                    // Recovery never waits for expiry: the restarted agent gives an acknowledged
                    // lease back on its first poll and gets an unacknowledged one again. A short
                    // TTL shows whether every agent (a restarted one too) renews at the pace the
                    // coordinator dictates.
                    {"--lease-ttl-s", std::to_string(o.lease_ttl_s)},
                    {"--heartbeat-interval-s", "1"},
                    {"--long-poll-timeout-s", "2"},
                    {"--max-attempts", std::to_string(o.kills_per_job + 1)},
                    {"--log-level", "info"}};
    launch.port_file = dir_ + "/coordinator.port";
    launch.log_file = dir_ + "/coordinator.log";
    launch.clean_environment = true;
    auto child = bt::CoordinatorChild::start(launch);
    if (!child.ok()) throw HarnessError("coordinator: " + child.error().describe());
    coordinator_ = std::move(*child);
    client_ = std::make_unique<benchfleet::http::Client>(base_url());

    const std::string config = dir_ + "/agent.yaml";
    std::ofstream(config) << "kill_grace_s: 1\nbuilds:\n  - {name: local, python: " << BENCHFLEET_TORCH_PYTHON
                          << ", worker: " << BENCHFLEET_WORKER_BIN << "}\n";
    bt::AgentOptions agent;
    agent.binary = BENCHFLEET_AGENT_BIN;
    agent.name = "a1";
    agent.coordinator_url = base_url();
    agent.state_dir = dir_ + "/agent-a1";
    agent.config_file = config;
    agent.enrollment_token = kEnrollmentToken;
    agent_ = std::make_unique<bt::AgentProcess>(std::move(agent));
  }

  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(coordinator_->port()); }
  std::string db_path() const { return dir_ + "/benchfleet.db"; }
  bt::AgentProcess& agent() { return *agent_; }
  bt::CoordinatorChild& coordinator() { return *coordinator_; }

  json get(const std::string& target) {
    auto r = client_->get(target, kOperatorToken);
    if (!r.ok()) throw HarnessError("GET " + target + ": " + r.error().describe());
    if (r->status != 200) throw HarnessError(benchfleet::http::error_for_response(*r, "GET " + target).describe());
    auto body = r->json();
    if (!body.ok()) throw HarnessError("GET " + target + ": " + body.error().describe());
    return *body;
  }

  // Submits `repetitions` jobs of one cell measured for `job_seconds` each; the run's id.
  std::int64_t submit(int repetitions, double job_seconds) {
    const json matrix = {{"name", "fault-agent-kill"},
                         {"models", {kModel}},
                         {"batch_sizes", {1}},
                         {"modes", {"eager"}},
                         {"torch_builds", {"local"}},
                         {"gpus", {"cpu"}},
                         {"runtimes", {"libtorch"}},
                         {"repetitions", repetitions},
                         {"timeout_s", 300},
                         {"measurement",
                          {{"warmup", 1},
                           {"min_iterations", 3},
                           {"max_iterations", 1000000},
                           {"min_duration_s", job_seconds},
                           {"max_duration_s", job_seconds},
                           {"target_ci_rel_width", 0.5}}}};
    auto r = client_->post_json("/api/v1/runs", matrix, kOperatorToken);
    if (!r.ok() || r->status != 201) {
      throw HarnessError(
          "submit: " + (r.ok() ? benchfleet::http::error_for_response(*r, "submit").describe() : r.error().describe()));
    }
    return r->json()->at("id").get<std::int64_t>();
  }

 private:
  std::string dir_;
  std::unique_ptr<bt::CoordinatorChild> coordinator_;
  std::unique_ptr<benchfleet::http::Client> client_;
  std::unique_ptr<bt::AgentProcess> agent_;
};

// A worker of the agent that measures a job: its pid (also its process group) and the job.
struct Worker {
  pid_t pid = 0;
  std::int64_t job_id = 0;
  int attempt = 0;
  Clock::time_point seen;
};

// Waits (up to `limit`) for a worker of `agent`; throws when none shows up or the agent died.
Worker wait_for_worker(bt::AgentProcess& agent, std::set<pid_t>& seen_workers, std::chrono::seconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (!agent.running()) throw HarnessError("the agent exited:\n" + agent.log_tail(4000));
    for (pid_t w : agent.children_named("benchfleet-work")) {
      if (auto job = worker_job(w)) {
        seen_workers.insert(w);
        return Worker{w, job->first, job->second, Clock::now()};
      }
    }
    std::this_thread::sleep_for(10ms);
  }
  throw HarnessError("no worker ran within " + std::to_string(limit.count()) + " s:\n" + agent.log_tail(4000));
}

struct Tally {
  long jobs = 0, lost = 0, duplicated = 0, not_ok = 0, failed = 0, max_attempt = 0;
};

// Every job of `runs` through the REST API: its status and its stored results (all pages).
Tally check_through_api(Fleet& fleet, const std::vector<std::int64_t>& runs) {
  Tally t;
  for (std::int64_t run : runs) {
    const std::string url = "/api/v1/runs/" + std::to_string(run);
    std::map<std::int64_t, int> results_of;
    std::string cursor;
    do {
      const json page =
          fleet.get(url + "/results?samples=false&limit=1000" + (cursor.empty() ? "" : "&cursor=" + cursor));
      for (const json& r : page.at("results")) {
        ++results_of[r.at("job_id").get<std::int64_t>()];
        if (r.at("result").value("status", "") != "ok") {
          ++t.not_ok;
          std::cerr << "job " << r.at("job_id") << ": result " << r.at("result").dump() << "\n";
        }
      }
      cursor = page.at("next_cursor").is_string() ? page.at("next_cursor").get<std::string>() : "";
    } while (!cursor.empty());
    const json jobs = fleet.get(url + "/jobs?limit=10000");
    for (const json& job : jobs.at("jobs")) {
      ++t.jobs;
      const std::int64_t id = job.at("id").get<std::int64_t>();
      const std::string status = job.at("status").get<std::string>();
      const int stored = results_of.count(id) ? results_of[id] : 0;
      t.max_attempt = std::max<long>(t.max_attempt, job.at("attempt").get<int>());
      if (status == "failed") ++t.failed;
      if (status != "done" || stored == 0) {
        ++t.lost;
        std::cerr << "lost: job " << id << " is " << status << " (attempt " << job.at("attempt") << ") with " << stored
                  << " result(s)\n";
      }
      if (stored > 1) {
        t.duplicated += stored - 1;
        std::cerr << "duplicated: job " << id << " has " << stored << " results\n";
      }
    }
  }
  return t;
}

// The same counts straight from the coordinator's SQLite file, opened read-only.
Tally check_in_database(const std::string& path) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
    const std::string why = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw HarnessError("cannot open " + path + " read-only: " + why);
  }
  std::unique_ptr<sqlite3, int (*)(sqlite3*)> owner(db, sqlite3_close);
  auto count = [&](const char* sql) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, sql, -1, &s, nullptr) != SQLITE_OK) {
      throw HarnessError(std::string("sqlite: ") + sqlite3_errmsg(db) + " in " + sql);
    }
    long n = sqlite3_step(s) == SQLITE_ROW ? sqlite3_column_int64(s, 0) : -1;
    sqlite3_finalize(s);
    return n;
  };
  Tally t;
  t.jobs = count("SELECT COUNT(*) FROM jobs");
  t.lost = count(
      "SELECT COUNT(*) FROM jobs j WHERE j.status <> 'done'"
      " OR NOT EXISTS (SELECT 1 FROM results r WHERE r.job_id = j.id)");
  // Extra rows per job, and any result body stored twice (same digest) across jobs.
  t.duplicated = count("SELECT COALESCE(SUM(n - 1), 0) FROM (SELECT COUNT(*) AS n FROM results GROUP BY job_id)") +
                 count(
                     "SELECT COALESCE(SUM(n - 1), 0) FROM (SELECT COUNT(DISTINCT job_id) AS n FROM results"
                     " GROUP BY body_sha256)");
  t.not_ok = count("SELECT COUNT(*) FROM results WHERE status <> 'ok'");
  t.failed = count("SELECT COUNT(*) FROM jobs WHERE status = 'failed'");
  t.max_attempt = count("SELECT COALESCE(MAX(attempt), 0) FROM jobs");
  return t;
}

int run(const Options& o) {
  std::mt19937_64 rng(o.seed);
  std::printf("fault_agent_kill: %d kills (at most %d per job, max_attempts %d), jobs of ~%.1f s, seed %" PRIu64
              ", in %s\n",
              o.kills, o.kills_per_job, o.kills_per_job + 1, o.job_seconds, o.seed, o.dir.c_str());
  std::fflush(stdout);
  Fleet fleet(o);
  bt::AgentProcess& agent = fleet.agent();
  WorkerReaper reaper;  // every worker seen: none may be left running at the end
  std::set<pid_t>& seen_workers = reaper.workers;
  std::vector<std::int64_t> runs;
  std::map<std::int64_t, int> kills_of;  // job id -> kills
  bt::FaultRow row;
  row.fault_class = "agent kill -9 mid-job";
  row.recovery_meaning =
      "kill -9 of the agent until its restarted process (same state dir) has leased a job again, the orphaned "
      "worker killed before that";
  int missed = 0, orphans_left = 0, killed_job_again = 0;
  // The jobs still to be killed at most kills_per_job times, plus a margin; topped up below.
  auto jobs_needed = [&](int kills_left) {
    return std::min(100, (kills_left + o.kills_per_job - 1) / o.kills_per_job + 1);
  };
  runs.push_back(fleet.submit(jobs_needed(o.kills), o.job_seconds));

  agent.start();
  // The first job runs unharmed: it exports the artifact (cached from then on) and shows how
  // long a worker lives, the window a kill is drawn in.
  Worker first = wait_for_worker(agent, seen_workers, 300s);
  while (bt::process_alive(first.pid)) std::this_thread::sleep_for(10ms);
  const double window_s = std::max(0.2, seconds_since(first.seen));
  std::printf("a worker lives %.2f s; kills land uniformly in its first %.2f s\n", window_s, 0.9 * window_s);
  std::fflush(stdout);

  while (row.injected < o.kills) {
    const json latest = fleet.get("/api/v1/runs/" + std::to_string(runs.back()));
    const json& counts = latest.at("jobs");
    if (counts.value("queued", 0) + counts.value("leased", 0) + counts.value("running", 0) < 2) {
      runs.push_back(fleet.submit(jobs_needed(o.kills - row.injected), o.job_seconds));
    }
    const Worker w = wait_for_worker(agent, seen_workers, 120s);
    if (kills_of[w.job_id] >= o.kills_per_job) {  // killed enough: let it finish
      while (bt::process_alive(w.pid)) std::this_thread::sleep_for(10ms);
      continue;
    }
    std::uniform_real_distribution<double> moment(0.0, 0.9 * window_s);
    const double delay = moment(rng);
    std::this_thread::sleep_until(w.seen +
                                  std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(delay)));
    // Frozen, the agent can neither reap the worker nor report: the kill lands mid-job exactly
    // when the worker is still its child and alive now.
    agent.freeze();
    const auto children = agent.children();
    if (!bt::process_alive(w.pid) || std::find(children.begin(), children.end(), w.pid) == children.end()) {
      agent.thaw();
      // The worker ended first (it started slower than the first one); try the next one.
      if (++missed > o.kills + 20) throw HarnessError("most workers ended before their kill moment");
      continue;
    }
    const std::size_t log_offset = file_size(agent.log_path());
    agent.kill9();
    const auto killed_at = Clock::now();
    ++row.injected;
    ++kills_of[w.job_id];
    agent.start();
    std::optional<std::pair<std::int64_t, int>> leased;
    const auto deadline = Clock::now() + 120s;
    while (!(leased = lease_logged(agent, log_offset))) {
      if (!agent.running()) throw HarnessError("the restarted agent exited:\n" + agent.log_tail(4000));
      if (Clock::now() > deadline)
        throw HarnessError("the restarted agent leased nothing in 120 s:\n" + agent.log_tail(4000));
      std::this_thread::sleep_for(10ms);
    }
    row.recovery_s.push_back(seconds_since(killed_at));
    // The lease is logged after the orphan sweep: the killed worker's group must be gone by now.
    const bool orphan = bt::process_group_alive(w.pid);
    orphans_left += orphan ? 1 : 0;
    killed_job_again += leased->first == w.job_id ? 1 : 0;
    std::printf("kill %3d/%d: job %" PRId64
                " attempt %d, %.2f s into its worker; leased again after %.2f s: job %" PRId64 " attempt %d%s\n",
                row.injected, o.kills, w.job_id, w.attempt, delay, row.recovery_s.back(), leased->first, leased->second,
                orphan ? "; ORPHAN STILL RUNNING" : "");
    std::fflush(stdout);
  }

  // Every run to its end, then a drain: the agent exits on its own.
  const auto end_deadline = Clock::now() + 600s;
  auto all_done = [&] {
    for (auto id : runs) {
      if (fleet.get("/api/v1/runs/" + std::to_string(id)).value("state", "") != "done") return false;
    }
    return true;
  };
  bool finished = false;
  while (!(finished = all_done()) && Clock::now() < end_deadline && agent.running()) std::this_thread::sleep_for(250ms);
  if (!finished) std::cerr << "not every run finished:\n" << agent.log_tail(4000) << "\n";
  agent.sigterm();
  const auto exit = agent.wait_exit(60s);
  if (!exit) std::cerr << "the agent did not exit after SIGTERM\n";
  for (pid_t w : seen_workers) {
    if (bt::process_group_alive(w)) {
      ++orphans_left;
      std::cerr << "worker " << w << " (" << bt::command_name(w) << ") is still running\n";
    }
  }
  const std::size_t spooled = agent.spool_entries().size();

  const Tally api = check_through_api(fleet, runs);
  const Tally db = check_in_database(fleet.db_path());
  row.checked = api.jobs;
  row.lost = std::max(api.lost, db.lost);
  row.duplicated = std::max(api.duplicated, db.duplicated);
  const bool agree = api.jobs == db.jobs && api.lost == db.lost && api.duplicated == db.duplicated;
  fleet.coordinator().stop();

  bt::print_fault_table({row});
  if (o.json_row) std::printf("%s\n", bt::fault_row_json(row).c_str());
  std::printf(
      "jobs %ld in %zu run(s); kills that found the worker already gone (not counted): %d; restarted agents "
      "that leased the killed job again first: %d of %d; highest attempt %ld; failed jobs %ld; non-ok "
      "results %ld; orphans left %d; spool entries left %zu; REST and SQLite %s\n",
      api.jobs, runs.size(), missed, killed_job_again, row.injected, api.max_attempt, api.failed, api.not_ok,
      orphans_left, spooled, agree ? "agree" : "DISAGREE");
  const bool clean = bt::fault_row_clean(row) && finished && exit && agree && orphans_left == 0 && api.not_ok == 0 &&
                     spooled == 0 && row.injected == o.kills;
  std::printf("%s\n", clean ? "clean" : "NOT CLEAN");
  return clean ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"fault_agent_kill: kill -9 of a real agent at random moments of its jobs; 0 lost, 0 duplicated"};
  app.add_option("--kills", o.kills, "agent kills to inject")->check(CLI::Range(1, 10000))->capture_default_str();
  app.add_option("--kills-per-job", o.kills_per_job, "most kills one job takes (max_attempts is one more)")
      ->check(CLI::Range(1, 20))
      ->capture_default_str();
  app.add_option("--job-seconds", o.job_seconds, "measuring time of each job")
      ->check(CLI::Range(0.2, 30.0))
      ->capture_default_str();
  app.add_option("--lease-ttl-s", o.lease_ttl_s, "the coordinator's lease TTL (heartbeats every second)")
      ->check(CLI::Range(2, 600))
      ->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the kill moments (default: random, printed)");
  app.add_option("--dir", o.dir, "work directory (default: a new one under $TMPDIR or /tmp)");
  app.add_flag("--keep-dir", o.keep_dir, "keep the work directory (it is always kept when the run is not clean)");
  app.add_flag("--json", o.json_row, "print the row as JSON too");
  CLI11_PARSE(app, argc, argv);
  std::optional<bt::TempDir> own_dir;  // removed at the end of a clean run unless --keep-dir
  if (o.dir.empty()) o.dir = own_dir.emplace("fault_agent_kill").str();
  int code = 1;
  try {
    code = run(o);
  } catch (const std::exception& e) {
    std::cerr << "fault_agent_kill: " << e.what() << "\n";
  }
  if (code != 0 || !own_dir || o.keep_dir) {
    if (own_dir) own_dir->keep();
    std::cerr << "work directory kept: " << o.dir << "\n";
  }
  return code;
}
