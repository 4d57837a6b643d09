// big_results: the "a public read blocks the store" reproduction, timed. One agent posts
// R results of N samples each (default 10 x 1,000,000, the most a result may carry) to a real
// benchfleet-coordinator; then the public listings of that run are read while a second agent
// heartbeats in a loop, and each read's time is printed next to the heartbeats' latencies during
// it. Before the fix, samples lived in the results row and every listing parsed them under the
// store lock: GET .../results?limit=10 answered 40 MB in 4.4 s and a heartbeat meanwhile took
// 2.4 s. Now listings leave samples out unless asked (samples=true, at most 10 a page) and read
// them outside the lock. The exit code only says whether every request was answered as expected.
//
// Then the coordinator's RSS is printed after each of --rss-reads reads of every result's samples
// (pages bounded in bytes, next_cursor followed) and after four such reads at once; and a submit
// of --submit-jobs jobs is timed with the heartbeats' latencies during it (stored in chunks).
//
//   big_results [--results 10] [--samples 1000000] [--reads 3] [--rss-reads 20] [--submit-jobs 100000]
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <future>
#include <iostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/codecs.h"
#include "common/http/client.h"
#include "common/stats.h"
#include "tests/support/coordinator_child.h"
#include "tests/support/process_memory.h"

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr const char* kOperatorToken = "big-results-operator-token";
constexpr const char* kEnrollmentToken = "big-results-enrollment-token";

struct Options {
  int results = 10;
  int samples = 1'000'000;
  int reads = 3;
  int rss_reads = 20;
  int submit_jobs = 100'000;
  std::string coordinator = benchfleet::testing::coordinator_binary();
};

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Enrols an agent with one a100 slot; its (id, token), or id 0 on failure.
std::pair<std::int64_t, std::string> enrol(benchfleet::http::Client& client, const std::string& name) {
  const nlohmann::json descriptor = {
      {"name", name},
      {"hostname", name + ".test"},
      {"version", "big-results"},
      {"slots", {{{"id", "gpu0"}, {"gpu_class", "a100"}}}},
      {"torch_builds",
       {{{"name", "stable"}, {"version", "2.0.0"}, {"runtimes", {{{"runtime", "libtorch"}, {"modes", {"eager"}}}}}}}}};
  auto res = client.post_json("/api/v1/agents/enroll", descriptor, kEnrollmentToken);
  if (!res.ok() || res->status != 201) return {0, ""};
  auto body = res->json();
  if (!body.ok()) return {0, ""};
  return {body->at("agent_id").get<std::int64_t>(), body->at("agent_token").get<std::string>()};
}

// An "ok" result of `n` samples with the statistics the coordinator recomputes on ingest.
nlohmann::json big_result(int n, std::mt19937_64& rng) {
  std::lognormal_distribution<double> latency(std::log(12.0), 0.05);
  std::vector<double> samples(static_cast<std::size_t>(n));
  for (double& s : samples) s = latency(rng);
  return {{"status", "ok"},
          {"stats", benchfleet::compute_statistics(samples, 42, /*resamples=*/0)},
          {"samples_ms", samples},
          {"first_call_ms", 250.0},
          {"stop_reason", "max_iterations"},
          {"environment", {{"torch", "2.0.0+bench"}}},
          {"telemetry", nlohmann::json::object()}};
}

struct Percentiles {
  double p50 = 0, p99 = 0, max = 0;
  std::size_t n = 0;
};

Percentiles summarise(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[std::min(v.size() - 1, v.size() * 99 / 100)], v.back(), v.size()};
}

// Every result of the run with its samples, following next_cursor; the samples read, or -1.
long long read_all_samples(benchfleet::http::Client& client, const std::string& run_url) {
  long long samples = 0;
  std::string cursor;
  for (int page = 0; page < 1000; ++page) {
    auto res = client.get(run_url + "/results?samples=true&limit=10" + (cursor.empty() ? "" : "&cursor=" + cursor), {},
                          std::chrono::seconds(300));
    if (!res.ok() || res->status != 200) return -1;
    auto body = res->json();
    if (!body.ok()) return -1;
    for (const auto& r : body->at("results")) {
      if (!r.contains("samples_url")) {
        samples += static_cast<long long>(r.at("result").at("samples_ms").size());
        continue;
      }
      // More than a page holds: the result's own read streams them.
      auto whole = client.get(r.at("samples_url").get<std::string>(), {}, std::chrono::seconds(300));
      if (!whole.ok() || whole->status != 200) return -1;
      auto parsed = whole->json();
      if (!parsed.ok()) return -1;
      samples += static_cast<long long>(parsed->at("result").at("samples_ms").size());
    }
    if (body->at("next_cursor").is_null()) return samples;
    cursor = body->at("next_cursor").get<std::string>();
  }
  return -1;
}

