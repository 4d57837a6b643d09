// coordinator_load: how many lease -> result cycles per second a real benchfleet-coordinator
// sustains for N simulated agents over loopback with Q jobs kept queued, with lease and result
// latency percentiles, next to the raw durable-commit rate of SQLite on the same disk (a lease's
// cost must not grow with the queue). Prints figures; it is not a pass/fail test (the
// exit code only says whether the protocol worked: cycles > 0, no errors).
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
  std::vector<std::int64_t> queued = {1000, 10'000, 100'000};
  std::vector<int> agents = {10, 100, 1000};
  double seconds = 8;
  double sqlite_seconds = 3;
  int coordinator_threads = 2;
  int store_threads = 0;  // 0: the coordinator's default
  int client_threads = 1;
  std::int64_t foreign = 0;
  double rate = 0;          // results/s of the whole fleet (PhaseConfig::rate); 0: as fast as it goes
  double heartbeat_s = 15;  // backlog of a build no agent offers, queued ahead (PhaseConfig)
  std::string dir;          // "": a fresh directory under $TMPDIR or /tmp
  std::string coordinator = coordinator_binary();
  bool keep_dir = false;
};

struct Row {
  std::int64_t queued = 0;
  int agents = 0;
  CommitProbe probe;  // taken just before this phase: the disk's rate drifts with other load
  PhaseResult phase;
  int coordinator_exit = 0;
};

