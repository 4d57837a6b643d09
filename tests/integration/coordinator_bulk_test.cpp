// Integration: the coordinator under bulk. Its memory under large public reads: a run holds ten results of
// 10^6 samples each (what max_iterations allows, ~7 MB of samples text each); reading all their
// samples twenty times, and four times at once, must leave the coordinator's resident memory
// near where it was before the reads: a page with samples is bounded in bytes (a result more
// than a page holds comes with samples_url, whose read streams them), and the allocator hands
// large blocks back (coordinator/app).
// The curve is printed (RSS after each read) for docs/testing.md. And a submit of 100,000 jobs,
// which goes in chunks, killed (-9) halfway.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/codecs.h"
#include "common/stats.h"
#include "tests/support/coordinator_process.h"
#include "tests/support/process_memory.h"
#include "tests/support/raw_connection.h"

namespace benchfleet::testing {
namespace {

using nlohmann::json;

constexpr int kResults = 10;
constexpr int kSamples = 1'000'000;

// kSamples samples, the most a result may carry, and an ok result of them that reached
// max_iterations (its statistics as the coordinator recomputes them).
std::vector<double> many_samples() {
  std::vector<double> samples(kSamples);
  for (int i = 0; i < kSamples; ++i) samples[i] = 10.0 + (i % 997) * 0.001;
  return samples;
}

json max_result(const std::vector<double>& samples) {
  json result = ok_result(10.0);
  result["samples_ms"] = samples;
  result["stats"] = json(compute_statistics(samples, /*seed=*/1, /*resamples=*/20));
  result["stop_reason"] = "max_iterations";
  return result;
}

// Every result of the run with its samples, page by page as a client follows next_cursor.
// Returns the number of samples read.
std::size_t read_all_samples(http::Client& client, const std::string& results_url) {
  std::size_t samples = 0;
  std::string cursor;
  for (int page = 0; page < 100; ++page) {
    const auto res = client.get(results_url + "?samples=true&limit=10" + (cursor.empty() ? "" : "&cursor=" + cursor));
    if (!res.ok()) throw std::runtime_error("read failed: " + res.error().describe());
    if (res->status != 200) throw std::runtime_error("read failed: " + std::to_string(res->status) + " " + res->body);
    const json body = json::parse(res->body);
    for (const auto& r : body["results"]) {
      if (!r.contains("samples_url")) {
        samples += r["result"]["samples_ms"].size();
        continue;
      }
      // More than a page holds: left out of the page, streamed by the result's own read.
      EXPECT_FALSE(r["result"].contains("samples_ms"));
      const auto whole = client.get(r["samples_url"].get<std::string>());
      if (!whole.ok() || whole->status != 200) throw std::runtime_error("samples_url read failed");
      samples += json::parse(whole->body)["result"]["samples_ms"].size();
    }
    if (body["next_cursor"].is_null()) return samples;
    cursor = body["next_cursor"].get<std::string>();
  }
  throw std::runtime_error("more than 100 pages");
}

TEST(CoordinatorBulk, RepeatedLargeSampleReadsReturnNearBaseline) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "under ASan the coordinator's memory is ASan's allocator's, not glibc's, and ten 10^6-sample "
                  "results take minutes to check in a Debug build: the curve is the Release build's";
#endif
  CoordinatorProcess coord;
  std::vector<int> batches;
  for (int b = 1; b <= kResults; ++b) batches.push_back(b);
  json m = matrix({kResnet}, batches, {"eager"});
  m["measurement"] = {{"min_iterations", 30}, {"max_iterations", kSamples}};
  const json run = coord.submit(m);
  const std::string results_url = "/api/v1/runs/" + std::to_string(run["id"].get<std::int64_t>()) + "/results";
  {
    FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}}));
    const json result = max_result(many_samples());
    for (int i = 0; i < kResults; ++i) {
      const auto lease = agent.lease_job("gpu0");
      ASSERT_TRUE(lease.has_value());
      const auto posted = agent.post_result(*lease, result);
      ASSERT_EQ(posted.status, 201u) << posted.body;
    }
  }

  const pid_t pid = coord.pid();
  std::vector<double> curve{resident_mib(pid)};
  const double baseline = curve.front();
  double peak = baseline;
  // Eight reads one after another: a ratchet (what the reads once cost, 100-240 MB each) shows by
  // the second; more reads cost CI a minute and showed nothing the eighth did not.
  constexpr int kReads = 8;
  for (int i = 0; i < kReads; ++i) {
    ASSERT_EQ(read_all_samples(coord.client(), results_url), std::size_t{kResults} * kSamples);
    curve.push_back(resident_mib(pid));
    peak = std::max(peak, curve.back());
  }
  // Four readers at once.
  std::vector<std::future<std::size_t>> readers;
  for (int i = 0; i < 4; ++i) {
    readers.push_back(std::async(std::launch::async, [&coord, &results_url] {
      auto client = coord.make_client();
      return read_all_samples(*client, results_url);
    }));
  }
  for (auto& r : readers) EXPECT_EQ(r.get(), std::size_t{kResults} * kSamples);
  curve.push_back(resident_mib(pid));

  std::cout << "coordinator RSS (MiB) before the reads, after each of " << kReads << " reads of " << kResults << " x "
            << kSamples << " samples, and after 4 parallel reads:";
  for (double v : curve) std::cout << " " << static_cast<int>(v + 0.5);
  std::cout << "\n";
  // Near the baseline: within what one page in flight costs a few times over, not a ratchet of
  // 100-240 MB per read.
  EXPECT_LT(curve.back() - baseline, 96.0) << "RSS " << baseline << " -> " << curve.back() << " MiB";
  EXPECT_LT(curve[kReads] - baseline, 64.0)
      << "RSS " << baseline << " -> " << curve[kReads] << " MiB after " << kReads << " reads";
  EXPECT_LT(peak - baseline, 96.0) << "peak " << peak << " MiB over a baseline of " << baseline;
}

