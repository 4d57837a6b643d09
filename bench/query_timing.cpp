#include "bench/query_timing.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "common/stats.h"

namespace benchfleet::bench {
namespace {

using SteadyClock = std::chrono::steady_clock;

// sum and count of the coordinator's latency histogram for `route`, 2xx answers.
std::pair<double, double> route_totals(http::Client& client, const std::string& route, const std::string& token) {
  auto res = client.get("/metrics", token);
  if (!res.ok() || res->status != 200) return {0, 0};
  const std::string labels = "{route=\"" + route + "\",code=\"2xx\"} ";
  double sum = 0, count = 0;
  std::istringstream lines(res->body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("benchfleet_http_request_duration_seconds_sum" + labels, 0) == 0) {
      sum = std::stod(line.substr(line.rfind(' ') + 1));
    } else if (line.rfind("benchfleet_http_request_duration_seconds_count" + labels, 0) == 0) {
      count = std::stod(line.substr(line.rfind(' ') + 1));
    }
  }
  return {sum, count};
}

}  // namespace

double ms_since(SteadyClock::time_point start) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - start).count();
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return percentile_sorted(v, q);
}

Timing time_steps(const std::string& what, int warmup, int n, const std::function<std::size_t()>& f) {
  Timing t{what, {}, 0, -1};
  for (int i = 0; i < warmup; ++i) f();
  for (int i = 0; i < n; ++i) {
    const auto start = SteadyClock::now();
    t.bytes = f();
    t.ms.push_back(ms_since(start));
  }
  return t;
}

Timing time_requests(http::Client& client, const std::string& label, const std::string& target,
                     const std::string& route, const RequestPlan& plan, Checks& checks,
                     const std::function<std::string(const http::ClientResponse&)>& check) {
  Timing t{label, {}, 0, -1};
  for (int i = 0; i < plan.warmup; ++i) (void)client.get(target, plan.token);
  const auto before = route_totals(client, route, plan.token);
  for (int i = 0; i < plan.requests; ++i) {
    const auto start = SteadyClock::now();
    auto res = client.get(target, plan.token, std::chrono::seconds(120));
    t.ms.push_back(ms_since(start));
    if (!res.ok() || res->status != 200) {
      std::string why = target;
      if (res.ok()) {
        why += ": HTTP ";
        why += std::to_string(res->status);
      } else {
        why += ": ";
        why += res.error().describe();
      }
      checks.fail(std::move(why));
      return t;
    }
    t.bytes = res->body.size();
    if (check && i == 0) {
      if (std::string why = check(*res); !why.empty()) checks.fail(target + ": " + why);
    }
  }
  const auto after = route_totals(client, route, plan.token);
  if (after.second - before.second >= plan.requests) {
    t.server_mean_ms = (after.first - before.first) / (after.second - before.second) * 1000;
  }
  return t;
}

void print_table(const std::string& title, const std::vector<Timing>& rows, bool server_column) {
  std::printf("\n%s\n", title.c_str());
  std::printf("%-58s | %10s | %8s | %9s | %8s | %8s%s\n", "", "bytes", "min ms", "median ms", "p90 ms", "mean ms",
              server_column ? " | server mean ms" : "");
  std::printf("%s\n", std::string(server_column ? 130 : 112, '-').c_str());
  for (const auto& r : rows) {
    std::printf("%-58s | %10zu | %8.2f | %9.2f | %8.2f | %8.2f", r.what.c_str(), r.bytes, quantile(r.ms, 0),
                quantile(r.ms, 0.5), quantile(r.ms, 0.9), mean(r.ms));
    if (server_column) {
      if (r.server_mean_ms >= 0) {
        std::printf(" | %15.2f", r.server_mean_ms);
      } else {
        std::printf(" | %15s", "-");
      }
    }
    std::printf("\n");
  }
  std::fflush(stdout);
}

std::string make_work_dir(const std::string& dir, const std::string& prefix) {
  if (!dir.empty()) {
    std::filesystem::create_directories(dir);
    return dir;
  }
  std::string base = "/dev/shm";
  if (::access(base.c_str(), W_OK) != 0) {
    const char* tmp = std::getenv("TMPDIR");
    base = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  std::string pattern = base + "/" + prefix + "-XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot create a directory from " + pattern);
  return pattern;
}

void add_query_bench_options(CLI::App& app, QueryBenchOptions& o) {
  app.add_option("--requests", o.requests, "timed requests per read")
      ->capture_default_str()
      ->check(CLI::Range(1, 10000));
  app.add_option("--warmup", o.warmup, "untimed requests before them")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  app.add_option("--seed", o.seed, "random seed of the synthetic results")->capture_default_str();
  app.add_option("--dir", o.dir, "work directory (default: a new one under /dev/shm, else $TMPDIR or /tmp)");
  app.add_option("--db", o.db, "read this existing database (kept from an earlier run) instead of filling one");
  app.add_option("--coordinator", o.coordinator, "benchfleet-coordinator binary")->capture_default_str();
  app.add_flag("--keep-dir", o.keep_dir, "keep the work directory (database, coordinator log)");
}

Result<std::unique_ptr<testing::CoordinatorChild>> start_query_coordinator(const std::string& who,
                                                                           const std::string& binary,
                                                                           const std::string& db,
                                                                           const std::string& dir,
                                                                           const std::string& operator_token) {
  testing::LaunchOptions launch;
  launch.binary = binary;
  launch.flags = {{"--db", db},
                  {"--operator-token", operator_token},
                  {"--enrollment-token", who + "-bench-enrol"},
                  {"--log-level", "warn"},
                  {"--web-root", ""}};
  launch.port_file = dir + "/coordinator.port";
  launch.log_file = dir + "/coordinator.log";
  launch.clean_environment = true;
  launch.start_timeout = std::chrono::seconds(60);
  std::cerr << who << ": starting " << binary << "...\n";
  return testing::CoordinatorChild::start(launch);
}

}  // namespace benchfleet::bench