// A second agent heartbeating in a loop on its own connection (its own thread) from construction
// until stop(), recording each heartbeat's latency: what a read or a post costs the agents.
class HeartbeatLoop {
 public:
  HeartbeatLoop(std::string url, std::int64_t agent_id, std::string token)
      : thread_([this, url = std::move(url), agent_id, token = std::move(token)] { loop(url, agent_id, token); }) {}
  ~HeartbeatLoop() { stop(); }
  HeartbeatLoop(const HeartbeatLoop&) = delete;
  HeartbeatLoop& operator=(const HeartbeatLoop&) = delete;

  // Ends the loop; the latencies (ms) of the heartbeats it sent.
  std::vector<double> stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    return latencies_;
  }
  // Whether a heartbeat failed (transport error or a status other than 200).
  bool failed() const { return failed_; }

 private:
  void loop(const std::string& url, std::int64_t agent_id, const std::string& token) {
    benchfleet::http::Client client(url);
    const std::string target = "/api/v1/agents/" + std::to_string(agent_id) + "/heartbeat";
    while (!stop_) {
      const auto start = Clock::now();
      auto res = client.post_json(target, {{"leases", nlohmann::json::array()}, {"draining", false}}, token);
      const double took = ms_since(start);
      if (!res.ok() || res->status != 200) {
        std::cerr << "heartbeat: " << (res.ok() ? std::to_string(res->status) : res.error().describe()) << "\n";
        failed_ = true;
        return;
      }
      latencies_.push_back(took);
    }
  }

  std::atomic<bool> stop_{false};
  std::atomic<bool> failed_{false};
  std::vector<double> latencies_;  // written by the thread only until stop() joins it
  std::thread thread_;
};

