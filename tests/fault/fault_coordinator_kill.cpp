// fault_coordinator_kill (fault class R2): kill -9 of a real benchfleet-coordinator
// under load from N simulated agents (tests/fault/sim_fleet.h), K times. After each kill the
// coordinator is started again on the same port and database, and the time until every agent is
// served again (a 2xx answer) is taken. At the end every result the coordinator acknowledged is
// looked up through the REST API: lost = acknowledged but not stored; duplicated = a second
// stored result for a job. Prints a row of tests/fault/fault_table.h's table; exits 0 only when
// nothing was lost or duplicated and every recovery took at most --recovery-limit-s.
#include <stdlib.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/catalog.h"
#include "common/codecs.h"
#include "common/http/client.h"
#include "tests/fault/fault_table.h"
#include "tests/fault/sim_fleet.h"
#include "tests/support/coordinator_child.h"

namespace {

using namespace benchfleet;
using namespace benchfleet::testing;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr const char* kOperatorToken = "fault-operator-token";
constexpr const char* kEnrollmentToken = "fault-enrollment-token";
constexpr std::int64_t kMaxJobsPerRun = 90'000;  // below the coordinator's default --max-cells
constexpr std::size_t kLogTailBytes = 3000;

struct Options {
  int agents = 100;
  int kills = 20;
  double min_load_s = 2;  // load between two kills, drawn uniformly
  double max_load_s = 6;
  // A simulated job's duration, drawn uniformly: short, so the coordinator is the bottleneck and
  // every kill cuts requests in flight (lease grants, result commits).
  int work_min_ms = 20;
  int work_max_ms = 200;
  double recovery_limit_s = 10;  // "agents back within 10 s"
  double recovery_wait_s = 30;   // how long to wait for the last agent before calling it missing
  double quiet_s = 3;            // load after the last restart, before the drain
  double drain_s = 120;
  std::int64_t queue = 0;  // at least this many jobs kept queued (0: sized from the agents' pace)
  std::string dir;
  std::string coordinator = coordinator_binary();
  std::string log_level = "info";
  bool keep_dir = false;
  bool json = false;
};

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// 100 agents need 100 sockets here and as many in the coordinator (which inherits this).
void raise_fd_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
}

// Submits runs until at least `want` more jobs are queued; returns how many were. Only called
// while the coordinator runs (the driver alone kills it), so a failure is a failure.
Result<std::int64_t> submit_jobs(http::Client& client, const std::vector<std::string>& models, std::int64_t want,
                                 int& serial) {
  std::int64_t submitted = 0;
  const auto per_rep_and_batch = static_cast<std::int64_t>(models.size()) * 2;  // two modes
  while (submitted < want) {
    const std::int64_t n = std::clamp<std::int64_t>(want - submitted, 1, kMaxJobsPerRun);
    MatrixSpec spec;
    spec.name = "fault-coordinator-kill-" + std::to_string(++serial);
    spec.models = models;
    spec.modes = {Mode::kEager, Mode::kDefault};
    spec.torch_builds = {"stable"};
    spec.gpus = {"a100"};
    spec.repetitions = static_cast<int>(std::min<std::int64_t>(100, (n + per_rep_and_batch - 1) / per_rep_and_batch));
    const std::int64_t per_batch = per_rep_and_batch * spec.repetitions;
    const auto batches = static_cast<int>(std::max<std::int64_t>(1, (n + per_batch - 1) / per_batch));
    for (int b = 1; b <= batches; ++b) spec.batch_sizes.push_back(b);
    BF_ASSIGN_OR_RETURN(auto r, client.post_json("/api/v1/runs", nlohmann::json(spec), kOperatorToken));
    if (r.status != 201) return http::error_for_response(r, "submitting run " + spec.name);
    BF_ASSIGN_OR_RETURN(auto j, r.json());
    submitted += j.value("job_count", std::int64_t{0});
  }
  return submitted;
}

// GET `target` as JSON, answered 200.
Result<nlohmann::json> get_json(http::Client& client, const std::string& target) {
  BF_ASSIGN_OR_RETURN(auto r, client.get(target, kOperatorToken));
  if (r.status != 200) return http::error_for_response(r, "GET " + target);
  return r.json();
}

struct StoredResult {
  std::int64_t id = 0;
  int attempt = 0;
  std::string identity;  // environment.fault_result
};

