// connection_hold: what legitimate clients get from a real benchfleet-coordinator while anonymous
// clients hold its connections (tests/support/connection_hold.h: silent sockets and keep-alive
// /healthz probes from many loopback addresses, every closed socket opened again). Three kinds of
// legitimate client, each timed, first without the hold and then under it:
//   agent     an enrolled agent's heartbeats on its keep-alive connection (10/s);
//   operator  GET /api/v1/runs with the operator token, each on a new connection (10/s);
//   enrol     an agent enrolling, each on a new connection (2/s).
// Prints the share of requests answered as expected and their latency. Not a pass/fail test: the
// exit code only says whether the coordinator started and the phases ran.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/agent_protocol.h"
#include "common/http/client.h"
#include "common/stats.h"
#include "tests/support/connection_hold.h"
#include "tests/support/coordinator_child.h"

namespace {

using namespace benchfleet;
using benchfleet::testing::ConnectionHold;
using benchfleet::testing::coordinator_binary;
using benchfleet::testing::CoordinatorChild;
using benchfleet::testing::HoldCounts;
using benchfleet::testing::HoldOptions;
using benchfleet::testing::LaunchOptions;
using SteadyClock = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr const char* kOperatorToken = "hold-operator-token";
constexpr const char* kEnrollmentToken = "hold-enrollment-token";

struct Options {
  int sockets = 2500;  // held by the anonymous clients
  int addresses = 40;  // their source addresses
  double probe_s = 1;  // keep-alive probe period of every other socket
  double seconds = 10;
  int max_connections = 2048;
  int reserved = 256;
  int per_peer = 64;
  std::string coordinator = coordinator_binary();
};

struct Timings {
  int requests = 0;
  int expected = 0;  // answered with the status the request should get
  std::vector<double> ms;
};

std::string descriptor(const std::string& name) {
  AgentDescriptor d;
  d.name = name;
  d.hostname = "holdhost";
  d.version = "connection_hold";
  d.slots.push_back(SlotDescriptor{"cpu", "cpu", std::nullopt, std::nullopt});
  d.torch_builds.push_back(
      TorchBuildDescriptor{"stable", "2.6.0", {RuntimeSupport{Runtime::kLibtorch, {Mode::kEager}}}});
  return nlohmann::json(d).dump();
}

double ms_since(SteadyClock::time_point t0) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();
}

// Calls `request` every `period` until `end`; it returns whether the answer was the expected one.
template <typename F>
Timings paced(SteadyClock::time_point end, std::chrono::milliseconds period, F request) {
  Timings t;
  for (auto next = SteadyClock::now(); SteadyClock::now() < end; next += period) {
    std::this_thread::sleep_until(next);
    const auto t0 = SteadyClock::now();
    const bool ok = request();
    t.ms.push_back(ms_since(t0));
    ++t.requests;
    t.expected += ok ? 1 : 0;
  }
  return t;
}

struct Phase {
  std::string name;
  Timings agent, op, enrol;
  HoldCounts hold;
};

Phase run_phase(const std::string& name, const std::string& url, const Options& o, int serial) {
  Phase p;
  p.name = name;
  const auto end =
      SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(std::chrono::duration<double>(o.seconds));
  // The agent enrols first (its connection then shows a token on every request).
  http::Client agent(url);
  auto enrolled = agent.post_json("/api/v1/agents/enroll", nlohmann::json::parse(descriptor("held-" + name)),
                                  kEnrollmentToken, std::chrono::milliseconds(10000));
  std::string heartbeat_target;
  std::string agent_token;
  if (enrolled.ok() && enrolled->status == 201u) {
    const auto j = nlohmann::json::parse(enrolled->body);
    heartbeat_target = "/api/v1/agents/" + std::to_string(j.at("agent_id").get<std::int64_t>()) + "/heartbeat";
    agent_token = j.at("agent_token").get<std::string>();
  }
  std::thread agent_thread([&] {
    p.agent = paced(end, std::chrono::milliseconds(100), [&] {
      if (agent_token.empty()) return false;
      auto r = agent.post_json(heartbeat_target, nlohmann::json{{"leases", nlohmann::json::array()}}, agent_token,
                               std::chrono::milliseconds(5000));
      return r.ok() && r->status == 200u;
    });
  });
  std::thread operator_thread([&] {
    p.op = paced(end, std::chrono::milliseconds(100), [&] {
      http::Client fresh(url);
      auto r = fresh.get("/api/v1/runs?limit=1", kOperatorToken, std::chrono::milliseconds(5000));
      return r.ok() && r->status == 200u;
    });
  });
  int enrolments = 0;
  p.enrol = paced(end, std::chrono::milliseconds(500), [&] {
    http::Client fresh(url);
    const std::string agent_name = "enrol-" + std::to_string(serial) + "-" + std::to_string(enrolments++);
    auto r = fresh.post_json("/api/v1/agents/enroll", nlohmann::json::parse(descriptor(agent_name)), kEnrollmentToken,
                             std::chrono::milliseconds(5000));
    return r.ok() && r->status == 201u;
  });
  agent_thread.join();
  operator_thread.join();
  return p;
}

