#include "common/http/server.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>

#include "common/http/problem.h"

namespace benchfleet::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

constexpr auto kAsTuple = asio::as_tuple(asio::use_awaitable);
// After refusing a request, read (and drop) what the client still sends for a while, so closing
// does not reset the connection before the client has read the refusal.
constexpr std::size_t kLingerBytes = 1 << 20;
constexpr std::chrono::milliseconds kLingerTime{2000};

struct Connection {
  explicit Connection(tcp::socket socket) : stream(std::move(socket)) {}
  beast::tcp_stream stream;
  bool idle = false;  // waiting for the next request's first byte; touched on the strand only
};

// A request the server answers itself, before routing.
struct Refusal {
  bhttp::status status;
  std::string detail;
};

std::optional<Refusal> refusal_for(const error_code& ec, const ServerLimits& limits) {
  if (ec == bhttp::error::body_limit) {
    std::string detail = "the request body is larger than ";
    detail += std::to_string(limits.body_limit);
    detail += " bytes";
    return Refusal{bhttp::status::payload_too_large, std::move(detail)};
  }
  if (ec == bhttp::error::header_limit) {
    std::string detail = "the request line and headers are larger than ";
    detail += std::to_string(limits.header_limit);
    detail += " bytes";
    return Refusal{bhttp::status::request_header_fields_too_large, std::move(detail)};
  }
  if (ec == bhttp::error::end_of_stream || ec == bhttp::error::partial_message) return {};
  if (ec.category() == bhttp::make_error_code(bhttp::error::bad_method).category()) {
    std::string detail = "malformed HTTP request: ";
    detail += ec.message();
    return Refusal{bhttp::status::bad_request, std::move(detail)};
  }
  return {};  // timeout, reset, cancelled: nobody to answer
}

// Reads one request; answers "Expect: 100-continue" before reading the body.
asio::awaitable<error_code> read_request(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                         bhttp::request_parser<bhttp::string_body>& parser) {
  auto [ec, n] = co_await bhttp::async_read_header(stream, buffer, parser, kAsTuple);
  if (ec || parser.is_done()) co_return ec;
  if (beast::iequals(parser.get()[bhttp::field::expect], "100-continue")) {
    bhttp::response<bhttp::empty_body> go_on{bhttp::status::continue_, parser.get().version()};
    auto [wec, w] = co_await bhttp::async_write(stream, go_on, kAsTuple);
    if (wec) co_return wec;
  }
  auto [bec, b] = co_await bhttp::async_read(stream, buffer, parser, kAsTuple);
  co_return bec;
}

asio::awaitable<void> linger_close(beast::tcp_stream& stream, std::chrono::milliseconds limit) {
  error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream.expires_after(std::min(limit, kLingerTime));
  std::vector<char> scratch(16 * 1024);
  for (std::size_t dropped = 0; dropped < kLingerBytes;) {
    auto [ec, n] = co_await stream.async_read_some(asio::buffer(scratch), kAsTuple);
    if (ec) break;
    dropped += n;
  }
}

void log_exception(std::exception_ptr e, std::string_view what) {
  if (!e) return;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    spdlog::error("http {} failed: {}", what, ex.what());
  } catch (...) {
    spdlog::error("http {} failed with an unknown exception", what);
  }
}

}  // namespace

namespace detail {

struct ServerState {
  ServerState(asio::io_context& io, Router& r, ServerLimits l, RequestObserver o)
      : ioc(io), router(r), limits(l), observer(std::move(o)), acceptor(asio::make_strand(io)) {}

  asio::io_context& ioc;
  Router& router;
  const ServerLimits limits;
  const RequestObserver observer;
  tcp::acceptor acceptor;  // on its own strand: stop() closes it from any thread
  unsigned short port = 0;
  std::atomic<bool> started{false};
  std::atomic<bool> stopping{false};

  std::mutex mutex;  // guards the two members below
  std::uint64_t next_id = 0;
  std::unordered_map<std::uint64_t, std::weak_ptr<Connection>> connections;

