// body_flood: the memory-amplification attack against a real benchfleet-coordinator:
// N connections at once each send a request with a big body and no token, and the coordinator's
// resident memory is read from /proc before, during (peak) and after. Before the fix, bodies were
// read whole before the token was checked (40 x 16 MiB took it from 80 MB to 686 MB); now each
// request is answered 401 on its headers and the body is never read. Prints figures; the exit
// code only says whether the coordinator answered every request and survived.
//
//   body_flood [--connections 40] [--body-mib 16] [--target /api/v1/jobs/1/result] [--agent]
//   --agent enrols first and sends that agent's valid token: an authenticated flood, which the
//   coordinator's max_inflight_body_bytes bounds instead (503 beyond it).
//   BENCHFLEET_COORDINATOR_BIN=<another build> body_flood   # the same attack on another binary
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>
#include <nlohmann/json.hpp>

#include "common/http/client.h"
#include "tests/support/coordinator_child.h"

namespace {

using benchfleet::testing::coordinator_binary;
namespace asio = boost::asio;
namespace fs = std::filesystem;

constexpr const char* kOperatorToken = "flood-operator-token";
constexpr const char* kEnrollmentToken = "flood-enrollment-token";

struct Options {
  int connections = 40;
  int body_mib = 16;
  std::string target = "/api/v1/jobs/1/result";  // the route with the largest body limit
  bool agent = false;
  std::string authorization;  // "Bearer <agent token>" with --agent
  double settle_s = 2;
  std::string coordinator = coordinator_binary();
};

// A /proc/<pid>/status field in kB ("VmRSS", "VmHWM"); -1 when unreadable.
long proc_kb(pid_t pid, const std::string& field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with(field + ":")) return std::stol(line.substr(field.size() + 1));
  }
  return -1;
}

double mb(long kb) { return kb < 0 ? -1 : kb / 1024.0; }

struct Outcome {
  int status = 0;             // 0: no answer
  std::size_t body_sent = 0;  // bytes of body the server let through before answering
};

// Sends the headers, then the body in chunks while no answer has arrived; reads the status.
Outcome attack(unsigned short port, const Options& o) {
  Outcome out;
  try {
    asio::io_context io;
    asio::ip::tcp::socket socket(io);
    socket.connect({asio::ip::make_address("127.0.0.1"), port});
    const std::size_t body = static_cast<std::size_t>(o.body_mib) << 20;
    std::string head = "POST " + o.target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n";
    if (!o.authorization.empty()) head += "Authorization: " + o.authorization + "\r\n";
    head += "Content-Length: " + std::to_string(body) + "\r\n\r\n";
    asio::write(socket, asio::buffer(head));
    const std::string chunk(64 << 10, ' ');
    boost::system::error_code ec;
    while (out.body_sent < body) {
      pollfd p{socket.native_handle(), POLLIN, 0};
      if (::poll(&p, 1, 0) > 0) break;  // answered (or closed) before the whole body was sent
      const std::size_t n = std::min(chunk.size(), body - out.body_sent);
      asio::write(socket, asio::buffer(chunk.data(), n), ec);
      if (ec) break;
      out.body_sent += n;
    }
    std::string reply;
    asio::read_until(socket, asio::dynamic_buffer(reply), "\r\n", ec);
    if (reply.starts_with("HTTP/1.1 ") && reply.size() >= 12) out.status = std::stoi(reply.substr(9, 3));
  } catch (const std::exception&) {
  }
  return out;
}

// Enrols one agent; its "Bearer <token>", or "" on failure.
std::string enrol_agent(unsigned short port) {
  benchfleet::http::Client client("http://127.0.0.1:" + std::to_string(port));
  const nlohmann::json descriptor = {
      {"name", "flood"},
      {"hostname", "flood.test"},
      {"version", "flood"},
      {"slots", {{{"id", "gpu0"}, {"gpu_class", "a100"}}}},
      {"torch_builds",
       {{{"name", "stable"}, {"version", "2.0.0"}, {"runtimes", {{{"runtime", "libtorch"}, {"modes", {"eager"}}}}}}}}};
  auto res = client.post_json("/api/v1/agents/enroll", descriptor, kEnrollmentToken);
  if (!res.ok() || res->status != 201) return {};
  auto body = res->json();
  if (!body.ok() || !body->contains("agent_token")) return {};
  return "Bearer " + body->at("agent_token").get<std::string>();
}

