#include "bench/load_agent.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/beast/http/verb.hpp>
#include <nlohmann/json.hpp>

#include "common/codecs.h"
#include "common/stats.h"
#include "tests/support/sim_http.h"
#include "tests/support/sim_result.h"

namespace benchfleet::bench {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using Strand = asio::strand<asio::io_context::executor_type>;
using Conn = testing::SimConnection;
using Reply = testing::SimReply;
using testing::close;
using testing::pause;
constexpr auto kPost = boost::beast::http::verb::post;
constexpr auto kGet = boost::beast::http::verb::get;
constexpr std::int64_t kMaxJobsPerRun = 90'000;  // below the coordinator's default --max-cells
constexpr std::size_t kMaxErrorSamples = 5;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

// A plausible result, the same for every post.
std::string make_result_json() { return nlohmann::json(testing::plausible_ok_result(7)).dump(); }

struct Agent {
  Agent(int i, const Strand& s) : index(i), strand(s), conn(s) {}
  int index;
  Strand strand;
  Conn conn;
  std::int64_t id = 0;
  std::string token;
  std::int64_t cycles = 0;
  std::vector<double> lease_ms, result_ms, heartbeat_ms;
};

struct Shared {
  explicit Shared(const PhaseConfig& c) : cfg(c), result_json(make_result_json()) {}
  const PhaseConfig& cfg;
  std::string result_json;  // one valid "ok" JobResult, reused for every job
  Clock::time_point start, end;
  std::atomic<std::int64_t> errors{0}, empty{0}, granted{0};
  std::atomic<bool> starving{false};
  std::mutex mu;  // guards error_samples
  std::vector<std::string> error_samples;

  void error(const std::string& what) {
    errors.fetch_add(1);
    std::lock_guard lock(mu);
    if (error_samples.size() < kMaxErrorSamples) error_samples.push_back(what);
  }
};

std::string enrol_body(const Shared& sh, int index) {
  AgentDescriptor d;
  d.name = "load-" + sh.cfg.tag + "-" + std::to_string(index);
  d.hostname = "loadhost";
  d.version = "coordinator_load";
  d.slots.push_back(SlotDescriptor{"gpu0", "a100", std::nullopt, std::nullopt});
  d.torch_builds.push_back(
      TorchBuildDescriptor{"stable", "2.11.0", {RuntimeSupport{Runtime::kLibtorch, {Mode::kEager, Mode::kDefault}}}});
  return nlohmann::json(d).dump();
}

// Submits one run of at least `want` (and at most kMaxJobsPerRun) jobs of `build` (the agents'
// "stable", or one they lack); returns its job count.
asio::awaitable<std::int64_t> submit_run(Conn& op, const Shared& sh, std::int64_t want, int serial,
                                         const std::string& build = "stable") {
  const std::int64_t per_rep_and_batch = static_cast<std::int64_t>(sh.cfg.models.size()) * 2;  // two modes
  want = std::clamp<std::int64_t>(want, 1, kMaxJobsPerRun);
  MatrixSpec spec;
  spec.name = "load-" + sh.cfg.tag + "-" + std::to_string(serial);
  spec.models = sh.cfg.models;
  spec.modes = {Mode::kEager, Mode::kDefault};
  spec.torch_builds = {build};
  spec.gpus = {"a100"};
  auto ceil_div = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
  const auto batches = static_cast<int>(ceil_div(want, per_rep_and_batch * 100));
  spec.repetitions = static_cast<int>(ceil_div(want, per_rep_and_batch * batches));
  for (int b = 1; b <= batches; ++b) spec.batch_sizes.push_back(b);
  Reply r = co_await testing::exchange(op, sh.cfg.endpoint, kPost, "/api/v1/runs", nlohmann::json(spec).dump(),
                                       sh.cfg.operator_token);
  if (r.status != 201) throw std::runtime_error("submitting run " + spec.name + " failed: " + r.describe());
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.contains("job_count")) throw std::runtime_error("odd run answer: " + r.body);
  co_return j["job_count"].get<std::int64_t>();
}

