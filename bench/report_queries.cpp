// report_queries: how long the dashboard's reads of a big run take on a realistic database.
// Fills a database with about 100,000 results across runs (bench/report_fill.h: the seeds' study
// shape, one run of ~5,000 results), times the server-side steps in process (store query,
// report building, rendering), then starts the real benchfleet-coordinator on it and times over
// loopback GET /runs/{id}/report (json, md, csv; mean and median), the jobs listing and
// /results?samples=false for the big run: client-side min/median/p90, and the server's own
// mean from its /metrics histogram. Prints figures; the exit code only says whether every
// request answered 200 with the expected number of rows.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/query_timing.h"
#include "bench/report_fill.h"
#include "common/catalog.h"
#include "common/http/client.h"
#include "common/stats.h"
#include "coordinator/report/render.h"
#include "coordinator/rules/eta.h"
#include "coordinator/rules/report.h"
#include "coordinator/store/store.h"
#include "tests/support/coordinator_child.h"

namespace {

using namespace benchfleet;
using benchfleet::testing::file_tail;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using bench::Checks;
using bench::ms_since;
using bench::print_table;
using bench::time_steps;
using bench::Timing;

constexpr const char* kOperatorToken = "report-bench-operator-token";

struct Options : bench::QueryBenchOptions {
  std::int64_t results = 100'000;
  int gpus = 6;
  int repetitions = 3;
  std::int64_t run_id = 1;  // with --db: the run to read
  Options() { coordinator = testing::coordinator_binary(); }
};

// The server's steps for the big run, in process on the same database.
std::vector<Timing> time_in_process(const Options& o, const std::string& db, const Catalog& catalog,
                                    std::int64_t run_id, Checks& checks) {
  SystemClock clock;
  store::StoreOptions so;
  so.path = db;
  auto opened = store::Store::open(so, clock);
  if (!opened.ok()) {
    checks.fail("open " + db + ": " + opened.error().message);
    return {};
  }
  store::Store& store = **opened;
  auto run = store.runs().get_run(run_id);
  if (!run.ok()) {
    checks.fail(run.error().message);
    return {};
  }
  rules::ReportInput input;
  input.run_id = run->id;
  input.run_name = run->name;
  input.matrix = run->spec;
  for (const auto& model : catalog.models()) input.labels.push_back({model.id, model.display_name()});
  input.cells = store.results().report_cells(run_id).value();
  const rules::Report built = rules::build_report(input);

  std::vector<Timing> rows;
  const int n = o.requests;
  rows.push_back(time_steps("store.report_cells (one row per job, no samples)", o.warmup, n,
                            [&] { return store.results().report_cells(run_id).value().size(); }));
  for (rules::Stat stat : {rules::Stat::kMean, rules::Stat::kMedian}) {
    rules::ReportInput in = input;
    in.stat = stat;
    rows.push_back(
        time_steps(std::string("rules::build_report, stat=") + (stat == rules::Stat::kMean ? "mean" : "median"),
                   o.warmup, n, [&] { return rules::build_report(in).tables.size(); }));
  }
  rows.push_back(time_steps("report::render_json", o.warmup, n, [&] { return report::render_json(built).size(); }));
  rows.push_back(
      time_steps("report::render_markdown", o.warmup, n, [&] { return report::render_markdown(built).size(); }));
  rows.push_back(time_steps("report::render_csv", o.warmup, n, [&] { return report::render_csv(built).size(); }));
  // What GET /runs/{id} adds for an active run: its jobs' times by (build, runtime, mode) and the
  // estimate from them (the big run is over, so the same queries read every one of its jobs).
  rows.push_back(time_steps("store.mode_times + rules::seconds_left (run ETA)", o.warmup, n, [&] {
    const auto times = store.runs().mode_times(run_id).value();
    return times.size() + (rules::seconds_left(times) ? 1 : 0);
  }));
  rows.push_back(time_steps("store.list_jobs (limit 10000)", o.warmup, n,
                            [&] { return store.runs().list_jobs(run_id, std::nullopt, 10000).value().items.size(); }));
  rows.push_back(time_steps("store.list_results (limit 1000, first page)", o.warmup, n, [&] {
    return store.results().list_results(run_id, {}, std::nullopt, 1000).value().items.size();
  }));
  return rows;
}

int run(int argc, char** argv) {
  Options o;
  CLI::App app{
      "report_queries: fills a database with about --results results (one big run of the seeds' study shape),\n"
      "then times the big run's report (json, md, csv x mean, median), jobs listing and results listing,\n"
      "in process and through a real benchfleet-coordinator over loopback. Prints figures."};
  app.add_option("--results", o.results, "results to store across all runs")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--gpus", o.gpus, "GPU classes in each run (1-6)")->capture_default_str()->check(CLI::Range(1, 6));
  app.add_option("--repetitions", o.repetitions, "repetitions per cell")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  bench::add_query_bench_options(app, o);
  app.add_option("--run", o.run_id, "with --db: the run to time")->capture_default_str()->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  auto catalog = Catalog::load_file(default_catalog_path());
  if (!catalog.ok()) {
    std::cerr << "report_queries: " << catalog.error().describe() << "\n";
    return 2;
  }
  const std::string dir = bench::make_work_dir(o.dir, "benchfleet-report");
  std::string db = o.db;
  std::int64_t run_id = o.run_id;
  Checks checks;

  if (db.empty()) {
    db = dir + "/benchfleet.db";
    bench::FillOptions fo;
    fo.db = db;
    fo.total_results = o.results;
    fo.gpu_classes = o.gpus;
    fo.repetitions = o.repetitions;
    fo.seed = o.seed;
    SystemClock clock;
    std::cerr << "report_queries: filling " << db << " with about " << o.results << " results...\n";
    auto filled =
        bench::fill_database(fo, *catalog, clock, [](std::int64_t n) { std::cerr << "  " << n << " results\n"; });
    if (!filled.ok()) {
      std::cerr << "report_queries: fill failed: " << filled.error().describe() << "\n";
      return 1;
    }
    const auto& f = *filled;
    run_id = f.big_run_id;
    std::printf(
        "filled %s in %.1f s: %lld runs, %lld results (ok %lld, oom %lld, oom_implied %lld, error+timeout"
        " %lld); big run %lld: %lld jobs\n",
        db.c_str(), f.seconds, static_cast<long long>(f.runs), static_cast<long long>(f.results),
        static_cast<long long>(f.ok), static_cast<long long>(f.oom), static_cast<long long>(f.oom_implied),
        static_cast<long long>(f.errors), static_cast<long long>(f.big_run_id), static_cast<long long>(f.big_run_jobs));
  }
  std::error_code ec;
  std::printf("database %s: %.1f MiB\n", db.c_str(), static_cast<double>(fs::file_size(db, ec)) / (1 << 20));

  std::cerr << "report_queries: timing the server's steps in process...\n";
  const auto steps = time_in_process(o, db, *catalog, run_id, checks);
  std::string title = "In process (the coordinator's steps for run ";
  title += std::to_string(run_id);
  title += ", no HTTP):";
  print_table(title, steps, false);

  auto child = bench::start_query_coordinator("report_queries", o.coordinator, db, dir, kOperatorToken);
  if (!child.ok()) {
    std::cerr << "report_queries: " << child.error().message << "\n";
    return 1;
  }
  http::Client client("http://127.0.0.1:" + std::to_string((*child)->port()));
  client.set_response_body_limit(std::size_t{512} << 20);

  const std::string run = "/api/v1/runs/" + std::to_string(run_id);
  std::int64_t job_count = 0;
  if (auto info = client.get(run, kOperatorToken); info.ok() && info->status == 200) {
    job_count = info->json().value()["job_count"].get<std::int64_t>();
  } else {
    checks.fail("GET " + run + " failed");
  }
  const auto expect_rows = [&](const char* key, std::int64_t n) {
    return [key, n](const http::ClientResponse& res) -> std::string {
      auto body = res.json();
      if (!body.ok()) return "not JSON";
      const auto got = static_cast<std::int64_t>((*body)[key].size());
      return got == n ? std::string()
                      : std::string(key) + ": " + std::to_string(got) + " rows, expected " + std::to_string(n);
    };
  };
  const auto has_tables = [](const http::ClientResponse& res) -> std::string {
    auto body = res.json();
    return body.ok() && !(*body)["tables"].empty() ? std::string() : std::string("no tables");
  };

  const bench::RequestPlan plan{o.warmup, o.requests, kOperatorToken};
  std::cerr << "report_queries: timing " << o.requests << " requests per endpoint over loopback...\n";
  std::vector<Timing> http_rows;
  for (const char* stat : {"mean", "median"}) {
    for (const char* format : {"json", "md", "csv"}) {
      const std::string q = std::string("?format=") + format + "&stat=" + stat;
      http_rows.push_back(bench::time_requests(
          client, "GET " + run + "/report" + q, run + "/report" + q, "runs.report", plan, checks,
          std::string(format) == "json" ? has_tables : std::function<std::string(const http::ClientResponse&)>{}));
    }
  }
  http_rows.push_back(bench::time_requests(client, "GET " + run + "/report?format=json&exclude_flagged=true",
                                           run + "/report?format=json&exclude_flagged=true", "runs.report", plan,
                                           checks, has_tables));
  // A page of jobs holds at most 1,000 whatever is asked (runs_handlers.cpp list_jobs).
  http_rows.push_back(bench::time_requests(client, "GET " + run + "/jobs?limit=10000 (served: 1000)",
                                           run + "/jobs?limit=10000", "runs.jobs", plan, checks,
                                           expect_rows("jobs", std::min<std::int64_t>(job_count, 1000))));
  http_rows.push_back(bench::time_requests(client, "GET " + run + "/jobs (first page of 1000)", run + "/jobs",
                                           "runs.jobs", plan, checks,
                                           expect_rows("jobs", std::min<std::int64_t>(job_count, 1000))));
  http_rows.push_back(bench::time_requests(client, "GET " + run + "/results?samples=false&limit=1000",
                                           run + "/results?samples=false&limit=1000", "runs.results", plan, checks,
                                           expect_rows("results", std::min<std::int64_t>(job_count, 1000))));
  // With samples a page holds at most 10 results.
  http_rows.push_back(bench::time_requests(client, "GET " + run + "/results?samples=true (page of 10)",
                                           run + "/results?samples=true&limit=10", "runs.results", plan, checks,
                                           expect_rows("results", std::min<std::int64_t>(job_count, 10))));
  http_rows.push_back(bench::time_requests(client, "GET " + run, run, "runs.get", plan, checks));

  // The whole result listing without samples, page by page, as one operation.
  Timing walk{"all of " + run + "/results?samples=false, 1000 per page", {}, 0, -1};
  for (int i = 0; i < o.requests; ++i) {
    std::size_t rows = 0, bytes = 0;
    std::string cursor;
    const auto start = Clock::now();
    for (int page = 0; page < 1000; ++page) {
      auto res = client.get(run + "/results?samples=false&limit=1000" + (cursor.empty() ? "" : "&cursor=" + cursor),
                            kOperatorToken, std::chrono::seconds(120));
      if (!res.ok() || res->status != 200) {
        checks.fail("results walk failed");
        break;
      }
      const auto body = res->json().value();
      rows += body["results"].size();
      bytes += res->body.size();
      if (body["next_cursor"].is_null()) break;
      cursor = body["next_cursor"].get<std::string>();
    }
    walk.ms.push_back(ms_since(start));
    walk.bytes = bytes;
    if (static_cast<std::int64_t>(rows) < job_count) checks.fail("the results walk saw fewer rows than jobs");
  }
  http_rows.push_back(walk);
  print_table("Over loopback (client-side per request; server mean from its /metrics histogram):", http_rows, true);

  const int exit_status = testing::exit_code((*child)->stop().status);
  if (exit_status != 0) {
    std::string why = "the coordinator exited with ";
    why += std::to_string(exit_status);
    why += "; log:\n";
    why += file_tail(dir + "/coordinator.log", 2000);
    checks.fail(std::move(why));
  }
  for (const auto& p : checks.problems) std::printf("problem: %s\n", p.c_str());
  std::printf("status=%s\n", checks.failed ? "FAILED" : "ok");
  if (o.db.empty() && o.dir.empty() && !o.keep_dir && !checks.failed) {
    fs::remove_all(dir, ec);
  } else {
    std::printf("work dir kept: %s\n", dir.c_str());
  }
  return checks.failed ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "report_queries: fatal: " << e.what() << "\n";
    return 1;
  }
}
