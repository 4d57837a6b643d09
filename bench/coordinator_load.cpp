// coordinator_load: how many lease -> result cycles per second a real benchfleet-coordinator
// sustains for N simulated agents over loopback, with lease and result latency percentiles,
// next to the raw durable-commit rate of SQLite on the same disk. Prints figures; it is not a
// pass/fail test (the exit code only says whether the protocol worked: cycles > 0, no errors).
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/load_agent.h"
#include "bench/sqlite_probe.h"
#include "common/catalog.h"
#include "common/stats.h"
#include "tests/support/coordinator_child.h"

namespace {

using namespace benchfleet;
using namespace benchfleet::bench;
using benchfleet::testing::coordinator_binary;
using benchfleet::testing::CoordinatorChild;
using benchfleet::testing::exit_code;
using benchfleet::testing::file_tail;
using benchfleet::testing::LaunchOptions;
namespace fs = std::filesystem;

constexpr const char* kOperatorToken = "load-operator-token";
constexpr const char* kEnrollmentToken = "load-enrollment-token";
constexpr std::size_t kLogTailBytes = 2000;  // of a coordinator's log, quoted when a phase fails

struct Options {
  std::vector<int> agents = {10, 100, 1000};
  double seconds = 8;
  double sqlite_seconds = 3;
  int coordinator_threads = 2;
  int client_threads = 1;
  std::int64_t jobs = 0;  // 0: sized from the SQLite probe
  std::string dir;        // "": a fresh directory under $TMPDIR or /tmp
  std::string coordinator = coordinator_binary();
  bool keep_dir = false;
};

struct Row {
  int agents = 0;
  CommitProbe probe;  // taken just before this phase: the disk's rate drifts with other load
  PhaseResult phase;
  int coordinator_exit = 0;
};

std::string fs_type(const std::string& dir) {
  struct statfs s {};
  if (::statfs(dir.c_str(), &s) != 0) return "unknown";
  switch (static_cast<unsigned long>(s.f_type)) {
    case 0xEF53: return "ext4";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x01021994: return "tmpfs (fsync is free here: figures are not disk figures)";
    case 0x794C7630: return "overlayfs";
    case 0x2FC12FC1: return "zfs";
    default: {
      char buf[32];
      std::snprintf(buf, sizeof buf, "0x%lx", static_cast<unsigned long>(s.f_type));
      return buf;
    }
  }
}

// 1000 agents need 1000 sockets here and as many in the coordinator (which inherits this).
void raise_fd_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
}

double pct(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return percentile_sorted(v, q);
}