void print_row(const std::string& phase, const std::string& client, Timings t) {
  std::sort(t.ms.begin(), t.ms.end());
  const auto pct = [&](double q) { return t.ms.empty() ? 0.0 : percentile_sorted(t.ms, q); };
  std::printf("| %s | %s | %d | %.1f%% | %.2f | %.2f | %.2f |\n", phase.c_str(), client.c_str(), t.requests,
              t.requests == 0 ? 0.0 : 100.0 * t.expected / t.requests, pct(0.5), pct(0.99),
              t.ms.empty() ? 0.0 : t.ms.back());
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"connection_hold: legitimate clients' success and latency while anonymous clients hold connections"};
  app.add_option("--sockets", o.sockets, "sockets the anonymous clients hold")->check(CLI::Range(1, 60000));
  app.add_option("--addresses", o.addresses, "their source addresses (127.0.0.2 ...)")->check(CLI::Range(1, 250));
  app.add_option("--probe-s", o.probe_s, "keep-alive probe period of every other held socket")
      ->check(CLI::Range(0.05, 600.0));
  app.add_option("--seconds", o.seconds, "length of each phase")->check(CLI::Range(0.5, 3600.0));
  app.add_option("--max-connections", o.max_connections, "the coordinator's max_connections");
  app.add_option("--reserved", o.reserved, "the coordinator's reserved_connections");
  app.add_option("--per-peer", o.per_peer, "the coordinator's max_connections_per_peer");
  app.add_option("--coordinator", o.coordinator, "benchfleet-coordinator binary");
  CLI11_PARSE(app, argc, argv);

  // The held sockets are this process's descriptors.
  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  const fs::path dir = fs::temp_directory_path() / ("benchfleet-hold-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  LaunchOptions launch;
  launch.binary = o.coordinator;
  launch.flags = {{"--db", (dir / "hold.db").string()},
                  {"--operator-token", kOperatorToken},
                  {"--enrollment-token", kEnrollmentToken},
                  {"--max-connections", std::to_string(o.max_connections)},
                  {"--reserved-connections", std::to_string(o.reserved)},
                  {"--max-connections-per-peer", std::to_string(o.per_peer)},
                  {"--log-level", "warn"}};
  launch.port_file = (dir / "hold.port").string();
  launch.log_file = (dir / "hold.log").string();
  auto child = CoordinatorChild::start(launch);
  if (!child.ok()) {
    std::cerr << "connection_hold: " << child.error().describe() << "\n";
    return 1;
  }
  const unsigned short port = static_cast<unsigned short>((*child)->port());
  const std::string url = "http://127.0.0.1:" + std::to_string(port);

  std::cerr << "  without a hold: " << o.seconds << " s...\n";
  Phase quiet = run_phase("no hold", url, o, 0);
  std::cerr << "  holding " << o.sockets << " sockets from " << o.addresses << " addresses...\n";
  Phase held;
  {
    ConnectionHold hold(HoldOptions{port, o.sockets, o.addresses,
                                    std::chrono::milliseconds(static_cast<int>(o.probe_s * 1000)),
                                    std::chrono::milliseconds(100)});
    const auto filled = SteadyClock::now() + std::chrono::seconds(10);
    while (hold.counts().open_now < o.max_connections - o.reserved && SteadyClock::now() < filled) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::cerr << "  held " << hold.counts().open_now << " open; measuring " << o.seconds << " s...\n";
    held = run_phase("held", url, o, 1);
    held.hold = hold.counts();
  }

  std::printf(
      "\nbenchfleet connection hold: coordinator max_connections %d (reserved %d, %d anonymous per "
      "address); the hold: %d sockets from %d loopback addresses, every other one probing GET /healthz "
      "every %.2g s, each closed socket opened again after 0.1 s; %.3g s per phase\n\n",
      o.max_connections, o.reserved, o.per_peer, o.sockets, o.addresses, o.probe_s, o.seconds);
  std::printf("| phase | client | requests | answered as expected | p50 ms | p99 ms | max ms |\n");
  std::printf("|---|---|---|---|---|---|---|\n");
  for (const Phase* p : {&quiet, &held}) {
    print_row(p->name, "agent heartbeat (kept-alive)", p->agent);
    print_row(p->name, "operator GET (new connection)", p->op);
    print_row(p->name, "enrolment (new connection)", p->enrol);
  }
  std::printf(
      "\nthe hold: %lld connections opened, %lld closed by the coordinator (%lld of them after a 503), "
      "%lld probes answered, %lld open at the end\n",
      static_cast<long long>(held.hold.opened), static_cast<long long>(held.hold.closed),
      static_cast<long long>(held.hold.refused), static_cast<long long>(held.hold.probes_answered),
      static_cast<long long>(held.hold.open_now));
  (*child)->stop(std::chrono::seconds(10));
  fs::remove_all(dir);
  const bool ran = quiet.agent.requests > 0 && held.agent.requests > 0;
  return ran ? 0 : 1;
}