// Every stored result of every run, by job id, read page by page through the REST API.
Result<std::map<std::int64_t, std::vector<StoredResult>>> stored_results(http::Client& client) {
  std::vector<std::int64_t> runs;
  std::string runs_target = "/api/v1/runs?limit=500";
  while (true) {
    BF_ASSIGN_OR_RETURN(auto page, get_json(client, runs_target));
    for (const auto& run : page["runs"]) runs.push_back(run["id"].get<std::int64_t>());
    if (page["next_before"].is_null()) break;
    runs_target = "/api/v1/runs?limit=500&before=" + page["next_before"].dump();
  }
  std::map<std::int64_t, std::vector<StoredResult>> by_job;
  for (const std::int64_t run : runs) {
    const std::string base = "/api/v1/runs/" + std::to_string(run) + "/results?limit=1000";
    std::string target = base;
    while (true) {
      BF_ASSIGN_OR_RETURN(auto page, get_json(client, target));
      for (const auto& row : page["results"]) {
        StoredResult s{row["id"].get<std::int64_t>(), row["attempt"].get<int>(), ""};
        const auto& env = row["result"].value("environment", nlohmann::json::object());
        if (env.is_object()) s.identity = env.value("fault_result", "");
        by_job[row["job_id"].get<std::int64_t>()].push_back(std::move(s));
      }
      if (page["next_cursor"].is_null()) break;
      target = base + "&cursor=" + page["next_cursor"].get<std::string>();
    }
  }
  return by_job;
}

struct Check {
  long lost = 0, duplicated = 0, stored = 0;
  std::vector<std::string> lost_samples;
};

// The ledger against the store: each acknowledged result must be stored under the id its
// acknowledgement named, for its job and attempt, with the identity posted; a job with more than
// one stored result (or a job + attempt stored twice) is duplicated.
Check check_ledger(const std::vector<Acknowledged>& ledger,
                   const std::map<std::int64_t, std::vector<StoredResult>>& stored) {
  Check c;
  for (const auto& [job, rows] : stored) {
    c.stored += static_cast<long>(rows.size());
    if (rows.size() > 1) c.duplicated += static_cast<long>(rows.size() - 1);
  }
  for (const auto& e : ledger) {
    const auto it = stored.find(e.job_id);
    const bool found =
        it != stored.end() && std::any_of(it->second.begin(), it->second.end(), [&](const auto& s) {
          return s.attempt == e.attempt && s.identity == e.identity && (e.result_id == 0 || s.id == e.result_id);
        });
    if (found) continue;
    ++c.lost;
    if (c.lost_samples.size() < 5) {
      c.lost_samples.push_back("job " + std::to_string(e.job_id) + " attempt " + std::to_string(e.attempt) +
                               " result " + std::to_string(e.result_id) + " (" + e.identity + ")");
    }
  }
  return c;
}

struct KillRecord {
  double down_s = 0;      // kill until the restarted coordinator listened again
  double recovery_s = 0;  // restart until the last agent's first 2xx answer
  int missing = 0;        // agents not served again within --recovery-wait-s
  int late = 0;           // agents served again later than --recovery-limit-s
};

