// read_flood: what the agents and operators of a real benchfleet-coordinator get while other
// clients attack it from loopback. Each attack runs for --seconds while the legitimate clients
// work beside it:
//   agents    two enrolled agents, each holding a lease, heartbeating every 200 ms on their own
//             keep-alive connections (through --agent-listen's port, as a deployment would have
//             them); a lease the coordinator answers "lost" is counted;
//   operator  GET /api/v1/runs with the operator token on a new connection every 100 ms, through
//             the agents' port, and a small submit every second;
// and the attacks, anonymous unless said:
//   slow-readers   --slow-readers connections each ask for one large result (--samples samples,
//                  about 17 MB at 10^6) and never read the answer;
//   jobs-flood     --flooders clients looping GET /runs/{id}/jobs?limit=10000 on a run of
//                  --jobs jobs;
//   report-flood   --flooders clients looping GET /runs/{id}/report as JSON and CSV;
//   body-stall     one agent token sending two bodies of 32 MiB - 64 B and 16 of 8 B, each at
//                  one byte a second;
//   header-flood   --header-sockets connections from 199 addresses, each sending one byte of its
//                  headers at once and another every 500 ms (never idle, never done).
// Prints per attack: the share of legitimate requests answered as expected, the heartbeats' p50,
// p99 and max, leases lost, and the coordinator's resident memory before, at its peak and 2 s
// after. Not a pass/fail test: the exit code only says whether the phases ran.
//
//   read_flood [--seconds 10] [--attacks slow-readers,jobs-flood,...] [--slow-readers 150]
//              [--flooders 64] [--jobs 3600] [--samples 1000000] [--header-sockets 2048]
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <nlohmann/json.hpp>

#include "common/agent_protocol.h"
#include "common/codecs.h"
#include "common/http/client.h"
#include "common/stats.h"
#include "tests/support/coordinator_child.h"

namespace {

using namespace benchfleet;
using benchfleet::testing::coordinator_binary;
using benchfleet::testing::CoordinatorChild;
using benchfleet::testing::LaunchOptions;
using nlohmann::json;
using SteadyClock = std::chrono::steady_clock;
namespace asio = boost::asio;
namespace fs = std::filesystem;

constexpr const char* kOperatorToken = "flood-operator-token";
constexpr const char* kEnrollmentToken = "flood-enrollment-token";

struct Options {
  double seconds = 10;
  std::string attacks = "slow-readers,jobs-flood,report-flood,body-stall,header-flood";
  int slow_readers = 150;
  int flooders = 64;
  int jobs = 3600;
  int samples = 1'000'000;
  int header_sockets = 2048;
  std::string coordinator = coordinator_binary();
  std::vector<std::string> coordinator_flags;  // more of the coordinator's flags, FLAG=VALUE
};

double ms_since(SteadyClock::time_point t0) {
  return std::chrono::duration<double, std::milli>(SteadyClock::now() - t0).count();
}

std::int64_t rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return 0;
}

std::string descriptor(const std::string& name) {
  AgentDescriptor d;
  d.name = name;
  d.hostname = "floodhost";
  d.version = "read_flood";
  d.slots.push_back(SlotDescriptor{"gpu0", "a100", std::nullopt, std::nullopt});
  d.torch_builds.push_back(
      TorchBuildDescriptor{"stable", "2.6.0", {RuntimeSupport{Runtime::kLibtorch, {Mode::kEager}}}});
  return json(d).dump();
}

json matrix(const std::string& name, int batches, int repetitions) {
  std::vector<int> sizes;
  for (int b = 1; b <= batches; ++b) sizes.push_back(b);
  return {{"name", name},
          {"models", {"torchvision/resnet18", "torchvision/squeezenet1_1", "torchvision/mobilenet_v3_small"}},
          {"batch_sizes", sizes},
          {"modes", {"eager"}},
          {"torch_builds", {"stable"}},
          {"gpus", {"a100"}},
          {"runtimes", {"libtorch"}},
          {"repetitions", repetitions}};
}

// An enrolled agent with its token, id and (once leased) a lease.
struct Agent {
  std::string token;
  std::int64_t id = 0;
  std::int64_t job_id = 0;
  std::string lease_id;
  int attempt = 0;
};