// The coordinator's store counters (operations, commits) from its /metrics.
asio::awaitable<std::pair<std::int64_t, std::int64_t>> store_counters(Conn& op, const Shared& sh) {
  Reply r = co_await testing::exchange(op, sh.cfg.endpoint, kGet, "/metrics", "", sh.cfg.operator_token);
  if (r.status != 200) throw std::runtime_error("reading /metrics failed: " + r.describe());
  std::int64_t operations = -1, commits = -1;
  std::istringstream lines(r.body);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("benchfleet_store_operations_total ", 0) == 0) operations = std::stoll(line.substr(line.find(' ')));
    if (line.rfind("benchfleet_store_commits_total ", 0) == 0) commits = std::stoll(line.substr(line.find(' ')));
  }
  co_return std::make_pair(operations, commits);
}

asio::awaitable<void> enrol(Agent& a, Shared& sh) {
  Reply r = co_await testing::exchange(a.conn, sh.cfg.endpoint, kPost, "/api/v1/agents/enroll", enrol_body(sh, a.index),
                                       sh.cfg.enrollment_token);
  if (r.status != 201) throw std::runtime_error("enrolling agent " + std::to_string(a.index) + ": " + r.describe());
  auto j = nlohmann::json::parse(r.body, nullptr, false);
  if (j.is_discarded() || !j.contains("agent_id") || !j.contains("agent_token")) {
    throw std::runtime_error("odd enrolment answer: " + r.body);
  }
  a.id = j["agent_id"].get<std::int64_t>();
  a.token = j["agent_token"].get<std::string>();
}

// lease -> result until the window closes. A cycle counts when its result was stored before the
// close; every request started before the close contributes its latency.
// When paced (PhaseConfig::rate), the job "runs" between the two for a drawn time, with
// heartbeats, and the next lease long-polls.
asio::awaitable<void> agent_loop(Agent& a, Shared& sh) {
  const std::string lease_target = "/api/v1/agents/" + std::to_string(a.id) + "/lease";
  const std::string heartbeat_target = "/api/v1/agents/" + std::to_string(a.id) + "/heartbeat";
  const bool paced = sh.cfg.rate > 0;
  const std::string lease_body = paced ? R"({"slot":"gpu0","wait_s":30})" : R"({"slot":"gpu0","wait_s":0})";
  const double mean_job_s = paced ? sh.cfg.agents / sh.cfg.rate : 0;
  std::mt19937_64 rng(static_cast<std::uint64_t>(a.id) * 7919 + 1);
  std::uniform_real_distribution<double> job_length(0.5 * mean_job_s, 1.5 * mean_job_s);
  using std::chrono::milliseconds;
  auto seconds = [](double s) { return std::chrono::duration_cast<milliseconds>(std::chrono::duration<double>(s)); };
  if (paced) co_await pause(seconds(std::uniform_real_distribution<double>(0, mean_job_s)(rng)));
  while (Clock::now() < sh.end) {
    const auto t0 = Clock::now();
    Reply lease = co_await testing::exchange(a.conn, sh.cfg.endpoint, kPost, lease_target, lease_body, a.token);
    const auto t1 = Clock::now();
    if (lease.status != 200) {
      sh.error("lease: " + lease.describe());
      co_await pause(std::chrono::milliseconds(50));
      continue;
    }
    auto j = nlohmann::json::parse(lease.body, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("job")) {
      sh.error("lease: unexpected answer " + lease.body.substr(0, 300));
      continue;
    }
    const auto& job = j["job"];
    if (job.is_null()) {  // the queue ran dry; the driver submits more
      sh.empty.fetch_add(1);
      sh.starving.store(true);
      co_await pause(std::chrono::milliseconds(20));
      continue;
    }
    if (!job.contains("id") || !job.contains("attempt") || !job.contains("lease_id")) {
      sh.error("lease: job without id/attempt/lease_id: " + lease.body.substr(0, 300));
      continue;
    }
    sh.granted.fetch_add(1);
    // Latencies count by start time, so slow requests straddling the close are not censored.
    a.lease_ms.push_back(ms_between(t0, t1));
    // A job granted after the close is left leased: its result would be posted to an emptier
    // coordinator and flatter the figures (and the coordinator is stopped next anyway).
    if (t1 > sh.end) break;

    const std::string job_id = std::to_string(job["id"].get<std::int64_t>());
    if (paced) {
      const auto done = Clock::now() + seconds(job_length(rng));
      const std::string heartbeat_body =
          R"({"leases":[{"job_id":)" + job_id + R"(,"lease_id":)" + job["lease_id"].dump() + "}]}";
      while (Clock::now() < done) {
        co_await pause(std::min(std::chrono::duration_cast<milliseconds>(done - Clock::now()) + milliseconds(1),
                                seconds(sh.cfg.heartbeat_s)));
        if (Clock::now() >= done) break;
        const auto h0 = Clock::now();
        Reply hb =
            co_await testing::exchange(a.conn, sh.cfg.endpoint, kPost, heartbeat_target, heartbeat_body, a.token);
        if (hb.status != 200) sh.error("heartbeat: " + hb.describe());
        if (h0 < sh.end) a.heartbeat_ms.push_back(ms_between(h0, Clock::now()));
      }
    }
    std::string body = R"({"lease_id":)" + job["lease_id"].dump() + R"(,"attempt":)" + job["attempt"].dump() +
                       R"(,"result":)" + sh.result_json + "}";
    Reply result = co_await testing::exchange(a.conn, sh.cfg.endpoint, kPost, "/api/v1/jobs/" + job_id + "/result",
                                              std::move(body), a.token);
    const auto t2 = Clock::now();
    if (result.status != 201) {
      sh.error("result of job " + job_id + ": " + result.describe());
      continue;
    }
    a.result_ms.push_back(ms_between(t1, t2));
    if (t2 <= sh.end) ++a.cycles;
  }
}