int run(const Options& o) {
  const fs::path dir = fs::temp_directory_path() / ("big_results." + std::to_string(::getpid()));
  auto child =
      benchfleet::testing::start_bench_coordinator(dir.string(), o.coordinator, kOperatorToken, kEnrollmentToken);
  if (!child.ok()) {
    std::cerr << child.error().describe() << "\n";
    return 1;
  }
  const std::string url = "http://127.0.0.1:" + std::to_string((*child)->port());
  benchfleet::http::Client client(url);
  client.set_response_body_limit(std::size_t{1} << 30);
  bool failed = false;
  auto check = [&](const auto& res, unsigned want, const std::string& what) {
    if (res.ok() && res->status == want) return true;
    std::cerr << what << ": "
              << (res.ok() ? std::to_string(res->status) + " " + res->body.substr(0, 300) : res.error().describe())
              << "\n";
    failed = true;
    return false;
  };

  std::vector<int> batches;
  for (int i = 1; i <= o.results; ++i) batches.push_back(i);
  const nlohmann::json matrix = {{"name", "big-results"},
                                 {"models", {"microsoft/resnet-50"}},
                                 {"batch_sizes", batches},
                                 {"modes", {"eager"}},
                                 {"torch_builds", {"stable"}},
                                 {"gpus", {"a100"}},
                                 {"runtimes", {"libtorch"}},
                                 // what the results claim: max_iterations reached with that many samples
                                 {"measurement", {{"min_iterations", 1}, {"max_iterations", o.samples}}}};
  auto created = client.post_json("/api/v1/runs", matrix, kOperatorToken);
  if (!check(created, 201, "POST /api/v1/runs")) return 1;
  const std::string run_url = "/api/v1/runs/" + std::to_string(created->json()->at("id").get<std::int64_t>());

  auto [poster_id, poster_token] = enrol(client, "poster");
  auto [beater_id, beater_token] = enrol(client, "beater");
  if (poster_id == 0 || beater_id == 0) {
    std::cerr << "enrolment failed\n";
    return 1;
  }

  // Posting: lease each job and post its big result, timing the post (ingest: decode, checks
  // with the statistics recomputed, store).
  std::mt19937_64 rng(7);
  std::vector<double> post_ms;
  HeartbeatLoop post_beater(url, beater_id, beater_token);
  std::size_t body_bytes = 0;
  for (int i = 0; i < o.results; ++i) {
    auto lease = client.post_json("/api/v1/agents/" + std::to_string(poster_id) + "/lease",
                                  {{"slot", "gpu0"}, {"wait_s", 1}}, poster_token);
    if (!check(lease, 200, "lease")) return 1;
    const nlohmann::json job = lease->json()->at("job");
    if (job.is_null()) {
      std::cerr << "lease " << i << ": no job\n";
      return 1;
    }
    const nlohmann::json body = {
        {"lease_id", job.at("lease_id")}, {"attempt", job.at("attempt")}, {"result", big_result(o.samples, rng)}};
    const std::string text = body.dump();
    body_bytes = text.size();
    const auto start = Clock::now();
    auto posted = client.request(boost::beast::http::verb::post,
                                 "/api/v1/jobs/" + std::to_string(job.at("id").get<std::int64_t>()) + "/result", text,
                                 {{"Content-Type", "application/json"}, {"Authorization", "Bearer " + poster_token}},
                                 std::chrono::seconds(120));
    post_ms.push_back(ms_since(start));
    if (!check(posted, 201, "POST result")) return 1;
  }

  const std::vector<double> post_heartbeats = post_beater.stop();
  if (post_beater.failed()) failed = true;

  // Reads, each while the second agent heartbeats in a loop on its own connection.
  struct Read {
    std::string target;
    bool needs_samples;
  };
  const std::vector<Read> reads = {
      {run_url + "/results?limit=10", false},
      {run_url + "/results?limit=1000", false},
      {run_url + "/results?limit=10&samples=true", true},
      {run_url + "/report?format=json", false},
  };
  std::printf("big_results: %d results x %d samples (a result body of %.1f MB), coordinator %s\n", o.results, o.samples,
              body_bytes / 1e6, o.coordinator.c_str());
  const auto posts = summarise(post_ms);
  const auto post_beats = summarise(post_heartbeats);
  std::printf(
      "  POST result: p50 %.0f ms, max %.0f ms (%zu posts); heartbeats meanwhile p50 %.1f ms, max %.1f ms (%zu)\n",
      posts.p50, posts.max, posts.n, post_beats.p50, post_beats.max, post_beats.n);
  std::printf("  %-48s %12s %10s %24s\n", "read (public GET)", "answer", "time", "heartbeat p50 / max");
  for (const Read& read : reads) {
    HeartbeatLoop beater(url, beater_id, beater_token);
    std::vector<double> read_ms;
    std::size_t answer_bytes = 0;
    for (int r = 0; r < o.reads; ++r) {
      const auto start = Clock::now();
      auto res = client.get(read.target, {}, std::chrono::seconds(300));
      read_ms.push_back(ms_since(start));
      if (!check(res, 200, "GET " + read.target)) break;
      answer_bytes = res->body.size();
      if (read.needs_samples) {
        auto body = res->json();
        const bool has = body.ok() && !body->at("results").empty() &&
                         (body->at("results")[0].at("result").contains("samples_ms") ||
                          body->at("results")[0].contains("samples_url"));
        if (!has) {
          std::cerr << "GET " << read.target << ": no samples in the answer\n";
          failed = true;
        }
      }
    }
    const auto took = summarise(read_ms);
    const auto hb = summarise(beater.stop());
    if (beater.failed()) failed = true;
    char answer[32], time[32], heartbeat[48];
    std::snprintf(answer, sizeof answer, "%.1f kB", answer_bytes / 1e3);
    std::snprintf(time, sizeof time, "%.0f ms", took.p50);
    std::snprintf(heartbeat, sizeof heartbeat, "%.1f / %.1f ms (%zu)", hb.p50, hb.max, hb.n);
    std::printf("  %-48s %12s %10s %24s\n", read.target.c_str(), answer, time, heartbeat);
  }

  // Memory: every result's samples read again and again (each read follows next_cursor through
  // the pages), then four such reads at once; the coordinator's RSS after each.
  if (o.rss_reads > 0) {
    const pid_t pid = (*child)->pid();
    const long long want = static_cast<long long>(o.results) * o.samples;
    std::vector<double> curve{benchfleet::testing::resident_mib(pid)};
    for (int r = 0; r < o.rss_reads; ++r) {
      if (read_all_samples(client, run_url) != want) {
        std::cerr << "reading every result's samples failed\n";
        failed = true;
        break;
      }
      curve.push_back(benchfleet::testing::resident_mib(pid));
    }
    std::vector<std::future<long long>> readers;
    for (int r = 0; r < 4; ++r) {
      readers.push_back(std::async(std::launch::async, [&url, &run_url] {
        benchfleet::http::Client own(url);
        own.set_response_body_limit(std::size_t{1} << 30);
        return read_all_samples(own, run_url);
      }));
    }
    for (auto& reader : readers) {
      if (reader.get() != want) failed = true;
    }
    curve.push_back(benchfleet::testing::resident_mib(pid));
    std::printf("  coordinator RSS (MiB) before, after each of %d reads of all %lld samples, after 4 at once:",
                o.rss_reads, want);
    for (double v : curve) std::printf(" %.0f", v);
    std::printf("\n");
  }

  // A big submit while the second agent heartbeats: its jobs are stored in chunks, so the
  // heartbeats wait for one chunk at most, not for the whole submit.
  if (o.submit_jobs > 0) {
    const int batches_n = std::min(1000, o.submit_jobs);
    std::vector<int> sizes;
    for (int b = 1; b <= batches_n; ++b) sizes.push_back(b);
    const nlohmann::json big = {{"name", "big-submit"},       {"models", {"microsoft/resnet-50"}},
                                {"batch_sizes", sizes},       {"modes", {"eager"}},
                                {"torch_builds", {"stable"}}, {"gpus", {"a100"}},
                                {"runtimes", {"libtorch"}},   {"repetitions", std::max(1, o.submit_jobs / batches_n)}};
    HeartbeatLoop beater(url, beater_id, beater_token);
    const auto start = Clock::now();
    auto submitted = client.request(
        boost::beast::http::verb::post, "/api/v1/runs", big.dump(),
        {{"Content-Type", "application/json"}, {"Authorization", std::string("Bearer ") + kOperatorToken}},
        std::chrono::seconds(600));
    const double took = ms_since(start);
    const auto hb = summarise(beater.stop());
    if (beater.failed()) failed = true;
    if (check(submitted, 201, "POST /api/v1/runs (big)")) {
      std::printf(
          "  POST /api/v1/runs of %lld jobs: %.0f ms; heartbeats meanwhile p50 %.1f ms, p99 %.1f ms, max %.1f ms "
          "(%zu)\n",
          static_cast<long long>(submitted->json()->at("job_count").get<std::int64_t>()), took, hb.p50, hb.p99, hb.max,
          hb.n);
    }
  }

  const bool alive = (*child)->running();
  (*child)->stop();
  std::error_code ec;
  if (!failed) fs::remove_all(dir, ec);
  return alive && !failed ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "big_results: results of a million samples posted, then the run's public listings timed while "
      "another agent heartbeats"};
  app.add_option("--results", o.results, "results posted (one job each)")->check(CLI::Range(1, 100));
  app.add_option("--samples", o.samples, "samples per result")->check(CLI::Range(1, 1'000'000));
  app.add_option("--reads", o.reads, "times each listing is read (the median is printed)")->check(CLI::Range(1, 100));
  app.add_option("--rss-reads", o.rss_reads, "reads of every result's samples while RSS is recorded (0: none)")
      ->check(CLI::Range(0, 1000));
  app.add_option("--submit-jobs", o.submit_jobs, "jobs of the big submit timed while heartbeats run (0: none)")
      ->check(CLI::Range(0, 100'000));
  app.add_option("--coordinator", o.coordinator, "the benchfleet-coordinator binary");
  CLI11_PARSE(app, argc, argv);
  return run(o);
}
