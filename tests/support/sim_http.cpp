#include "tests/support/sim_http.h"

#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/string_body.hpp>
#include <boost/beast/http/write.hpp>

namespace benchfleet::testing {
namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using tcp = asio::ip::tcp;
constexpr auto kTuple = asio::as_tuple(asio::use_awaitable);

}  // namespace

std::string SimReply::describe() const {
  if (status == 0) return error;
  return "HTTP " + std::to_string(status) + " " + body.substr(0, 300);
}

void close(SimConnection& c) {
  beast::error_code ignored;
  c.stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  c.stream.close();
  c.buffer.clear();
  c.open = false;
}

asio::awaitable<SimReply> exchange(SimConnection& c, const tcp::endpoint& ep, bhttp::verb method, std::string target,
                                   std::string body, std::string_view token, std::chrono::milliseconds timeout) {
  SimReply out;
  if (!c.open) {
    c.stream.expires_after(std::chrono::seconds(10));
    auto [ec] = co_await c.stream.async_connect(ep, kTuple);
    if (ec) {
      close(c);
      out.error = "connect: " + ec.message();
      out.answered_at = std::chrono::steady_clock::now();
      co_return out;
    }
    c.stream.socket().set_option(tcp::no_delay(true));
    c.open = true;
  }
  bhttp::request<bhttp::string_body> req{method, target, 11};
  req.set(bhttp::field::host, ep.address().to_string() + ":" + std::to_string(ep.port()));
  if (!body.empty()) req.set(bhttp::field::content_type, "application/json");
  if (!token.empty()) req.set(bhttp::field::authorization, "Bearer " + std::string(token));
  req.keep_alive(true);
  req.body() = std::move(body);
  req.prepare_payload();

  c.stream.expires_after(timeout);
  auto [wec, written] = co_await bhttp::async_write(c.stream, req, kTuple);
  if (wec) {
    close(c);
    out.error = "write " + target + ": " + wec.message();
    out.answered_at = std::chrono::steady_clock::now();
    co_return out;
  }
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(64 << 20);
  auto [rec, read] = co_await bhttp::async_read(c.stream, c.buffer, parser, kTuple);
  out.answered_at = std::chrono::steady_clock::now();
  if (rec) {
    close(c);
    out.error = "read " + target + ": " + rec.message();
    co_return out;
  }
  c.stream.expires_never();
  auto res = parser.release();
  out.status = res.result_int();
  out.body = std::move(res.body());
  if (!res.keep_alive()) close(c);
  co_return out;
}

asio::awaitable<void> pause(std::chrono::milliseconds d) {
  asio::steady_timer timer(co_await asio::this_coro::executor, d);
  co_await timer.async_wait(kTuple);
}

}  // namespace benchfleet::testing
