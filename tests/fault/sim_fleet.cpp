#include "tests/fault/sim_fleet.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <exception>
#include <mutex>
#include <random>
#include <thread>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/beast/http/verb.hpp>
#include <nlohmann/json.hpp>

#include "common/codecs.h"
#include "common/stats.h"
#include "tests/support/sim_http.h"
#include "tests/support/sim_result.h"

namespace benchfleet::testing {
namespace {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
constexpr auto kPost = boost::beast::http::verb::post;
constexpr std::size_t kMaxSamples = 8;

// The daemon's backoff (agent/daemon/daemon.cpp): exponential from 250 ms, capped at 30 s, full
// jitter over the upper half.
class Backoff {
 public:
  explicit Backoff(std::mt19937_64& rng) : rng_(rng) {}
  milliseconds next() {
    const auto cap = std::min<std::int64_t>(30'000, 250LL << std::min(attempt_++, 7));
    std::uniform_int_distribution<std::int64_t> d(cap / 2, cap);
    return milliseconds(d(rng_));
  }
  void reset() { attempt_ = 0; }

 private:
  int attempt_ = 0;
  std::mt19937_64& rng_;
};

// A plausible "ok" result; each post adds its identity to the environment.
JobResult base_result() {
  JobResult r = testing::plausible_ok_result(11);
  r.environment = {{"hostname", "simhost"}, {"agent_version", "fault_coordinator_kill"}};
  return r;
}

struct Agent {
  Agent(int i, const asio::any_io_executor& ex, std::uint64_t seed) : index(i), conn(ex), rng(seed) {}
  int index;
  SimConnection conn;
  std::mt19937_64 rng;
  std::int64_t id = 0;
  std::string token;
  int long_poll_s = 25;  // the coordinator's long_poll_timeout_s, from the enrolment answer
};

}  // namespace

struct SimFleet::Impl {
  explicit Impl(FleetOptions o) : options(std::move(o)), result(base_result()) {}

  FleetOptions options;
  const JobResult result;
  asio::io_context ioc{1};  // declared before the agents: their sockets need it
  std::vector<std::unique_ptr<Agent>> agents;
  std::thread thread;
  std::atomic<bool> draining{false}, aborting{false};
  std::atomic<int> enrolled{0}, ended{0};
  std::atomic<std::int64_t> granted{0}, refused{0}, transport{0}, server{0}, unexpected{0}, released{0};

  mutable std::mutex mu;  // guards everything below
  std::vector<Acknowledged> ledger;
  std::vector<std::string> samples;
  std::string last_enrol_failure;
  bool watching = false;
  Clock::time_point watch_since;
  std::vector<std::optional<Clock::time_point>> first_ok;

  void sample(std::string what) {
    std::lock_guard lock(mu);
    if (samples.size() < kMaxSamples) samples.push_back(std::move(what));
  }

  // Every answer passes here: 2xx answers are what "served again" means.
  void answered(const Agent& a, const SimReply& r) {
    if (r.transport_error()) {
      transport.fetch_add(1);
      return;
    }
    if (r.status >= 500) server.fetch_add(1);
    if (r.status < 200 || r.status >= 300) return;
    std::lock_guard lock(mu);
    auto& first = first_ok[static_cast<std::size_t>(a.index)];
    if (watching && !first && r.answered_at >= watch_since) first = r.answered_at;
  }

  // One request, sent again at once when a reused keep-alive connection turned out dead (as the
  // agent's http::Client does), then counted.
  asio::awaitable<SimReply> call(Agent& a, const std::string& target, const std::string& body, const std::string& token,
                                 milliseconds timeout) {
    const bool reused = a.conn.open;
    SimReply r = co_await exchange(a.conn, options.endpoint, kPost, target, body, token, timeout);
    if (r.transport_error() && reused && !aborting.load()) {
      r = co_await exchange(a.conn, options.endpoint, kPost, target, body, token, timeout);
    }
    answered(a, r);
    co_return r;
  }

  std::string descriptor(const Agent& a) const {
    AgentDescriptor d;
    d.name = "sim-" + options.tag + "-" + std::to_string(a.index);
    d.hostname = "simhost";
    d.version = "fault_coordinator_kill";
    d.slots.push_back(SlotDescriptor{"gpu0", "a100", std::nullopt, std::nullopt});
    d.torch_builds.push_back(
        TorchBuildDescriptor{"stable", "2.11.0", {RuntimeSupport{Runtime::kLibtorch, {Mode::kEager, Mode::kDefault}}}});
    return nlohmann::json(d).dump();
  }

