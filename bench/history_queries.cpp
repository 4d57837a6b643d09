// history_queries: the scale goal. Fills a database with a year of nightly runs of the
// seeds' study (bench/history_fill.h: 648 cells a night, ~236,000 results, one series per cell)
// through the store's real transactions, with the change detector running after each night,
// then times the history reads in process and through the real benchfleet-coordinator over
// loopback: one series with its ~365 points (goal: <= 20 ms server time), the regressions view
// (goal: <= 100 ms), the series list for a model. Prints figures; the exit code only says
// whether every step worked and every answer had the expected shape.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "bench/history_fill.h"
#include "bench/query_timing.h"
#include "common/catalog.h"
#include "common/clock.h"
#include "common/http/client.h"
#include "coordinator/store/store.h"
#include "tests/support/coordinator_child.h"

namespace {

using namespace benchfleet;
using bench::Checks;
using bench::Timing;
namespace fs = std::filesystem;

constexpr const char* kOperatorToken = "history-bench-operator-token";

struct Options : bench::QueryBenchOptions {
  int nights = 365;
  int models = 12;
  int samples = 50;
  Options() { coordinator = testing::coordinator_binary(); }
};

// The series the timed reads use: the ones with the most points, then the most changes.
struct Picked {
  std::vector<std::int64_t> series;  // a rotation for in-process reads
  std::int64_t longest = 0;          // for the HTTP read
  std::int64_t longest_points = 0;
  std::string model;  // for the filtered list
};

Result<Picked> pick_series(store::Store& store) {
  Picked p;
  BF_ASSIGN_OR_RETURN(const auto page, store.series().list_series({}, std::nullopt, 100'000));
  if (page.items.empty()) return Error::not_found("the database has no series");
  std::vector<store::SeriesInfo> all = page.items;
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.points > b.points; });
  p.longest = all.front().id;
  p.longest_points = all.front().points;
  p.model = all.front().key.model;
  for (std::size_t i = 0; i < all.size() && p.series.size() < 64; i += std::max<std::size_t>(1, all.size() / 64)) {
    p.series.push_back(all[i].id);
  }
  return p;
}

std::vector<Timing> time_in_process(const Options& o, store::Store& store, const Picked& picked) {
  std::vector<Timing> rows;
  std::size_t next = 0;
  rows.push_back(bench::time_steps("store.get_series (one series, all its points)", o.warmup, o.requests, [&] {
    const auto id = picked.series[next++ % picked.series.size()];
    return store.series().get_series(id, std::nullopt, 5000).value().points.size();
  }));
  store::RegressionFilter open;
  open.state = store::RegressionState::kOpen;
  open.direction = rules::ChangeDirection::kRegression;
  rows.push_back(bench::time_steps("store.list_regressions (open, first 100)", o.warmup, o.requests, [&] {
    return store.regressions().list_regressions(open, std::nullopt, 100).value().items.size();
  }));
  rows.push_back(bench::time_steps(
      "store.list_regressions (any state or direction, first 100)", o.warmup, o.requests,
      [&] { return store.regressions().list_regressions({}, std::nullopt, 100).value().items.size(); }));
  store::SeriesFilter by_model;
  by_model.model = picked.model;
  rows.push_back(bench::time_steps("store.list_series (one model, first 500)", o.warmup, o.requests, [&] {
    return store.series().list_series(by_model, std::nullopt, 500).value().items.size();
  }));
  return rows;
}

int run(int argc, char** argv) {
  Options o;
  CLI::App app{
      "history_queries: fills a database with --nights nightly runs of the seeds' study (648 cells a night with\n"
      "--models 12) through the store, the change detector running after each night, then times the series and\n"
      "regressions reads in process and through a real benchfleet-coordinator over loopback. Prints figures."};
  app.add_option("--nights", o.nights, "nightly runs")->capture_default_str()->check(CLI::Range(1, 3660));
  app.add_option("--models", o.models, "seed models in the study (1-12)")
      ->capture_default_str()
      ->check(CLI::Range(1, 12));
  app.add_option("--samples", o.samples, "samples per ok result")->capture_default_str()->check(CLI::Range(5, 100000));
  bench::add_query_bench_options(app, o);
  CLI11_PARSE(app, argc, argv);

  auto catalog = Catalog::load_file(default_catalog_path());
  if (!catalog.ok()) {
    std::cerr << "history_queries: " << catalog.error().describe() << "\n";
    return 2;
  }
  const std::string dir = bench::make_work_dir(o.dir, "benchfleet-history");
  std::string db = o.db;
  Checks checks;
  if (db.empty()) {
    db = dir + "/benchfleet.db";
    bench::HistoryFillOptions fo;
    fo.db = db;
    fo.nights = o.nights;
    fo.models = o.models;
    fo.samples = o.samples;
    fo.seed = o.seed;
    std::cerr << "history_queries: filling " << db << " with " << o.nights << " nights...\n";
    auto filled = bench::fill_history(fo, *catalog, [](int n) {
      if (n % 30 == 0) std::cerr << "  " << n << " nights\n";
    });
    if (!filled.ok()) {
      std::cerr << "history_queries: fill failed: " << filled.error().describe() << "\n";
      return 1;
    }
    const auto& f = *filled;
    std::printf(
        "filled %s: %lld runs, %lld results, %lld series in %.1f s (%.2f ms per lease + result); change detector"
        " %.1f s in all, %.3f ms per series examined (%lld); %lld series changed level, detector confirmed %lld"
        " regressions and %lld improvements: %lld at the injected night and direction, %lld elsewhere (false"
        " alarms), %lld injected steps not found\n",
        db.c_str(), static_cast<long long>(f.runs), static_cast<long long>(f.results), static_cast<long long>(f.series),
        f.fill_seconds, f.fill_seconds * 1000 / std::max<double>(1, f.results), f.detect_seconds,
        f.detect_seconds * 1000 / std::max<double>(1, f.detect_series_examined),
        static_cast<long long>(f.detect_series_examined), static_cast<long long>(f.injected_steps),
        static_cast<long long>(f.regressions), static_cast<long long>(f.improvements),
        static_cast<long long>(f.changes_at_step), static_cast<long long>(f.changes_elsewhere),
        static_cast<long long>(f.steps_missed));
    if (f.regressions == 0 && o.nights >= 100) checks.fail("the detector confirmed no regression");
  }
  std::error_code ec;
  std::printf("database %s: %.1f MiB\n", db.c_str(), static_cast<double>(fs::file_size(db, ec)) / (1 << 20));

  Picked picked;
  {
    SystemClock clock;
    store::StoreOptions so;
    so.path = db;
    auto opened = store::Store::open(so, clock);
    if (!opened.ok()) {
      std::cerr << "history_queries: open " << db << ": " << opened.error().message << "\n";
      return 1;
    }
    auto p = pick_series(**opened);
    if (!p.ok()) {
      std::cerr << "history_queries: " << p.error().message << "\n";
      return 1;
    }
    picked = *p;
    std::cerr << "history_queries: timing the store's reads in process...\n";
    bench::print_table("In process (the coordinator's store reads, no HTTP):", time_in_process(o, **opened, picked),
                       false);
  }

  auto child = bench::start_query_coordinator("history_queries", o.coordinator, db, dir, kOperatorToken);
  if (!child.ok()) {
    std::cerr << "history_queries: " << child.error().message << "\n";
    return 1;
  }
  http::Client client("http://127.0.0.1:" + std::to_string((*child)->port()));
  client.set_response_body_limit(std::size_t{256} << 20);
  const bench::RequestPlan plan{o.warmup, o.requests, kOperatorToken};
  const auto has_rows = [](const char* key, std::int64_t at_least) {
    return [key, at_least](const http::ClientResponse& res) -> std::string {
      auto body = res.json();
      if (!body.ok() || !body->contains(key)) return std::string("no ") + key;
      const auto n = static_cast<std::int64_t>((*body)[key].size());
      return n >= at_least ? std::string()
                           : std::string(key) + ": " + std::to_string(n) + " rows, expected " +
                                 std::to_string(at_least) + " or more";
    };
  };

  const std::string series = "/api/v1/series/" + std::to_string(picked.longest);
  std::vector<Timing> http_rows;
  http_rows.push_back(
      bench::time_requests(client, "GET " + series + " (" + std::to_string(picked.longest_points) + " points)", series,
                           "series.get", plan, checks, has_rows("points", picked.longest_points)));
  http_rows.push_back(bench::time_requests(client, "GET /api/v1/regressions (open)", "/api/v1/regressions",
                                           "regressions.list", plan, checks, has_rows("regressions", o.nights >= 100)));
  http_rows.push_back(bench::time_requests(client, "GET /api/v1/regressions?state=all&direction=all",
                                           "/api/v1/regressions?state=all&direction=all", "regressions.list", plan,
                                           checks, has_rows("regressions", o.nights >= 100)));
  http_rows.push_back(bench::time_requests(client, "GET /api/v1/series?model=" + picked.model + "&limit=500",
                                           "/api/v1/series?model=" + picked.model + "&limit=500", "series.list", plan,
                                           checks, has_rows("series", 1)));
  // The schedule's builds over time: each run's report built and summarised (30 and 200 runs).
  for (const int runs : {30, 200}) {
    const std::string summary = "/api/v1/schedules/1/summary?limit=" + std::to_string(runs);
    http_rows.push_back(bench::time_requests(client, "GET " + summary, summary, "schedules.summary", plan, checks,
                                             has_rows("runs", std::min<std::int64_t>(runs, o.nights))));
  }
  bench::print_table("Over loopback (client-side per request; server mean from its /metrics histogram):", http_rows,
                     true);

  const int exit_status = testing::exit_code((*child)->stop().status);
  if (exit_status != 0) {
    checks.fail("the coordinator exited with " + std::to_string(exit_status) + "; log:\n" +
                testing::file_tail(dir + "/coordinator.log", 2000));
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
    std::cerr << "history_queries: fatal: " << e.what() << "\n";
    return 1;
  }
}