// Enough queued jobs that the agents do not run dry in the window: every cycle commits twice,
// so the coordinator cannot beat half the raw commit rate; 1.5x that, plus headroom for the
// largest N. The same for every N, because the cost of a lease grows with the queue's length.
std::int64_t preload_for(const Options& o, double commits_per_s) {
  if (o.jobs > 0) return o.jobs;
  const int max_agents = *std::max_element(o.agents.begin(), o.agents.end());
  const double ceiling = commits_per_s / 2 * o.seconds * 1.5;
  return std::clamp<std::int64_t>(static_cast<std::int64_t>(ceiling) + 6LL * max_agents + 300, 300, 180'000);
}

Result<Row> run_one(const Options& o, const std::string& dir, int agents, std::int64_t jobs,
                    const std::vector<std::string>& models) {
  Row row;
  row.agents = agents;
  std::cerr << "  N=" << agents << ": SQLite commit probe (" << o.sqlite_seconds << " s)...\n";
  auto probe = probe_durable_commits(dir + "/sqlite-probe.db", o.sqlite_seconds);
  if (!probe.ok()) return probe.error();
  row.probe = *probe;

  const std::string db = dir + "/coordinator-" + std::to_string(agents) + ".db";
  LaunchOptions launch;
  launch.binary = o.coordinator;
  launch.flags = {{"--db", db},
                  {"--operator-token", kOperatorToken},
                  {"--enrollment-token", kEnrollmentToken},
                  {"--threads", std::to_string(o.coordinator_threads)},
                  {"--log-level", "warn"}};
  launch.port_file = db + ".port";
  launch.log_file = db + ".log";
  launch.start_timeout = std::chrono::seconds(30);
  auto child = CoordinatorChild::start(launch);
  if (!child.ok()) return child.error();

  PhaseConfig pc;
  pc.endpoint = {boost::asio::ip::make_address("127.0.0.1"), static_cast<unsigned short>((*child)->port())};
  pc.operator_token = kOperatorToken;
  pc.enrollment_token = kEnrollmentToken;
  pc.agents = agents;
  pc.seconds = o.seconds;
  pc.client_threads = o.client_threads;
  pc.preload_jobs = jobs;
  pc.models = models;
  pc.tag = std::to_string(agents);
  std::cerr << "  N=" << agents << ": coordinator pid " << (*child)->pid() << " on port " << (*child)->port()
            << ", preloading " << pc.preload_jobs << " jobs, enrolling, measuring " << o.seconds << " s...\n";
  auto phase = run_phase(pc);
  row.coordinator_exit = exit_code((*child)->stop().status);
  if (!phase.ok()) {
    return Error::internal("N=" + std::to_string(agents) + ": " + phase.error().message +
                           "\ncoordinator log ends with:\n" + file_tail(launch.log_file, kLogTailBytes));
  }
  row.phase = std::move(*phase);
  if (row.coordinator_exit != 0) {
    std::cerr << "  N=" << agents << ": the coordinator exited with " << row.coordinator_exit
              << " after SIGTERM; log ends with:\n" << file_tail(launch.log_file, kLogTailBytes) << "\n";
  }
  return row;
}

void print_report(const Options& o, const std::string& dir, std::vector<Row>& rows) {
  std::printf("\nbenchfleet coordinator load: %g s window per N, coordinator --threads %d, %d client thread(s),\n"
              "one keep-alive connection and one slot per agent, lease wait_s=0, fresh coordinator and db per N\n",
              o.seconds, o.coordinator_threads, o.client_threads);
  std::printf("work dir %s (%s): coordinator db and SQLite probe on the same file system\n", dir.c_str(),
              fs_type(dir).c_str());
  std::printf("SQLite probe: fresh db, WAL, synchronous=FULL, one INSERT per transaction, %.1f s, just before\n"
              "each N; queued jobs at the start of each window: %lld\n\n",
              o.sqlite_seconds, rows.empty() ? 0LL : static_cast<long long>(rows.front().phase.preloaded_jobs));
  std::printf("%8s | %8s | %8s | %12s | %12s | %13s | %13s | %6s | %9s | %s\n", "N agents", "cycles", "cycles/s",
              "lease p50 ms", "lease p99 ms", "result p50 ms", "result p99 ms", "errors", "commits/s",
              "cycles/s / commits/s");
  std::printf("%s\n", std::string(134, '-').c_str());
  for (auto& r : rows) {
    const auto& p = r.phase;
    const double rate = p.window_s > 0 ? static_cast<double>(p.cycles) / p.window_s : 0;
    std::printf("%8d | %8lld | %8.1f | %12.2f | %12.2f | %13.2f | %13.2f | %6lld | %9.0f | %.3f\n", r.agents,
                static_cast<long long>(p.cycles), rate, pct(r.phase.lease_ms, 0.5), pct(r.phase.lease_ms, 0.99),
                pct(r.phase.result_ms, 0.5), pct(r.phase.result_ms, 0.99), static_cast<long long>(p.errors),
                r.probe.per_second, r.probe.per_second > 0 ? rate / r.probe.per_second : 0);
  }
  std::printf("\nEach cycle is two durable commits (lease, result): with one writer and no group commit the\n"
              "last column cannot exceed about 0.5. Latencies count requests started inside the window.\n");
  for (const auto& r : rows) {
    const auto& p = r.phase;
    std::printf("N=%d: SQLite commit p50 %.2f ms p99 %.2f ms; preload %lld jobs %.2f s; %lld jobs in %d run(s);"
                " enrolment %.2f s; empty leases %lld; refills %d; coordinator exit %d\n",
                r.agents, r.probe.p50_ms, r.probe.p99_ms, static_cast<long long>(p.preloaded_jobs), p.preload_s,
                static_cast<long long>(p.jobs_submitted), p.runs_submitted, p.enrol_s, static_cast<long long>(p.empty_leases), p.refills, r.coordinator_exit);
    for (const auto& e : p.error_samples) std::printf("  error: %s\n", e.c_str());
  }
  std::fflush(stdout);
}

int run(int argc, char** argv) {
  Options o;
  CLI::App app{
      "coordinator_load: runs N simulated agents (Asio coroutines, one keep-alive connection each) against a\n"
      "real benchfleet-coordinator over loopback; each agent loops lease -> result for a fixed window.\n"
      "Prints cycles/s and lease/result latency p50/p99 per N, next to SQLite's raw durable-commit rate\n"
      "on the same disk. Exits 1 when a phase completed no cycle or saw any protocol error."};
  app.add_option("--agents", o.agents, "agent counts to measure, comma separated")->delimiter(',')
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--seconds", o.seconds, "measurement window per agent count")->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--sqlite-seconds", o.sqlite_seconds, "duration of the SQLite commit probe")
      ->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("--coordinator-threads", o.coordinator_threads, "the coordinator's --threads")
      ->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--client-threads", o.client_threads, "threads driving the simulated agents")
      ->capture_default_str()->check(CLI::Range(1, 64));
  app.add_option("--jobs", o.jobs, "jobs queued before each window (0: sized from the commit rate)")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  app.add_option("--dir", o.dir, "work directory for the databases (default: a new one under $TMPDIR or /tmp)");
  app.add_option("--coordinator", o.coordinator, "benchfleet-coordinator binary")->capture_default_str();
  app.add_flag("--keep-dir", o.keep_dir, "keep the work directory (databases, coordinator logs)");
  CLI11_PARSE(app, argc, argv);

  raise_fd_limit();
  std::string dir = o.dir;
  bool made_dir = false;
  if (dir.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/benchfleet-load-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) {
      std::cerr << "coordinator_load: cannot create a directory from " << pattern << "\n";
      return 2;
    }
    dir = pattern;
    made_dir = true;
  } else {
    fs::create_directories(dir);
  }

  auto catalog = Catalog::load_file(default_catalog_path());
  if (!catalog.ok()) {
    std::cerr << "coordinator_load: " << catalog.error().describe() << "\n";
    return 2;
  }
  std::vector<std::string> models;
  for (const auto& m : catalog->models()) models.push_back(m.id);

  // The first probe sizes the queue (see preload_for); each phase takes its own probe.
  std::cerr << "coordinator_load: work dir " << dir << "; sizing SQLite commit probe...\n";
  auto sizing = probe_durable_commits(dir + "/sqlite-probe.db", std::min(o.sqlite_seconds, 1.0));
  if (!sizing.ok()) {
    std::cerr << "coordinator_load: " << sizing.error().message << "\n";
    return 1;
  }
  const std::int64_t jobs = preload_for(o, sizing->per_second);

  std::vector<Row> rows;
  bool failed = false;
  for (int n : o.agents) {
    auto row = run_one(o, dir, n, jobs, models);
    if (!row.ok()) {
      std::cerr << "coordinator_load: " << row.error().message << "\n";
      failed = true;
      break;
    }
    failed = failed || row->phase.cycles == 0 || row->phase.errors > 0;
    rows.push_back(std::move(*row));
  }
  print_report(o, dir, rows);
  std::int64_t total = 0;
  for (const auto& r : rows) total += r.phase.cycles;
  std::printf("cycles_total=%lld status=%s\n", static_cast<long long>(total), failed ? "FAILED" : "ok");

  if (made_dir && !o.keep_dir && !failed) {
    std::error_code ignored;
    fs::remove_all(dir, ignored);
  } else {
    std::printf("work dir kept: %s\n", dir.c_str());
  }
  return failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    // Coordinator children are killed by their destructors during unwinding.
    std::cerr << "coordinator_load: fatal: " << e.what() << "\n";
    return 1;
  }
}