int run(Options o) {
  const fs::path dir = fs::temp_directory_path() / ("body_flood." + std::to_string(::getpid()));
  auto child =
      benchfleet::testing::start_bench_coordinator(dir.string(), o.coordinator, kOperatorToken, kEnrollmentToken);
  if (!child.ok()) {
    std::cerr << child.error().describe() << "\n";
    return 1;
  }
  const pid_t pid = (*child)->pid();
  const auto port = static_cast<unsigned short>((*child)->port());
  if (o.agent && (o.authorization = enrol_agent(port)).empty()) {
    std::cerr << "enrolment failed\n";
    return 1;
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const long before = proc_kb(pid, "VmRSS");

  std::atomic<bool> done{false};
  std::atomic<long> peak{before};
  std::thread sampler([&] {
    while (!done) {
      peak = std::max(peak.load(), proc_kb(pid, "VmRSS"));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  const auto started = std::chrono::steady_clock::now();
  std::vector<Outcome> outcomes(static_cast<std::size_t>(o.connections));
  std::vector<std::thread> attackers;
  for (int i = 0; i < o.connections; ++i) {
    attackers.emplace_back([&, i] { outcomes[static_cast<std::size_t>(i)] = attack(port, o); });
  }
  for (auto& t : attackers) t.join();
  const std::chrono::duration<double> took = std::chrono::steady_clock::now() - started;
  std::this_thread::sleep_for(std::chrono::duration<double>(o.settle_s));
  done = true;
  sampler.join();
  const long after = proc_kb(pid, "VmRSS");
  const long hwm = proc_kb(pid, "VmHWM");
  const bool alive = (*child)->running();

  std::map<int, int> statuses;
  std::size_t sent = 0;
  for (const Outcome& out : outcomes) {
    ++statuses[out.status];
    sent += out.body_sent;
  }
  std::printf("body_flood: %d connections x %d MiB to POST %s (%s), coordinator %s\n", o.connections, o.body_mib,
              o.target.c_str(), o.agent ? "a valid agent token" : "no token", o.coordinator.c_str());
  std::printf("  answers:");
  for (const auto& [status, n] : statuses) std::printf(" %dx %s", n, status ? std::to_string(status).c_str() : "none");
  std::printf(
      "\n  body bytes the clients got to send (socket buffers and the drain before close included): "
      "%.1f MiB of %.1f MiB, in %.2f s\n",
      sent / 1048576.0, static_cast<double>(o.connections) * o.body_mib, took.count());
  std::printf("  coordinator RSS: before %.1f MB, peak %.1f MB (VmHWM %.1f MB), %.1f s after %.1f MB\n", mb(before),
              mb(peak), mb(hwm), o.settle_s, mb(after));
  (*child)->stop();
  std::error_code ec;
  fs::remove_all(dir, ec);
  return alive && statuses.count(0) == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{
      "body_flood: N connections each sending a big body without a token; the coordinator's RSS before, "
      "peak and after"};
  app.add_option("--connections", o.connections, "concurrent connections")->check(CLI::Range(1, 1000));
  app.add_option("--body-mib", o.body_mib, "Content-Length of each body, MiB")->check(CLI::Range(1, 1024));
  app.add_option("--target", o.target, "the POST route attacked");
  app.add_flag("--agent", o.agent, "enrol and send the agent's valid token (an authenticated flood)");
  app.add_option("--settle-s", o.settle_s, "seconds to wait before the RSS after");
  app.add_option("--coordinator", o.coordinator, "the benchfleet-coordinator binary");
  CLI11_PARSE(app, argc, argv);
  return run(o);
}