  void observe(std::string_view route, unsigned status,
               std::chrono::steady_clock::time_point since) const {
    if (!observer) return;
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - since;
    try {
      observer(route, status, elapsed.count());
    } catch (const std::exception& e) {
      spdlog::warn("http request observer threw: {}", e.what());
    }
  }
};

}  // namespace detail

namespace {

struct Registration {
  std::shared_ptr<detail::ServerState> state;
  std::uint64_t id;
  ~Registration() {
    std::lock_guard lock(state->mutex);
    state->connections.erase(id);
  }
};

// The connection's I/O loop; runs on the connection's strand.
asio::awaitable<void> serve_connection(std::shared_ptr<detail::ServerState> st,
                                       std::shared_ptr<Connection> conn, std::uint64_t id) {
  const Registration registration{st, id};
  beast::tcp_stream& stream = conn->stream;
  const ServerLimits& limits = st->limits;
  beast::flat_buffer buffer;

  while (!st->stopping) {
    if (buffer.size() == 0) {
      stream.expires_after(limits.idle_timeout);
      conn->idle = true;
      auto [ec, n] = co_await stream.async_read_some(buffer.prepare(4096), kAsTuple);
      conn->idle = false;
      if (ec) break;  // peer closed, idle timeout or stop()
      buffer.commit(n);
    }

    const auto started = std::chrono::steady_clock::now();
    stream.expires_after(limits.request_timeout);
    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(
        static_cast<std::uint32_t>(std::min<std::size_t>(limits.header_limit, UINT32_MAX)));
    parser.body_limit(limits.body_limit);
    if (const error_code ec = co_await read_request(stream, buffer, parser)) {
      const std::optional<Refusal> refusal = refusal_for(ec, limits);
      if (!refusal) break;
      Request unread;
      unread.version(11);
      unread.keep_alive(false);
      Response res = problem(refusal->status, bhttp::obsolete_reason(refusal->status),
                             refusal->detail, unread);
      stream.expires_after(limits.request_timeout);
      auto [wec, w] = co_await bhttp::async_write(stream, res, kAsTuple);
      st->observe(kUnmatchedRoute, static_cast<unsigned>(refusal->status), started);
      if (!wec) co_await linger_close(stream, limits.request_timeout);
      break;
    }

    const Request req = parser.release();
    stream.expires_never();  // the handler may wait (long-poll); it bounds its own waits
    std::string route_name;
    Response res = co_await st->router.dispatch(req, route_name);
    const bool keep_alive = req.keep_alive() && res.keep_alive() && !st->stopping;
    res.keep_alive(keep_alive);
    const bool bodyless_status = res.result() == bhttp::status::not_modified ||
                                 res.result() == bhttp::status::no_content;
    if (bodyless_status) {
      // No body and no Content-Length: a 304's would have to be the 200's length (RFC 9110).
      res.body().clear();
      res.content_length(boost::none);
      res.chunked(false);
    } else {
      res.prepare_payload();
    }

    stream.expires_after(limits.request_timeout);
    error_code wec;
    if (req.method() == bhttp::verb::head) {
      // The GET answer's headers (Content-Length included), without its body.
      bhttp::response_serializer<bhttp::string_body> serializer(res);
      std::tie(wec, std::ignore) = co_await bhttp::async_write_header(stream, serializer, kAsTuple);
    } else {
      std::tie(wec, std::ignore) = co_await bhttp::async_write(stream, res, kAsTuple);
    }
    st->observe(route_name, res.result_int(), started);
    if (wec) break;
    if (!keep_alive) {
      error_code ignored;
      stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
      break;
    }
  }
  error_code ignored;
  stream.socket().close(ignored);
}

asio::awaitable<void> accept_connections(std::shared_ptr<detail::ServerState> st) {
  while (!st->stopping) {
    tcp::socket socket(asio::make_strand(st->ioc));
    auto [ec] = co_await st->acceptor.async_accept(socket, kAsTuple);
    if (st->stopping || !st->acceptor.is_open()) break;
    if (ec) {
      // e.g. out of file descriptors: back off rather than spin.
      spdlog::warn("http accept failed: {}", ec.message());
      asio::steady_timer pause(co_await asio::this_coro::executor, std::chrono::milliseconds(100));
      co_await pause.async_wait(kAsTuple);
      continue;
    }
    auto conn = std::make_shared<Connection>(std::move(socket));
    std::uint64_t id = 0;
    {
      std::lock_guard lock(st->mutex);
      id = st->next_id++;
      st->connections.emplace(id, conn);
    }
    auto executor = conn->stream.get_executor();
    asio::co_spawn(executor, serve_connection(st, std::move(conn), id),
                   [](std::exception_ptr e) { log_exception(e, "connection"); });
  }
}

}  // namespace

