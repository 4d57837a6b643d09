// libFuzzer target: the HTTP request path. Each input is written, as raw bytes, to a fresh
// connection of a real http::Server (common/http/server.cpp: request parsing, Host and header
// admission, routing, guards, per-route body limits, keep-alive, pipelining, refusals) running in
// this process on 127.0.0.1, with routes shaped like the coordinator's: a guarded POST whose
// handler parses its JSON body, a GET with a path parameter and a query, a GET whose answer is
// streamed after its head (and counted against the answer budgets), and a fallback; the
// per-client body and answer budgets and the anonymous read rate small enough to be reached. The
// input's end is the client's end of sending; the answer is read until the server closes.
// Properties: no crash or sanitizer report in the server; every answer it sends starts with
// "HTTP/1.x <status>"; no 500 (a handler or the server failing on some input); the server
// always ends the exchange (answers, then closes) within its own bounds.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include <boost/asio/io_context.hpp>

#include "common/http/problem.h"
#include "common/http/router.h"
#include "common/http/server.h"
#include "common/json_reader.h"
#include "fuzz/fuzz_support.h"

namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using benchfleet::http::Request;
using benchfleet::http::Response;
using benchfleet::http::RouteMatch;

asio::awaitable<Response> create_run(const Request& req, const RouteMatch&) {
  auto body = benchfleet::parse_json(req.body());
  if (!body.ok())
    co_return benchfleet::http::problem(bhttp::status::bad_request, "Bad Request", body.error().message, req);
  co_return benchfleet::http::json_response(bhttp::status::created, {{"members", body->size()}}, req);
}

asio::awaitable<Response> report(const Request& req, const RouteMatch& m) {
  nlohmann::json out = {{"id", m.params.at("id")}, {"query", m.query}};
  co_return benchfleet::http::json_response(bhttp::status::ok, out, req);
}

// An answer streamed after its head (Exchange::BodyStream), as the coordinator streams a large
// result's samples: `?bytes=N` of them (at most 1 MiB), a chunk at a time.
asio::awaitable<Response> streamed(const Request& req, const RouteMatch& m) {
  std::size_t bytes = 4096;
  if (auto it = m.query.find("bytes"); it != m.query.end()) {
    bytes = std::min<std::size_t>(std::strtoull(it->second.c_str(), nullptr, 10), std::size_t{1} << 20);
  }
  if (m.exchange && bytes != 0) {
    benchfleet::http::Exchange::BodyStream body;
    body.size = bytes;
    body.executor = co_await asio::this_coro::executor;
    body.next = [left = bytes](std::size_t max) mutable {
      const std::size_t n = std::min(left, max);
      left -= n;
      return std::string(n, '7');
    };
    m.exchange->stream_after(std::move(body));
  }
  co_return benchfleet::http::text_response(bhttp::status::ok, "[", req, "application/json");
}

asio::awaitable<Response> web(const Request& req, const RouteMatch& m) {
  co_return benchfleet::http::text_response(bhttp::status::ok, std::to_string(m.segments.size()), req);
}

asio::awaitable<benchfleet::http::Admission> bearer(const Request& head, const RouteMatch&) {
  using benchfleet::http::Admission;
  if (head[bhttp::field::authorization] == "Bearer fuzz-token") co_return Admission::admitted(true);
  co_return Admission::refused(
      benchfleet::http::problem(bhttp::status::unauthorized, "Unauthorized", "a bearer token is required", head));
}

struct Fixture {
  asio::io_context ioc;
  benchfleet::http::Router router;
  std::unique_ptr<benchfleet::http::Server> server;
  unsigned short port = 0;

  Fixture() {
    router.add(bhttp::verb::post, "/api/v1/runs", "runs.create", create_run, {bearer, 4096});
    router.add(bhttp::verb::get, "/api/v1/runs/{id}/report", "runs.report", report);
    router.add(bhttp::verb::get, "/api/v1/results/{id}", "results.get", streamed);
    router.set_fallback("web", web);
    benchfleet::http::ServerLimits limits;
    limits.body_limit = 64 * 1024;
    limits.request_timeout = std::chrono::milliseconds(300);
    limits.idle_timeout = std::chrono::milliseconds(300);
    limits.first_request_timeout = std::chrono::milliseconds(300);
    limits.header_timeout = std::chrono::milliseconds(300);
    limits.max_connections = 16;
    limits.max_inflight_body_bytes = 256 * 1024;
    limits.max_inflight_body_bytes_per_client = 64 * 1024;
    // Small enough that inputs reach the answer budgets and the read rate limit.
    limits.max_inflight_response_bytes = 2 << 20;
    limits.max_inflight_response_bytes_per_client = 1 << 20;
    limits.anonymous_reads_per_s_per_peer = 200;
    auto listening = benchfleet::http::Server::listen(ioc, {asio::ip::make_address("127.0.0.1"), 0}, router, limits);
    if (!listening.ok()) benchfleet::fuzz::fail("listen", listening.error().message);
    server = std::move(*listening);
    port = server->port();
    server->start();
    std::thread([this] { ioc.run(); }).detach();  // lives as long as the fuzzing process
  }
};

Fixture& fixture() {
  static Fixture* f = new Fixture;  // never destroyed: libFuzzer exits with the thread running
  return *f;
}

// Every answer in what the server sent starts with a status line; none is a 500.
void check_answers(const std::string& got) {
  if (got.empty()) return;  // closed without answering (e.g. nothing but whitespace was sent)
  if (got.rfind("HTTP/1.", 0) != 0)
    benchfleet::fuzz::fail("answer", "does not start with a status line: " + got.substr(0, 200));
  for (std::size_t at = got.find("HTTP/1."); at != std::string::npos; at = got.find("\r\nHTTP/1.", at + 1)) {
    const std::size_t line = got[at] == '\r' ? at + 2 : at;
    if (got.compare(line + 9, 3, "500") == 0) benchfleet::fuzz::fail("answer", "a 500: " + got.substr(line, 400));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Fixture& f = fixture();
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  timeval timeout{2, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof timeout);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(f.port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return 0;
  }
  for (std::size_t sent = 0; sent < size;) {
    const ssize_t n = ::send(fd, data + sent, size - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // the server answered and closed early: what it sent is read below
    sent += static_cast<std::size_t>(n);
  }
  ::shutdown(fd, SHUT_WR);
  std::string got;
  char buffer[4096];
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (std::chrono::steady_clock::now() < give_up) {
    const ssize_t n = ::recv(fd, buffer, sizeof buffer, 0);
    if (n <= 0) break;
    got.append(buffer, static_cast<std::size_t>(n));
  }
  ::close(fd);
  check_answers(got);
  return 0;
}