  // Enrols until it works (or the fleet aborts); false then.
  asio::awaitable<bool> enrol(Agent& a) {
    Backoff backoff(a.rng);
    const std::string body = descriptor(a);
    while (!aborting.load()) {
      SimReply r = co_await call(a, "/api/v1/agents/enroll", body, options.enrollment_token, milliseconds(30'000));
      if (r.status == 201) {
        auto j = nlohmann::json::parse(r.body, nullptr, false);
        if (j.is_object() && j.contains("agent_id") && j.contains("agent_token")) {
          a.id = j["agent_id"].get<std::int64_t>();
          a.token = j["agent_token"].get<std::string>();
          a.long_poll_s = j.value("long_poll_timeout_s", 25);
          co_return true;
        }
      }
      {
        std::lock_guard lock(mu);
        last_enrol_failure = "agent " + std::to_string(a.index) + ": " + r.describe();
      }
      co_await pause(backoff.next());
    }
    co_return false;
  }

  std::string request_id(Agent& a) {
    char text[40];
    std::snprintf(text, sizeof text, "%016llx%08x", static_cast<unsigned long long>(a.rng()),
                  static_cast<unsigned>(a.rng()));
    return text;
  }

  // Posts the result of `job` until acknowledged or refused (or the fleet aborts).
  asio::awaitable<void> upload(Agent& a, std::int64_t job_id, int attempt, const std::string& lease_id) {
    Acknowledged entry{
        job_id, attempt, 0,
        "job-" + std::to_string(job_id) + "-attempt-" + std::to_string(attempt) + "-agent-" + std::to_string(a.index),
        false};
    JobResult posted = result;
    posted.environment["fault_result"] = entry.identity;
    const std::string body =
        nlohmann::json{{"lease_id", lease_id}, {"attempt", attempt}, {"result", nlohmann::json(posted)}}.dump();
    const std::string target = "/api/v1/jobs/" + std::to_string(job_id) + "/result";
    Backoff backoff(a.rng);
    while (!aborting.load()) {
      SimReply r = co_await call(a, target, body, a.token, milliseconds(60'000));
      if (r.status == 200 || r.status == 201) {
        auto j = nlohmann::json::parse(r.body, nullptr, false);
        if (j.is_object()) entry.result_id = j.value("result_id", std::int64_t{0});
        entry.repeat = r.status == 200;
        std::lock_guard lock(mu);
        ledger.push_back(std::move(entry));
        co_return;
      }
      if (r.status == 409 || r.status == 404) {
        refused.fetch_add(1);
        sample("result of job " + std::to_string(job_id) + " attempt " + std::to_string(attempt) +
               " refused: " + r.describe());
        co_return;
      }
      if (r.status == 401) {
        unexpected.fetch_add(1);
        sample("result of job " + std::to_string(job_id) + ": " + r.describe());
        if (!co_await enrol(a)) co_return;
        continue;
      }
      if (!r.transport_error() && r.status < 500) {  // 400, 413: retrying cannot help
        unexpected.fetch_add(1);
        sample("result of job " + std::to_string(job_id) + ": " + r.describe());
        co_return;
      }
      co_await pause(backoff.next());
    }
  }

  // Gives a lease back (best effort, one try), as the daemon does with a job granted while it drains.
  asio::awaitable<void> release(Agent& a, std::int64_t job_id, const std::string& lease_id) {
    const std::string body = nlohmann::json{{"lease_id", lease_id}}.dump();
    co_await call(a, "/api/v1/jobs/" + std::to_string(job_id) + "/release", body, a.token, milliseconds(10'000));
    released.fetch_add(1);
  }

  asio::awaitable<void> run_agent(Agent& a) {
    if (!co_await enrol(a)) co_return;
    enrolled.fetch_add(1);
    Backoff backoff(a.rng);
    std::string pending;  // the request id of the poll not yet answered
    std::uniform_int_distribution<std::int64_t> work(options.work_min.count(), options.work_max.count());
    while (!draining.load() && !aborting.load()) {
      if (pending.empty()) pending = request_id(a);
      const std::string body =
          nlohmann::json{{"slot", "gpu0"}, {"wait_s", a.long_poll_s}, {"request_id", pending}}.dump();
      SimReply r = co_await call(a, "/api/v1/agents/" + std::to_string(a.id) + "/lease", body, a.token,
                                 milliseconds((a.long_poll_s + 30) * 1000LL));
      if (r.transport_error()) {  // the id stays: the retry is the same poll
        co_await pause(backoff.next());
        continue;
      }
      if (r.status != 200) {
        pending.clear();
        if (r.status == 401) {
          unexpected.fetch_add(1);
          sample("lease: " + r.describe());
          if (!co_await enrol(a)) co_return;
        } else {
          if (r.status < 500) {
            unexpected.fetch_add(1);
            sample("lease: " + r.describe());
          }
          co_await pause(backoff.next());
        }
        continue;
      }
      auto j = nlohmann::json::parse(r.body, nullptr, false);
      if (!j.is_object() || !j.contains("job")) {  // unreadable: retried as the same poll
        unexpected.fetch_add(1);
        sample("lease: unreadable answer " + r.body.substr(0, 300));
        co_await pause(backoff.next());
        continue;
      }
      pending.clear();
      backoff.reset();
      const auto& job = j["job"];
      if (job.is_null()) continue;
      const auto job_id = job.value("id", std::int64_t{0});
      const int attempt = job.value("attempt", 0);
      const std::string lease_id = job.value("lease_id", "");
      if (job_id <= 0 || attempt < 1 || lease_id.empty()) {
        unexpected.fetch_add(1);
        sample("lease: job without id/attempt/lease_id: " + r.body.substr(0, 300));
        continue;
      }
      granted.fetch_add(1);
      if (draining.load()) {
        co_await release(a, job_id, lease_id);
        continue;
      }
      co_await pause(milliseconds(work(a.rng)));
      co_await upload(a, job_id, attempt, lease_id);
    }
  }
};

SimFleet::SimFleet(FleetOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}

SimFleet::~SimFleet() {
  impl_->aborting.store(true);
  impl_->ioc.stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  for (auto& a : impl_->agents) close(a->conn);
}

Status SimFleet::start(std::chrono::milliseconds limit) {
  Impl& s = *impl_;
  std::random_device rd;
  s.first_ok.assign(static_cast<std::size_t>(s.options.agents), std::nullopt);
  for (int i = 0; i < s.options.agents; ++i) {
    s.agents.push_back(std::make_unique<Agent>(i, s.ioc.get_executor(), (std::uint64_t{rd()} << 32) | rd()));
  }
  for (auto& a : s.agents) {
    asio::co_spawn(s.ioc, s.run_agent(*a), [&s](std::exception_ptr e) {
      if (e) {
        try {
          std::rethrow_exception(e);
        } catch (const std::exception& ex) {
          s.unexpected.fetch_add(1);
          s.sample(std::string("agent coroutine failed: ") + ex.what());
        }
      }
      s.ended.fetch_add(1);
    });
  }
  s.thread = std::thread([&s] {
    auto guard = asio::make_work_guard(s.ioc);
    s.ioc.run();
  });
  const auto deadline = Clock::now() + limit;
  while (s.enrolled.load() < s.options.agents) {
    if (Clock::now() >= deadline) {
      std::lock_guard lock(s.mu);
      return Error::internal(std::to_string(s.enrolled.load()) + " of " + std::to_string(s.options.agents) +
                             " simulated agents enrolled; last failure: " + s.last_enrol_failure);
    }
    std::this_thread::sleep_for(milliseconds(10));
  }
  return Status::Ok();
}

void SimFleet::watch_answers(Clock::time_point since) {
  std::lock_guard lock(impl_->mu);
  impl_->watching = true;
  impl_->watch_since = since;
  std::fill(impl_->first_ok.begin(), impl_->first_ok.end(), std::nullopt);
}

std::vector<std::optional<SimFleet::Clock::time_point>> SimFleet::first_answers() const {
  std::lock_guard lock(impl_->mu);
  return impl_->first_ok;
}

bool SimFleet::drain(std::chrono::milliseconds limit) {
  impl_->draining.store(true);
  const auto deadline = Clock::now() + limit;
  while (impl_->ended.load() < impl_->options.agents) {
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return true;
}

std::vector<Acknowledged> SimFleet::ledger() const {
  std::lock_guard lock(impl_->mu);
  return impl_->ledger;
}

FleetCounters SimFleet::counters() const {
  const Impl& s = *impl_;
  FleetCounters c;
  c.leases_granted = s.granted.load();
  c.refused = s.refused.load();
  c.transport_errors = s.transport.load();
  c.server_errors = s.server.load();
  c.unexpected = s.unexpected.load();
  c.released = s.released.load();
  std::lock_guard lock(s.mu);
  c.acknowledged = static_cast<std::int64_t>(s.ledger.size());
  c.acknowledged_repeats = std::count_if(s.ledger.begin(), s.ledger.end(), [](const auto& e) { return e.repeat; });
  c.samples = s.samples;
  return c;
}

}  // namespace benchfleet::testing