Server::Server(asio::io_context& ioc, const tcp::endpoint& endpoint, Router& router,
               ServerLimits limits, RequestObserver observer)
    : state_(std::make_shared<detail::ServerState>(ioc, router, limits, std::move(observer))) {
  tcp::acceptor& acceptor = state_->acceptor;
  acceptor.open(endpoint.protocol());
  acceptor.set_option(asio::socket_base::reuse_address(true));
  acceptor.bind(endpoint);
  acceptor.listen(asio::socket_base::max_listen_connections);
  state_->port = acceptor.local_endpoint().port();
}

Server::~Server() { stop(); }

Result<std::unique_ptr<Server>> Server::listen(asio::io_context& ioc, const tcp::endpoint& endpoint,
                                               Router& router, ServerLimits limits,
                                               RequestObserver observer) {
  try {
    return std::make_unique<Server>(ioc, endpoint, router, limits, std::move(observer));
  } catch (const boost::system::system_error& e) {
    std::string message = "cannot listen on ";
    message += endpoint.address().to_string();
    message += ':';
    message += std::to_string(endpoint.port());
    message += ": ";
    message += e.code().message();
    return Error{ErrorCode::kUnavailable, std::move(message), {}};
  }
}

unsigned short Server::port() const { return state_->port; }

void Server::start() {
  if (state_->stopping || state_->started.exchange(true)) return;
  asio::co_spawn(state_->acceptor.get_executor(), accept_connections(state_),
                 [](std::exception_ptr e) { log_exception(e, "accept loop"); });
}

void Server::stop() {
  if (state_->stopping.exchange(true)) return;
  asio::post(state_->acceptor.get_executor(), [st = state_] {
    error_code ignored;
    st->acceptor.close(ignored);
  });
  // A connection checks `stopping` on its strand before it goes idle, so each one either sees
  // the flag or is idle when this cancellation runs on the same strand.
  std::vector<std::shared_ptr<Connection>> open;
  {
    std::lock_guard lock(state_->mutex);
    for (auto& [id, weak] : state_->connections) {
      if (auto conn = weak.lock()) open.push_back(std::move(conn));
    }
  }
  for (auto& conn : open) {
    auto executor = conn->stream.get_executor();
    asio::post(executor, [conn = std::move(conn)] {
      if (conn->idle) conn->stream.cancel();
    });
  }
}

Result<tcp::endpoint> parse_listen_address(std::string_view text) {
  auto fail = [&] {
    std::string message = "listen address \"";
    message += text;
    message += "\": expected IP:PORT such as 127.0.0.1:8080, [::1]:8080 or 0.0.0.0:0";
    return Error{ErrorCode::kInvalidArgument, std::move(message), {}};
  };
  std::string_view host;
  std::string_view port_text;
  if (text.starts_with('[')) {
    const auto close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return fail();
    }
    host = text.substr(1, close - 1);
    port_text = text.substr(close + 2);
  } else {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return fail();
    host = text.substr(0, colon);
    if (host.find(':') != std::string_view::npos) return fail();  // IPv6 needs brackets
    port_text = text.substr(colon + 1);
  }
  unsigned port = 0;
  const char* end = port_text.data() + port_text.size();
  const auto [ptr, ec] = std::from_chars(port_text.data(), end, port);
  if (port_text.empty() || ec != std::errc() || ptr != end || port > 65535) return fail();
  error_code address_error;
  const auto address = asio::ip::make_address(std::string(host), address_error);
  if (address_error) return fail();
  return tcp::endpoint(address, static_cast<unsigned short>(port));
}

}  // namespace benchfleet::http