// Waits until every agent had a 2xx answer since `restart` (or --recovery-wait-s passed).
KillRecord await_recovery(const Options& o, const SimFleet& fleet, Clock::time_point restart) {
  const auto deadline =
      restart + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o.recovery_wait_s));
  KillRecord k;
  while (true) {
    const auto answers = fleet.first_answers();
    const bool all = std::all_of(answers.begin(), answers.end(), [](const auto& a) { return a.has_value(); });
    if (all || Clock::now() >= deadline) {
      for (const auto& a : answers) {
        const double s = a ? std::max(0.0, seconds_between(restart, *a)) : o.recovery_wait_s;
        k.recovery_s = std::max(k.recovery_s, s);
        if (!a) ++k.missing;
        if (s > o.recovery_limit_s) ++k.late;
      }
      return k;
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
}

int run(int argc, char** argv) {
  Options o;
  CLI::App app{
      "fault_coordinator_kill (R2): kill -9 of a real benchfleet-coordinator under load from N\n"
      "simulated agents, K times, restarting it on the same port and database each time. Reports the\n"
      "acknowledged results lost or duplicated and how long the agents took to be served again.\n"
      "Exits 0 only when nothing was lost or duplicated and every recovery took <= --recovery-limit-s."};
  app.add_option("--agents", o.agents, "simulated agents")->capture_default_str()->check(CLI::Range(1, 2000));
  app.add_option("--kills", o.kills, "kill -9 of the coordinator")->capture_default_str()->check(CLI::Range(1, 1000));
  app.add_option("--min-load-s", o.min_load_s, "shortest load between kills")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--max-load-s", o.max_load_s, "longest load between kills")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--work-min-ms", o.work_min_ms, "shortest simulated job")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--work-max-ms", o.work_max_ms, "longest simulated job")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--recovery-limit-s", o.recovery_limit_s, "most seconds agents may take to be served again")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--recovery-wait-s", o.recovery_wait_s, "how long to wait for every agent after a restart")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--quiet-s", o.quiet_s, "load after the last restart, before the agents drain")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--drain-s", o.drain_s, "most seconds the agents get to have their last results acknowledged")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--queue", o.queue, "keep at least this many jobs queued (0: what the agents can use up)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--dir", o.dir, "work directory (default: a new one under $TMPDIR or /tmp)");
  app.add_option("--coordinator", o.coordinator, "benchfleet-coordinator binary")->capture_default_str();
  app.add_option("--log-level", o.log_level, "the coordinator's --log-level")->capture_default_str();
  app.add_flag("--keep-dir", o.keep_dir, "keep the work directory (database, coordinator log)");
  app.add_flag("--json", o.json, "also print the row as one JSON line (for scripts/fault-suite.sh)");
  CLI11_PARSE(app, argc, argv);
  if (o.max_load_s < o.min_load_s || o.work_max_ms < o.work_min_ms || o.recovery_wait_s < o.recovery_limit_s) {
    std::cerr << "fault_coordinator_kill: need min <= max for load and work, and --recovery-wait-s >= "
                 "--recovery-limit-s\n";
    return 2;
  }

  raise_fd_limit();
  bool made_dir = false;
  auto work = benchfleet::testing::work_directory(o.dir, "benchfleet-coordkill", made_dir);
  if (!work.ok()) {
    std::cerr << "fault_coordinator_kill: " << work.error().describe() << "\n";
    return 2;
  }
  const std::string dir = *work;
  auto catalog = Catalog::load_file(default_catalog_path());
  if (!catalog.ok()) {
    std::cerr << "fault_coordinator_kill: " << catalog.error().describe() << "\n";
    return 2;
  }
  std::vector<std::string> models;
  for (const auto& m : catalog->models()) models.push_back(m.id);

  const int port = free_loopback_port();
  if (port == 0) {
    std::cerr << "fault_coordinator_kill: no free port on 127.0.0.1\n";
    return 2;
  }
  LaunchOptions launch = benchfleet::testing::launch_in(
      dir,
      {{"--operator-token", kOperatorToken}, {"--enrollment-token", kEnrollmentToken}, {"--log-level", o.log_level}});
  launch.binary = o.coordinator;
  launch.port = port;
  launch.start_timeout = std::chrono::seconds(30);
  auto failed = [&](const std::string& why) {
    std::cerr << "fault_coordinator_kill: " << why << "\ncoordinator log ends with:\n"
              << file_tail(launch.log_file, kLogTailBytes) << "\nwork dir kept: " << dir << "\n";
    return 1;
  };
  auto child = CoordinatorChild::start(launch);
  if (!child.ok()) return failed(child.error().message);
  std::unique_ptr<CoordinatorChild> coordinator = std::move(*child);
  launch.append_log = true;  // every restart appends to the same log
  std::cerr << "fault_coordinator_kill: work dir " << dir << "; coordinator pid " << coordinator->pid()
            << " on 127.0.0.1:" << port << "\n";

  // Enough queued jobs that the agents never wait on an empty queue (a long poll would then
  // look like a slow recovery): the most they can finish in a kill interval (or the quiet
  // period) and a recovery, or --queue if more; topped up by that much again before each kill.
  // --queue measures recovery with a long queue (before the jobs_queued_cells index each lease read every
  // queued job: 96,000 queued made recoveries 13-27 s).
  const double avg_work_s = std::max(0.02, (o.work_min_ms + o.work_max_ms) / 2000.0);
  const double interval_s = std::max(o.max_load_s, o.quiet_s) + o.recovery_limit_s;
  const auto reserve = static_cast<std::int64_t>(o.agents / avg_work_s * interval_s * 1.2) + 4LL * o.agents;
  const std::int64_t low_water = std::max<std::int64_t>(reserve, o.queue);
  http::Client client("http://127.0.0.1:" + std::to_string(port));
  int serial = 0;
  std::int64_t queued = 0;
  auto top_up = [&](std::int64_t granted) -> Status {
    if (queued - granted >= low_water) return Status::Ok();
    BF_ASSIGN_OR_RETURN(const std::int64_t more,
                        submit_jobs(client, models, low_water + reserve - (queued - granted), serial));
    queued += more;
    std::cerr << "  queued " << more << " more jobs (" << queued << " in all)\n";
    return Status::Ok();
  };
  if (auto s = top_up(0); !s) return failed(s.error().message);

  FleetOptions fo;
  fo.endpoint = {boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>(port)};
  fo.enrollment_token = kEnrollmentToken;
  fo.agents = o.agents;
  fo.work_min = milliseconds(o.work_min_ms);
  fo.work_max = milliseconds(o.work_max_ms);
  SimFleet fleet(fo);
  if (auto s = fleet.start(std::chrono::seconds(60)); !s) return failed(s.error().message);
  std::cerr << "fault_coordinator_kill: " << o.agents << " agents enrolled, " << queued << " jobs queued\n";

  std::mt19937_64 rng{std::random_device{}()};
  std::uniform_real_distribution<double> load(o.min_load_s, o.max_load_s);
  std::vector<KillRecord> kills;
  for (int k = 1; k <= o.kills; ++k) {
    if (auto s = top_up(fleet.counters().leases_granted); !s) return failed(s.error().message);
    std::this_thread::sleep_for(std::chrono::duration<double>(load(rng)));
    const auto killed_at = Clock::now();
    coordinator->kill9();
    coordinator.reset();
    const auto restart = Clock::now();
    fleet.watch_answers(restart);
    auto again = CoordinatorChild::start(launch);
    if (!again.ok()) return failed("restart " + std::to_string(k) + " failed: " + again.error().message);
    coordinator = std::move(*again);
    const auto ready = Clock::now();
    KillRecord rec = await_recovery(o, fleet, restart);
    rec.down_s = seconds_between(killed_at, ready);
    kills.push_back(rec);
    std::fprintf(stderr,
                 "  kill %d/%d: listening again %.2f s after the kill (pid %d); every agent served again "
                 "%.2f s after the restart (%d late, %d missing); %lld results acknowledged so far\n",
                 k, o.kills, rec.down_s, static_cast<int>(coordinator->pid()), rec.recovery_s, rec.late, rec.missing,
                 static_cast<long long>(fleet.counters().acknowledged));
  }

  std::this_thread::sleep_for(std::chrono::duration<double>(o.quiet_s));
  const bool drained = fleet.drain(std::chrono::duration_cast<milliseconds>(std::chrono::duration<double>(o.drain_s)));
  const auto ledger = fleet.ledger();
  const auto counters = fleet.counters();
  auto stored = stored_results(client);
  if (!stored.ok()) return failed("reading the stored results: " + stored.error().message);
  const Check check = check_ledger(ledger, *stored);
  const auto exit = coordinator->stop();

  FaultRow row;
  row.fault_class = "coordinator kill -9 under load";
  row.injected = static_cast<int>(kills.size());
  row.checked = static_cast<long>(ledger.size());
  row.lost = check.lost;
  row.duplicated = check.duplicated;
  for (const auto& k : kills) row.recovery_s.push_back(k.recovery_s);
  row.recovery_meaning = "restart until each of the " + std::to_string(o.agents) +
                         " simulated agents had a 2xx answer again (max over agents, per kill; an agent in a"
                         " simulated job asks when it ends)";
  int late_kills = 0, missing = 0;
  double down_max = 0;
  for (const auto& k : kills) {
    late_kills += k.recovery_s > o.recovery_limit_s ? 1 : 0;
    missing += k.missing;
    down_max = std::max(down_max, k.down_s);
  }

  print_fault_table({row});
  std::printf(
      "  %lld results acknowledged (%lld as repeats of a post whose answer was lost), %ld stored; "
      "%lld refused (409/404); %lld requests without an answer, %lld 5xx, %lld unexpected; "
      "%lld leases granted, %lld given back in the drain\n",
      static_cast<long long>(counters.acknowledged), static_cast<long long>(counters.acknowledged_repeats),
      check.stored, static_cast<long long>(counters.refused), static_cast<long long>(counters.transport_errors),
      static_cast<long long>(counters.server_errors), static_cast<long long>(counters.unexpected),
      static_cast<long long>(counters.leases_granted), static_cast<long long>(counters.released));
  std::printf(
      "  recoveries over %.0f s: %d of %d kills (%d agent(s) never served again within %.0f s); kill to "
      "listening again: max %.2f s; agents drained: %s; coordinator exit after SIGTERM: %d\n",
      o.recovery_limit_s, late_kills, row.injected, missing, o.recovery_wait_s, down_max, drained ? "all" : "NOT ALL",
      exit_code(exit.status));
  for (const auto& s : check.lost_samples) std::printf("  lost: %s\n", s.c_str());
  for (const auto& s : counters.samples) std::printf("  answer: %s\n", s.c_str());
  if (o.json) std::printf("%s\n", fault_row_json(row).c_str());

  const bool ok = fault_row_clean(row) && late_kills == 0 && missing == 0 && drained && counters.unexpected == 0 &&
                  exit_code(exit.status) == 0;
  std::printf("status=%s\n", ok ? "ok" : "FAILED");
  std::fflush(stdout);
  if (made_dir && !o.keep_dir && ok) {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  } else {
    std::fprintf(stderr, "work dir kept: %s\n", dir.c_str());
  }
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    // The coordinator child is killed by its destructor during unwinding.
    std::cerr << "fault_coordinator_kill: fatal: " << e.what() << "\n";
    return 1;
  }
}
