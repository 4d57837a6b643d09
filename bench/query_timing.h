// Timing helpers shared by the query benchmarks (report_queries, history_queries): steps timed in
// process, requests timed over loopback with the server's own mean read from the coordinator's
// /metrics histogram, and the tables they print.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "common/http/client.h"
#include "tests/support/coordinator_child.h"

namespace benchfleet::bench {

struct Timing {
  std::string what;
  std::vector<double> ms;
  std::size_t bytes = 0;
  double server_mean_ms = -1;  // from the coordinator's /metrics; < 0 when not known
};

// What went wrong while timing; a benchmark exits non-zero when anything did.
struct Checks {
  bool failed = false;
  std::vector<std::string> problems;
  void fail(std::string what) {
    failed = true;
    problems.push_back(std::move(what));
  }
};

struct RequestPlan {
  int warmup = 2;     // untimed requests first
  int requests = 20;  // timed ones
  std::string token;  // bearer token for every request (and /metrics)
};

double ms_since(std::chrono::steady_clock::time_point start);
// The q-quantile of `v` (0 when empty).
double quantile(std::vector<double> v, double q);

// Runs `f` `warmup` times untimed, then `n` times timed; `f` returns the bytes (or rows) made.
Timing time_steps(const std::string& what, int warmup, int n, const std::function<std::size_t()>& f);

// GET `target` plan.warmup + plan.requests times; the server's mean comes from /metrics around
// the timed ones (its histogram of `route`, 2xx). A non-200 answer, or `check` (run on the first
// timed answer) returning a reason, fails `checks`.
Timing time_requests(http::Client& client, const std::string& label, const std::string& target,
                     const std::string& route, const RequestPlan& plan, Checks& checks,
                     const std::function<std::string(const http::ClientResponse&)>& check = {});

// Prints `rows` as a table (min, median, p90, mean; and the server mean when `server_column`).
void print_table(const std::string& title, const std::vector<Timing>& rows, bool server_column);

// `dir` when set (created), else a new directory named `prefix`-XXXXXX under /dev/shm (tmpfs:
// a fill's commits are cheap), else under $TMPDIR or /tmp. Throws std::runtime_error when it
// cannot create one.
std::string make_work_dir(const std::string& dir, const std::string& prefix);

// The options both query benchmarks take: how many requests, the synthetic data's seed, where
// the database lives (or an existing one to read) and which coordinator serves it.
struct QueryBenchOptions {
  int requests = 20;
  int warmup = 2;
  std::uint64_t seed = 1;
  std::string dir;  // "": make_work_dir's default
  std::string db;   // an existing database from an earlier --keep-dir run: no fill
  std::string coordinator;
  bool keep_dir = false;
};
// Adds --requests, --warmup, --seed, --dir, --db, --coordinator and --keep-dir to `app`.
void add_query_bench_options(CLI::App& app, QueryBenchOptions& o);

// The coordinator `binary` serving the database `db` (no dashboard, warnings only, a clean
// environment), its port and log files in `dir`, with `operator_token`; errors name `who`.
Result<std::unique_ptr<testing::CoordinatorChild>> start_query_coordinator(const std::string& who,
                                                                           const std::string& binary,
                                                                           const std::string& db,
                                                                           const std::string& dir,
                                                                           const std::string& operator_token);

}  // namespace benchfleet::bench