// Slow readers of a large result once cost 18 MiB of built answer each (150 of them: 2.7 GB, and
// the agents their leases). Its samples are streamed now: sixty readers that never read hold
// little, an agent's heartbeats are answered meanwhile, and a reader that reads gets the result
// whole and exact.
TEST(CoordinatorBulk, SlowReadersOfALargeResultHoldLittleAndItArrivesWhole) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "resident memory under ASan is ASan's allocator's";
#endif
  CoordinatorProcess coord;
  json m = matrix({kResnet}, {1, 2}, {"eager"});
  m["measurement"] = {{"min_iterations", 30}, {"max_iterations", kSamples}};
  const json run = coord.submit(m);
  FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}}));
  const std::vector<double> samples = many_samples();
  const json result = max_result(samples);
  const auto lease = agent.lease_job("gpu0");
  ASSERT_TRUE(lease.has_value());
  const auto posted = agent.post_result(*lease, result);
  ASSERT_EQ(posted.status, 201u) << posted.body;
  const std::int64_t id = json::parse(posted.body)["result_id"];
  const auto second = agent.lease_job("gpu0");
  ASSERT_TRUE(second.has_value());

  const pid_t pid = coord.pid();
  const double baseline = resident_mib(pid);
  std::vector<std::unique_ptr<RawConnection>> readers;
  for (int i = 0; i < 60; ++i) {
    readers.push_back(std::make_unique<RawConnection>(static_cast<unsigned short>(coord.port())));
    readers.back()->send("GET /api/v1/results/" + std::to_string(id) + " HTTP/1.1\r\nHost: x\r\n\r\n");
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const double held = resident_mib(pid);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(agent.heartbeat({*second}).status, 200u);
  std::cout << "coordinator RSS (MiB) " << baseline << " before, " << held << " with 60 readers not reading a "
            << kSamples << "-sample result\n";
  EXPECT_LT(held - baseline, 120.0) << "60 unread answers held " << held - baseline << " MiB (whole: ~1 GiB)";
  readers.clear();

  // The server releases what the closed readers held once it sees them gone, which on a busy
  // machine can take a moment: a read meanwhile is a 503 with Retry-After, and a client that
  // honours it gets the result.
  const std::string target = "/api/v1/results/" + std::to_string(id);
  auto whole = coord.client().get(target);
  for (int retries = 0; whole.ok() && whole->status == 503u && retries < 10; ++retries) {
    ASSERT_EQ(whole->headers.count("retry-after"), 1u) << whole->body;
    std::this_thread::sleep_for(std::chrono::seconds(std::stoi(whole->headers.at("retry-after"))));
    whole = coord.client().get(target);
  }
  ASSERT_TRUE(whole.ok()) << whole.error().describe();
  ASSERT_EQ(whole->status, 200u) << whole->body;
  const json body = json::parse(whole->body);
  EXPECT_EQ(body["result"]["samples_ms"].get<std::vector<double>>(), samples);
  EXPECT_EQ(body["id"], id);
  EXPECT_EQ(body["result"]["status"], "ok");
}

// A submit of 100,000 jobs is stored in chunks. Killed (-9) once its run shows, the coordinator
// comes back with a cancelled run of exactly the jobs it stored (or, had the submit finished
// first, the whole run queued): never a run missing jobs it can never finish.
TEST(CoordinatorBulk, ABigSubmitKilledHalfwayComesBackAsACancelledRunOfWhatItStored) {
  CoordinatorProcess coord;
  std::vector<int> batches;
  for (int b = 1; b <= 1000; ++b) batches.push_back(b);
  json m = matrix({kResnet}, batches, {"eager"});
  m["name"] = "big-submit";
  m["repetitions"] = 100;
  std::thread submitter([&coord, m] {
    auto client = coord.make_client();
    (void)client->post_json("/api/v1/runs", m, CoordinatorProcess::kOperatorToken);  // cut off by the kill
  });
  std::int64_t run_id = 0;
  std::int64_t stored_before_kill = 0;
  for (int i = 0; i < 2000 && run_id == 0; ++i) {
    const json runs = coord.get_json("/api/v1/runs");
    if (!runs["runs"].empty()) {
      run_id = runs["runs"][0]["id"].get<std::int64_t>();
      const json run = coord.get_json("/api/v1/runs/" + std::to_string(run_id));
      stored_before_kill = run["jobs"]["queued"].get<std::int64_t>();
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ASSERT_NE(run_id, 0) << "the run never showed";
  coord.kill9();
  submitter.join();
  coord.restart();

  const json run = coord.get_json("/api/v1/runs/" + std::to_string(run_id));
  const std::int64_t job_count = run["job_count"].get<std::int64_t>();
  std::int64_t jobs = 0;
  for (const auto& [status, n] : run["jobs"].items()) jobs += n.get<std::int64_t>();
  EXPECT_EQ(jobs, job_count) << run.dump(1);
  EXPECT_GE(job_count, stored_before_kill);
  std::cout << "killed with " << stored_before_kill << " jobs seen stored; back with a run of " << job_count
            << " jobs, state " << run["state"] << "\n";
  if (job_count < 100'000) {
    EXPECT_FALSE(run["cancelled_at"].is_null()) << run.dump(1);
    EXPECT_EQ(run["jobs"]["queued"], 0) << run.dump(1);
  } else {
    EXPECT_EQ(run["jobs"]["queued"], 100'000) << run.dump(1);
  }
}

}  // namespace
}  // namespace benchfleet::testing