// Runs `body(agent)` for every agent, each on its own strand; returns when all finished. The
// first exception is rethrown.
template <class Body>
asio::awaitable<void> for_all_agents(std::vector<std::unique_ptr<Agent>>& agents, Body body) {
  auto pending = std::make_shared<std::atomic<std::size_t>>(agents.size());
  auto failure = std::make_shared<std::pair<std::mutex, std::exception_ptr>>();
  for (auto& a : agents) {
    asio::co_spawn(a->strand, body(*a), [pending, failure](std::exception_ptr e) {
      if (e) {
        std::lock_guard lock(failure->first);
        if (!failure->second) failure->second = e;
      }
      pending->fetch_sub(1);
    });
  }
  while (pending->load() > 0) co_await pause(std::chrono::milliseconds(10));
  if (failure->second) std::rethrow_exception(failure->second);
}

asio::awaitable<void> drive(asio::io_context& ioc, Shared& sh, PhaseResult& out) {
  const PhaseConfig& cfg = sh.cfg;
  Conn op(co_await asio::this_coro::executor);  // the operator's connection, on the driver's strand
  auto t = Clock::now();
  // The backlog first, so it lies ahead of every job the agents can run.
  for (std::int64_t backlog = 0; backlog < cfg.foreign_jobs;) {
    backlog += co_await submit_run(op, sh, cfg.foreign_jobs - backlog, ++out.runs_submitted, "foreign");
  }
  while (out.jobs_submitted < cfg.queued_jobs) {
    out.jobs_submitted += co_await submit_run(op, sh, cfg.queued_jobs - out.jobs_submitted, ++out.runs_submitted);
  }
  out.preload_s = std::chrono::duration<double>(Clock::now() - t).count();
  out.preloaded_jobs = out.jobs_submitted;

  std::vector<std::unique_ptr<Agent>> agents;
  for (int i = 0; i < cfg.agents; ++i) agents.push_back(std::make_unique<Agent>(i, asio::make_strand(ioc)));
  t = Clock::now();
  co_await for_all_agents(agents, [&sh](Agent& a) { return enrol(a, sh); });
  out.enrol_s = std::chrono::duration<double>(Clock::now() - t).count();

  const auto counters_before = co_await store_counters(op, sh);
  sh.start = Clock::now();
  sh.end = sh.start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(cfg.seconds));
  // Keep about `queued_jobs` queued: below 90% of it (or when an agent found the queue empty) a
  // run brings it back up. A refill is one transaction that holds the store while it inserts,
  // so it is at most 10% of the depth (plus the jobs taken meanwhile) and reported.
  const std::int64_t low_water = cfg.queued_jobs - std::max<std::int64_t>(cfg.queued_jobs / 10, 1);
  std::int64_t depth_samples = 0;
  double depth_sum = 0;
  out.queued_min = out.queued_max = cfg.queued_jobs;
  auto loops = [&sh](Agent& a) { return agent_loop(a, sh); };
  auto pending = std::make_shared<std::atomic<std::size_t>>(agents.size());
  for (auto& a : agents) {
    asio::co_spawn(a->strand, loops(*a), [pending, &sh](std::exception_ptr e) {
      if (e) {
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          sh.error(std::string("agent coroutine failed: ") + ex.what());
        }
      }
      pending->fetch_sub(1);
    });
  }
  while (pending->load() > 0) {
    co_await pause(std::chrono::milliseconds(10));
    if (Clock::now() >= sh.end) continue;
    const std::int64_t depth = out.jobs_submitted - sh.granted.load();
    out.queued_min = std::min(out.queued_min, depth);
    out.queued_max = std::max(out.queued_max, depth);
    depth_sum += static_cast<double>(depth);
    ++depth_samples;
    if (sh.starving.exchange(false) || depth < low_water) {
      out.jobs_submitted += co_await submit_run(op, sh, cfg.queued_jobs - depth, ++out.runs_submitted);
      ++out.refills;
    }
  }
  const auto counters_after = co_await store_counters(op, sh);
  out.store_operations = counters_after.first - counters_before.first;
  out.store_commits = counters_after.second - counters_before.second;
  out.queued_mean = depth_samples > 0 ? depth_sum / static_cast<double>(depth_samples) : 0;
  out.window_s = std::chrono::duration<double>(sh.end - sh.start).count();
  for (auto& a : agents) {
    out.cycles += a->cycles;
    out.lease_ms.insert(out.lease_ms.end(), a->lease_ms.begin(), a->lease_ms.end());
    out.result_ms.insert(out.result_ms.end(), a->result_ms.begin(), a->result_ms.end());
    out.heartbeat_ms.insert(out.heartbeat_ms.end(), a->heartbeat_ms.begin(), a->heartbeat_ms.end());
  }
  close(op);
  for (auto& a : agents) close(a->conn);
}

}  // namespace

Result<PhaseResult> run_phase(const PhaseConfig& config) {
  if (config.agents < 1 || config.models.empty()) return Error::invalid("agents", "need agents and models");
  asio::io_context ioc(config.client_threads);
  Shared shared(config);
  PhaseResult out;
  std::exception_ptr failure;
  asio::co_spawn(asio::make_strand(ioc), drive(ioc, shared, out), [&failure](std::exception_ptr e) { failure = e; });
  std::vector<std::thread> threads;
  for (int i = 1; i < config.client_threads; ++i) threads.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (auto& th : threads) th.join();
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      return Error::internal(e.what());
    }
  }
  out.errors = shared.errors.load();
  out.empty_leases = shared.empty.load();
  out.error_samples = shared.error_samples;
  return out;
}

}  // namespace benchfleet::bench