std::optional<Agent> enrol(http::Client& c, const std::string& name) {
  auto r = c.post_json("/api/v1/agents/enroll", json::parse(descriptor(name)), kEnrollmentToken,
                       std::chrono::milliseconds(10000));
  if (!r.ok() || r->status != 201u) return std::nullopt;
  const json j = json::parse(r->body);
  return Agent{j.at("agent_token"), j.at("agent_id"), 0, "", 0};
}

bool take_lease(http::Client& c, Agent& a) {
  auto r = c.post_json("/api/v1/agents/" + std::to_string(a.id) + "/lease", json{{"slot", "gpu0"}, {"wait_s", 5}},
                       a.token, std::chrono::milliseconds(20000));
  if (!r.ok() || r->status != 200u) return false;
  const json j = json::parse(r->body);
  if (!j.contains("job") || j["job"].is_null()) return false;
  a.job_id = j["job"]["id"];
  a.lease_id = j["job"]["lease_id"];
  a.attempt = j["job"]["attempt"];
  return true;
}

json big_result(int samples) {
  std::vector<double> s(static_cast<std::size_t>(samples));
  for (int i = 0; i < samples; ++i) s[static_cast<std::size_t>(i)] = 5.0 + 0.001 * (i % 997);
  return {{"status", "ok"},
          {"stats", json(compute_statistics(s, /*seed=*/1, /*resamples=*/20))},
          {"samples_ms", s},
          {"stop_reason", "max_time"},
          {"environment", {{"torch", "2.6.0"}}}};
}

struct Timings {
  int requests = 0, expected = 0, leases_lost = 0;
  std::vector<double> ms;
  void add(double ms_taken, bool ok) {
    ++requests;
    expected += ok ? 1 : 0;
    ms.push_back(ms_taken);
  }
};

struct Legit {
  Timings heartbeats, reads, submits;
};

// The legitimate clients, until `stop`.
Legit run_legit(const std::string& agent_url, std::vector<Agent>& agents, const std::atomic<bool>& stop) {
  Legit out;
  std::mutex mu;
  std::vector<std::thread> threads;
  for (Agent& a : agents) {
    threads.emplace_back([&, &agent = a] {
      http::Client c(agent_url);
      Timings t;
      for (auto next = SteadyClock::now(); !stop.load(); next += std::chrono::milliseconds(200)) {
        std::this_thread::sleep_until(next);
        const auto t0 = SteadyClock::now();
        auto r = c.post_json("/api/v1/agents/" + std::to_string(agent.id) + "/heartbeat",
                             json{{"leases", {{{"job_id", agent.job_id}, {"lease_id", agent.lease_id}}}}}, agent.token,
                             std::chrono::milliseconds(20000));
        const bool ok = r.ok() && r->status == 200u;
        bool lost = false;
        if (ok) {
          const json j = json::parse(r->body, nullptr, false);
          lost = j.is_object() && j.contains("leases") && !j["leases"].empty() && j["leases"][0]["state"] != "active";
        }
        t.add(ms_since(t0), ok && !lost);
        t.leases_lost += lost ? 1 : 0;
      }
      std::lock_guard lock(mu);
      out.heartbeats.requests += t.requests;
      out.heartbeats.expected += t.expected;
      out.heartbeats.leases_lost += t.leases_lost;
      out.heartbeats.ms.insert(out.heartbeats.ms.end(), t.ms.begin(), t.ms.end());
    });
  }
  threads.emplace_back([&] {
    Timings t;
    for (auto next = SteadyClock::now(); !stop.load(); next += std::chrono::milliseconds(100)) {
      std::this_thread::sleep_until(next);
      http::Client fresh(agent_url);
      const auto t0 = SteadyClock::now();
      auto r = fresh.get("/api/v1/runs?limit=1", kOperatorToken, std::chrono::milliseconds(10000));
      t.add(ms_since(t0), r.ok() && r->status == 200u);
    }
    std::lock_guard lock(mu);
    out.reads = std::move(t);
  });
  threads.emplace_back([&] {
    Timings t;
    int n = 0;
    for (auto next = SteadyClock::now(); !stop.load(); next += std::chrono::seconds(1)) {
      std::this_thread::sleep_until(next);
      http::Client fresh(agent_url);
      const auto t0 = SteadyClock::now();
      auto r = fresh.post_json("/api/v1/runs", matrix("legit-" + std::to_string(n++), 1, 1), kOperatorToken,
                               std::chrono::milliseconds(10000));
      t.add(ms_since(t0), r.ok() && r->status == 201u);
    }
    std::lock_guard lock(mu);
    out.submits = std::move(t);
  });
  for (auto& t : threads) t.join();
  return out;
}