std::string fs_type(const std::string& dir) {
  struct statfs s {};
  if (::statfs(dir.c_str(), &s) != 0) return "unknown";
  switch (static_cast<unsigned long>(s.f_type)) {
    case 0xEF53:
      return "ext4";
    case 0x58465342:
      return "xfs";
    case 0x9123683E:
      return "btrfs";
    case 0x01021994:
      return "tmpfs (fsync is free here: figures are not disk figures)";
    case 0x794C7630:
      return "overlayfs";
    case 0x2FC12FC1:
      return "zfs";
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

Result<Row> run_one(const Options& o, const std::string& dir, std::int64_t queued, int agents,
                    const std::vector<std::string>& models) {
  Row row;
  row.queued = queued;
  row.agents = agents;
  const std::string name = "Q=" + std::to_string(queued) + " N=" + std::to_string(agents);
  std::cerr << "  " << name << ": SQLite commit probe (" << o.sqlite_seconds << " s)...\n";
  auto probe = probe_durable_commits(dir + "/sqlite-probe.db", o.sqlite_seconds);
  if (!probe.ok()) return probe.error();
  row.probe = *probe;

  const std::string db = dir + "/coordinator-q" + std::to_string(queued) + "-n" + std::to_string(agents) + ".db";
  LaunchOptions launch;
  launch.binary = o.coordinator;
  launch.flags = {{"--db", db},
                  {"--operator-token", kOperatorToken},
                  {"--enrollment-token", kEnrollmentToken},
                  {"--threads", std::to_string(o.coordinator_threads)},
                  {"--log-level", "warn"},
                  // Every simulated agent connects from 127.0.0.1, all before the first enrols:
                  // one address's bound on anonymous connections would shed them.
                  {"--max-connections-per-peer", "0"}};
  if (o.store_threads > 0) launch.flags["--store-threads"] = std::to_string(o.store_threads);
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
  pc.queued_jobs = queued;
  pc.foreign_jobs = o.foreign;
  pc.rate = o.rate;
  pc.heartbeat_s = o.heartbeat_s;
  pc.models = models;
  pc.tag = "q" + std::to_string(queued) + "-n" + std::to_string(agents);
  std::cerr << "  " << name << ": coordinator pid " << (*child)->pid() << " on port " << (*child)->port()
            << ", queueing " << pc.queued_jobs << " jobs, enrolling, measuring " << o.seconds << " s...\n";
  auto phase = run_phase(pc);
  row.coordinator_exit = exit_code((*child)->stop().status);
  if (!phase.ok()) {
    return Error::internal(name + ": " + phase.error().message + "\ncoordinator log ends with:\n" +
                           file_tail(launch.log_file, kLogTailBytes));
  }
  row.phase = std::move(*phase);
  if (row.coordinator_exit != 0) {
    std::cerr << "  " << name << ": the coordinator exited with " << row.coordinator_exit
              << " after SIGTERM; log ends with:\n"
              << file_tail(launch.log_file, kLogTailBytes) << "\n";
  }
  return row;
}

double cycles_per_s(const Row& r) {
  return r.phase.window_s > 0 ? static_cast<double>(r.phase.cycles) / r.phase.window_s : 0;
}

void print_report(const Options& o, const std::string& dir, std::vector<Row>& rows) {
  std::printf(
      "\nbenchfleet coordinator load: %g s window per (Q, N), coordinator --threads %d, %d client thread(s),\n"
      "one keep-alive connection and one slot per agent, lease wait_s=0, fresh coordinator and db per (Q, N);\n"
      "Q jobs queued before the window and kept near Q through it (refilled below 90%%)\n",
      o.seconds, o.coordinator_threads, o.client_threads);
  std::printf("work dir %s (%s): coordinator db and SQLite probe on the same file system\n", dir.c_str(),
              fs_type(dir).c_str());
  std::printf(
      "SQLite probe: fresh db, WAL, synchronous=FULL, one INSERT per transaction, %.1f s, just before\n"
      "each (Q, N)\n",
      o.sqlite_seconds);
  if (o.rate > 0) {
    std::printf(
        "paced (--rate %g): each job runs 0.5-1.5 x agents/rate s with a heartbeat every %g s; leases\n"
        "long-poll (wait_s 30); agents start spread over one job length. cycles/s is then the set rate.\n",
        o.rate, o.heartbeat_s);
  }
  if (o.foreign > 0) {
    std::printf("ahead of the Q jobs, %lld queued jobs of a build no agent offers (--foreign)\n",
                static_cast<long long>(o.foreign));
  }
  std::printf("\n");
  std::printf("%8s | %8s | %15s | %8s | %8s | %12s | %12s | %13s | %13s | %6s | %9s | %s\n", "Q queued", "N agents",
              "queued min-max", "cycles", "cycles/s", "lease p50 ms", "lease p99 ms", "result p50 ms", "result p99 ms",
              "errors", "commits/s", "cycles/s / commits/s");
  std::printf("%s\n", std::string(163, '-').c_str());
  for (auto& r : rows) {
    const auto& p = r.phase;
    const double rate = cycles_per_s(r);
    const std::string range = std::to_string(p.queued_min) + "-" + std::to_string(p.queued_max);
    std::printf("%8lld | %8d | %15s | %8lld | %8.1f | %12.2f | %12.2f | %13.2f | %13.2f | %6lld | %9.0f | %.3f\n",
                static_cast<long long>(r.queued), r.agents, range.c_str(), static_cast<long long>(p.cycles), rate,
                pct(r.phase.lease_ms, 0.5), pct(r.phase.lease_ms, 0.99), pct(r.phase.result_ms, 0.5),
                pct(r.phase.result_ms, 0.99), static_cast<long long>(p.errors), r.probe.per_second,
                r.probe.per_second > 0 ? rate / r.probe.per_second : 0);
  }
  std::printf(
      "\nEach cycle is two durable commits (lease, result): with one writer and no group commit the\n"
      "last column cannot exceed about 0.5. Latencies count requests started inside the window.\n");
  // The same figures as the table, ready to paste.
  std::printf(
      "\n| queued jobs | agents | lease→result cycles/s | lease p50 / p99 ms | SQLite durable commits/s,"
      " same disk | cycles/s ÷ commits/s |\n|---|---|---|---|---|---|\n");
  for (auto& r : rows) {
    std::printf("| %lld | %d | %.0f | %.1f / %.1f | %.0f | %.2f |\n", static_cast<long long>(r.queued), r.agents,
                cycles_per_s(r), pct(r.phase.lease_ms, 0.5), pct(r.phase.lease_ms, 0.99), r.probe.per_second,
                r.probe.per_second > 0 ? cycles_per_s(r) / r.probe.per_second : 0);
  }
  std::printf("\n");
  for (auto& r : rows) {
    auto& p = r.phase;
    std::printf(
        "Q=%lld N=%d: SQLite commit p50 %.2f ms p99 %.2f ms; preload %lld jobs %.2f s; %lld jobs in %d run(s);"
        " queued mean %.0f; enrolment %.2f s; empty leases %lld; refills %d; store operations %lld in %lld commits"
        " (%.1f per commit, %.2f commits per cycle); coordinator exit %d\n",
        static_cast<long long>(r.queued), r.agents, r.probe.p50_ms, r.probe.p99_ms,
        static_cast<long long>(p.preloaded_jobs), p.preload_s, static_cast<long long>(p.jobs_submitted),
        p.runs_submitted, p.queued_mean, p.enrol_s, static_cast<long long>(p.empty_leases), p.refills,
        static_cast<long long>(p.store_operations), static_cast<long long>(p.store_commits),
        p.store_commits > 0 ? static_cast<double>(p.store_operations) / static_cast<double>(p.store_commits) : 0,
        p.cycles > 0 ? static_cast<double>(p.store_commits) / static_cast<double>(p.cycles) : 0, r.coordinator_exit);
    if (!p.heartbeat_ms.empty()) {
      std::printf("  heartbeats: %zu, p50 %.2f ms, p99 %.2f ms; leases: %zu, p99.9 %.2f ms, max %.2f ms\n",
                  p.heartbeat_ms.size(), pct(p.heartbeat_ms, 0.5), pct(p.heartbeat_ms, 0.99), p.lease_ms.size(),
                  pct(p.lease_ms, 0.999), pct(p.lease_ms, 1.0));
    }
    for (const auto& e : p.error_samples) std::printf("  error: %s\n", e.c_str());
  }
  std::fflush(stdout);
}

int run(int argc, char** argv) {
  Options o;
  CLI::App app{
      "coordinator_load: runs N simulated agents (Asio coroutines, one keep-alive connection each) against a\n"
      "real benchfleet-coordinator over loopback; each agent loops lease -> result for a fixed window while\n"
      "about Q jobs stay queued. Prints cycles/s and lease/result latency p50/p99 per (Q, N), next to SQLite's\n"
      "raw durable-commit rate on the same disk. Exits 1 when a phase completed no cycle or saw any protocol\n"
      "error."};
  app.add_option("--queued", o.queued, "queue depths to measure (jobs kept queued), comma separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--agents", o.agents, "agent counts to measure, comma separated")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--seconds", o.seconds, "measurement window per agent count")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--foreign", o.foreign,
                 "jobs of a build no agent offers, queued ahead of the others and never run (a backlog)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--rate", o.rate,
                 "results per second of the whole fleet: each job then runs agents/rate s on average, with\n"
                 "heartbeats, and agents long-poll for leases (latency at a realistic load); 0: no pause")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--heartbeat-s", o.heartbeat_s, "heartbeat period of a running job when --rate is set")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--sqlite-seconds", o.sqlite_seconds, "duration of the SQLite commit probe")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--coordinator-threads", o.coordinator_threads, "the coordinator's --threads")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--store-threads", o.store_threads, "the coordinator's --store-threads (0: its default)")
      ->capture_default_str()
      ->check(CLI::Range(0, 64));
  app.add_option("--client-threads", o.client_threads, "threads driving the simulated agents")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--dir", o.dir, "work directory for the databases (default: a new one under $TMPDIR or /tmp)");
  app.add_option("--coordinator", o.coordinator, "benchfleet-coordinator binary")->capture_default_str();
  app.add_flag("--keep-dir", o.keep_dir, "keep the work directory (databases, coordinator logs)");
  CLI11_PARSE(app, argc, argv);

  raise_fd_limit();
  bool made_dir = false;
  auto work = benchfleet::testing::work_directory(o.dir, "benchfleet-load", made_dir);
  if (!work.ok()) {
    std::cerr << "coordinator_load: " << work.error().describe() << "\n";
    return 2;
  }
  const std::string dir = *work;

  auto catalog = Catalog::load_file(default_catalog_path());
  if (!catalog.ok()) {
    std::cerr << "coordinator_load: " << catalog.error().describe() << "\n";
    return 2;
  }
  std::vector<std::string> models;
  for (const auto& m : catalog->models()) models.push_back(m.id);

  std::vector<Row> rows;
  bool failed = false, aborted = false;
  for (std::int64_t q : o.queued) {
    for (int n : o.agents) {
      if (aborted) break;
      auto row = run_one(o, dir, q, n, models);
      if (!row.ok()) {
        std::cerr << "coordinator_load: " << row.error().message << "\n";
        failed = aborted = true;
        break;
      }
      failed = failed || row->phase.cycles == 0 || row->phase.errors > 0;
      rows.push_back(std::move(*row));
    }
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
