// HTTP for simulated clients driven as Boost.Asio C++20 coroutines: one keep-alive HTTP/1.1
// connection per coroutine and one request/response exchange at a time on it. Shared by the
// coordinator load benchmark (bench/load_agent.h) and the coordinator kill fault test
// (tests/fault/sim_fleet.h), whose simulated agents speak the real agent protocol with it.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/verb.hpp>

namespace benchfleet::testing {

// One keep-alive connection, opened on first use and again after any failure. Used by one
// coroutine at a time (on its strand); not thread-safe.
struct SimConnection {
  explicit SimConnection(const boost::asio::any_io_executor& ex) : stream(ex) {}
  boost::beast::tcp_stream stream;
  boost::beast::flat_buffer buffer;
  bool open = false;
};

struct SimReply {
  unsigned status = 0;  // 0: no answer (transport error, see `error`)
  std::string body;
  std::string error;
  std::chrono::steady_clock::time_point answered_at;  // when the whole answer was read

  bool transport_error() const { return status == 0; }
  // "connect: Connection refused" or "HTTP 409 {...}" (the body cut at 300 bytes), for messages.
  std::string describe() const;
};

// Shuts the connection down; the next exchange connects again.
void close(SimConnection& c);

// Sends one request on `c` (connecting first when needed) and reads the whole response, all
// bounded by `timeout` (connecting by 10 s). `body`, when not empty, goes as application/json;
// `token`, when not empty, as "Authorization: Bearer". Never retries: whether a request may be
// repeated is the caller's protocol question (a repeated lease poll without its request id
// would be a new poll). Any failure closes the connection.
boost::asio::awaitable<SimReply> exchange(SimConnection& c, const boost::asio::ip::tcp::endpoint& ep,
                                          boost::beast::http::verb method, std::string target, std::string body,
                                          std::string_view token,
                                          std::chrono::milliseconds timeout = std::chrono::seconds(60));

// A coroutine sleep on the caller's executor.
boost::asio::awaitable<void> pause(std::chrono::milliseconds d);

}  // namespace benchfleet::testing