// A raw socket that sends what it is told and reads nothing.
struct RawSocket {
  asio::io_context io;
  asio::ip::tcp::socket s{io};
  bool open(unsigned short port, const std::string& source = "") {
    boost::system::error_code ec;
    if (!source.empty()) {
      s.open(asio::ip::tcp::v4(), ec);
      s.bind({asio::ip::make_address(source), 0}, ec);
      if (ec) return false;
    }
    s.connect({asio::ip::make_address("127.0.0.1"), port}, ec);
    return !ec;
  }
  bool send(const std::string& bytes) {
    boost::system::error_code ec;
    asio::write(s, asio::buffer(bytes), ec);
    return !ec;
  }
};

// One attack's clients, until `stop`.
void attack(const std::string& name, const Options& o, unsigned short port, std::int64_t run_id,
            std::int64_t big_result_id, const Agent& staller, const std::atomic<bool>& stop) {
  const std::string url = "http://127.0.0.1:" + std::to_string(port);
  std::vector<std::thread> threads;
  if (name == "slow-readers") {
    threads.emplace_back([&] {
      std::vector<std::unique_ptr<RawSocket>> readers;
      while (!stop.load()) {  // keep --slow-readers asking; a refused or closed one asks again
        // Refused (503) or closed: ask again. An answer being written stays unread.
        readers.erase(std::remove_if(readers.begin(), readers.end(),
                                     [](const std::unique_ptr<RawSocket>& r) {
                                       char head[12] = {};
                                       const auto n =
                                           ::recv(r->s.native_handle(), head, sizeof head, MSG_PEEK | MSG_DONTWAIT);
                                       return n == 0 || (n == 12 && std::string_view(head, 12) == "HTTP/1.1 503");
                                     }),
                      readers.end());
        while (static_cast<int>(readers.size()) < o.slow_readers && !stop.load()) {
          auto r = std::make_unique<RawSocket>();
          if (!r->open(port)) break;
          r->send("GET /api/v1/results/" + std::to_string(big_result_id) + " HTTP/1.1\r\nHost: x\r\n\r\n");
          readers.push_back(std::move(r));
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
      }
    });
  } else if (name == "jobs-flood" || name == "report-flood") {
    for (int i = 0; i < o.flooders; ++i) {
      threads.emplace_back([&, i] {
        http::Client c(url);
        for (int k = 0; !stop.load(); ++k) {
          std::string target;
          if (name == "jobs-flood") {
            target = "/api/v1/runs/" + std::to_string(run_id) + "/jobs?limit=10000";
          } else {
            target = "/api/v1/runs/" + std::to_string(run_id) + "/report?format=" + ((i + k) % 2 ? "csv" : "json");
          }
          auto r = c.get(target, "", std::chrono::milliseconds(30000));
          if (!r.ok() || r->status == 503u) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
      });
    }
  } else if (name == "body-stall") {
    threads.emplace_back([&] {
      std::vector<std::unique_ptr<RawSocket>> bodies;
      const auto begin = [&](std::size_t length) {
        auto b = std::make_unique<RawSocket>();
        if (!b->open(port)) return;
        b->send("POST /api/v1/jobs/1/result HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + staller.token +
                "\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(length) + "\r\n\r\n");
        bodies.push_back(std::move(b));
      };
      for (int i = 0; i < 2; ++i) begin((std::size_t{32} << 20) - 64);
      for (int i = 0; i < 16; ++i) begin(8);
      while (!stop.load()) {
        for (auto& b : bodies) b->send(" ");
        std::this_thread::sleep_for(std::chrono::seconds(1));
      }
    });
  } else if (name == "header-flood") {
    threads.emplace_back([&] {
      std::vector<std::unique_ptr<RawSocket>> held;
      int k = 0;
      while (!stop.load()) {
        while (static_cast<int>(held.size()) < o.header_sockets && !stop.load()) {
          auto h = std::make_unique<RawSocket>();
          if (!h->open(port, "127.0.0." + std::to_string(2 + (k++ % 199)))) break;
          h->send("G");
          held.push_back(std::move(h));
        }
        for (auto& h : held) {
          if (!h->send("E")) h.reset();
        }
        held.erase(std::remove(held.begin(), held.end(), nullptr), held.end());
        std::this_thread::sleep_for(std::chrono::milliseconds(500));
      }
    });
  }
  for (auto& t : threads) t.join();
}

void print_row(const std::string& phase, const std::string& client, Timings t) {
  std::sort(t.ms.begin(), t.ms.end());
  const auto pct = [&](double q) { return t.ms.empty() ? 0.0 : percentile_sorted(t.ms, q); };
  std::printf("| %s | %s | %d | %.1f%% | %.1f | %.1f | %.1f | %d |\n", phase.c_str(), client.c_str(), t.requests,
              t.requests == 0 ? 0.0 : 100.0 * t.expected / t.requests, pct(0.5), pct(0.99),
              t.ms.empty() ? 0.0 : t.ms.back(), t.leases_lost);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"read_flood: agents' and operators' success, heartbeat latency, leases lost and RSS under attacks"};
  app.add_option("--seconds", o.seconds, "length of each attack")->check(CLI::Range(1.0, 3600.0));
  app.add_option("--attacks", o.attacks,
                 "comma-separated: slow-readers,jobs-flood,report-flood,body-stall,header-flood");
  app.add_option("--slow-readers", o.slow_readers, "connections asking for the large result")
      ->check(CLI::Range(1, 5000));
  app.add_option("--flooders", o.flooders, "clients looping reads")->check(CLI::Range(1, 1024));
  app.add_option("--jobs", o.jobs, "jobs of the run the floods read (a multiple of 3)")->check(CLI::Range(3, 100000));
  app.add_option("--samples", o.samples, "samples of the large result")->check(CLI::Range(1, 1000000));
  app.add_option("--header-sockets", o.header_sockets, "connections of the header flood")->check(CLI::Range(1, 60000));
  app.add_option("--coordinator", o.coordinator, "benchfleet-coordinator binary");
  app.add_option("--coordinator-flag", o.coordinator_flags, "one more coordinator flag, as --flag=value (repeatable)");
  CLI11_PARSE(app, argc, argv);

  rlimit files{};
  if (::getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &files);
  }
  const fs::path dir = fs::temp_directory_path() / ("benchfleet-flood-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  LaunchOptions launch;
  launch.binary = o.coordinator;
  launch.flags = {{"--db", (dir / "flood.db").string()},
                  {"--operator-token", kOperatorToken},
                  {"--enrollment-token", kEnrollmentToken},
                  {"--agent-listen", "127.0.0.1:0"},
                  {"--agent-port-file", (dir / "agent.port").string()},
                  {"--heartbeat-interval-s", "1"},
                  {"--lease-ttl-s", "5"},
                  {"--max-cells", "200000"},
                  {"--log-level", "warn"}};
  for (const std::string& f : o.coordinator_flags) {
    const auto eq = f.find('=');
    launch.flags[f.substr(0, eq)] = eq == std::string::npos ? "" : f.substr(eq + 1);
  }
  launch.port_file = (dir / "flood.port").string();
  launch.log_file = (dir / "flood.log").string();
  auto child = CoordinatorChild::start(launch);
  if (!child.ok()) {
    std::cerr << "read_flood: " << child.error().describe() << "\n";
    return 1;
  }
  const pid_t pid = (*child)->pid();
  const unsigned short port = static_cast<unsigned short>((*child)->port());
  unsigned short agent_port = 0;
  for (int i = 0; i < 100 && agent_port == 0; ++i) {
    std::ifstream in(dir / "agent.port");
    int p = 0;
    if (in >> p) agent_port = static_cast<unsigned short>(p);
    if (agent_port == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const std::string agent_url = "http://127.0.0.1:" + std::to_string(agent_port);

  // The run the floods read (--jobs jobs), one large result in it, and the legitimate agents' leases.
  http::Client op(agent_url);
  const int repetitions = std::max(1, o.jobs / 3 / 30);
  json flooded = matrix("flooded", 30, repetitions);
  flooded["measurement"] = {{"min_iterations", 30}, {"max_iterations", 1000000}};
  auto created = op.post_json("/api/v1/runs", flooded, kOperatorToken, std::chrono::milliseconds(60000));
  if (!created.ok() || created->status != 201u) {
    std::cerr << "read_flood: submit failed\n";
    return 1;
  }
  const std::int64_t run_id = json::parse(created->body).at("id");
  auto poster = enrol(op, "poster");
  std::int64_t big_id = 0;
  if (poster && take_lease(op, *poster)) {
    auto r = op.post_json(
        "/api/v1/jobs/" + std::to_string(poster->job_id) + "/result",
        json{{"lease_id", poster->lease_id}, {"attempt", poster->attempt}, {"result", big_result(o.samples)}},
        poster->token, std::chrono::milliseconds(120000));
    if (r.ok() && r->status == 201u) big_id = json::parse(r->body).at("result_id");
  }
  std::vector<Agent> agents;
  for (const char* name : {"legit-1", "legit-2"}) {
    auto a = enrol(op, name);
    if (a && take_lease(op, *a)) agents.push_back(*a);
  }
  auto staller = enrol(op, "staller");
  if (big_id == 0 || agents.size() != 2 || !staller) {
    std::cerr << "read_flood: setup failed (result " << big_id << ", agents " << agents.size() << ")\n";
    return 1;
  }

  std::printf(
      "\nbenchfleet read flood: %.3g s per attack; run of %d jobs, one result of %d samples; legitimate: 2 agents "
      "heartbeating every 200 ms (lease TTL 5 s) and an operator (GET /runs every 100 ms on a new connection, a "
      "submit every second), both on the agents' listener\n\n",
      o.seconds, o.jobs, o.samples);
  std::printf("| attack | client | requests | answered as expected | p50 ms | p99 ms | max ms | leases lost |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  std::vector<std::string> rss_rows;
  std::stringstream names(o.attacks);
  bool ran = true;
  for (std::string name; std::getline(names, name, ',');) {
    const std::int64_t before = rss_kib(pid);
    std::atomic<bool> stop{false};
    std::atomic<std::int64_t> peak{before};
    std::thread sampler([&] {
      while (!stop.load()) {
        peak = std::max<std::int64_t>(peak.load(), rss_kib(pid));
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
    std::thread attacker([&] { attack(name, o, port, run_id, big_id, *staller, stop); });
    std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the attack under way
    Legit legit;
    std::thread legit_thread([&] { legit = run_legit(agent_url, agents, stop); });
    std::this_thread::sleep_for(std::chrono::duration<double>(o.seconds));
    stop = true;
    legit_thread.join();
    attacker.join();
    sampler.join();
    std::this_thread::sleep_for(std::chrono::seconds(2));
    const std::int64_t after = rss_kib(pid);
    print_row(name, "agent heartbeat", legit.heartbeats);
    print_row(name, "operator GET /runs", legit.reads);
    print_row(name, "operator submit", legit.submits);
    rss_rows.push_back("| " + name + " | " + std::to_string(before / 1024) + " | " + std::to_string(peak / 1024) +
                       " | " + std::to_string(after / 1024) + " |");
    ran = ran && legit.heartbeats.requests > 0;
    // Leases lost are counted; the next attack starts from fresh leases.
    for (Agent& a : agents) {
      http::Client c(agent_url);
      if (legit.heartbeats.leases_lost > 0) (void)take_lease(c, a);
    }
  }
  std::printf("\n| attack | coordinator RSS before, MiB | peak | 2 s after |\n|---|---|---|---|\n");
  for (const auto& row : rss_rows) std::printf("%s\n", row.c_str());
  (*child)->stop(std::chrono::seconds(10));
  fs::remove_all(dir);
  return ran ? 0 : 1;
}
