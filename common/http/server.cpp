#include "common/http/server.h"

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <exception>
#include <map>
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
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/http/buffer_body.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/read.hpp>
#include <boost/beast/http/serializer.hpp>
#include <boost/beast/http/write.hpp>

#include "common/http/client_watch.h"
#include "common/http/connection_pool.h"
#include "common/http/problem.h"

namespace benchfleet::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = boost::beast::http;
using asio::ip::tcp;
using boost::system::error_code;

namespace {

using detail::Connection;

constexpr auto kAsTuple = asio::as_tuple(asio::use_awaitable);
// Connections answered 503 at once when max_connections is 0 (no total bound): beyond it a
// refused connection is closed without an answer.
constexpr std::size_t kRefusalsWithoutTotalBound = 1024;

// After refusing a request, read (and drop) what the client still sends for a while, so closing
// does not reset the connection before the client has read the refusal.
constexpr std::size_t kLingerBytes = 1 << 20;
constexpr std::chrono::milliseconds kLingerTime{2000};

// A request the server answers itself, before routing.
struct Refusal {
  bhttp::status status;
  std::string detail;
};

std::string body_too_large(std::size_t limit) {
  std::string detail = "the request body is larger than ";
  detail += std::to_string(limit);
  detail += " bytes";
  return detail;
}

std::optional<Refusal> refusal_for(const error_code& ec, const ServerLimits& limits, std::size_t body_limit) {
  if (ec == bhttp::error::body_limit) {
    return Refusal{bhttp::status::payload_too_large, body_too_large(body_limit)};
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

// Why a request's Host headers are unacceptable (RFC 9112 section 3.2), or nullopt.
std::optional<std::string> host_problem(const Request& head) {
  const std::size_t hosts = head.count(bhttp::field::host);
  if (hosts > 1) return "the request has more than one Host header";
  if (hosts == 0 && head.version() >= 11) {
    return "an HTTP/1.1 request needs a Host header (RFC 9112, section 3.2)";
  }
  return std::nullopt;
}

// Writes `res` (its headers only for a HEAD request); sets its payload headers first. With
// `streamed` bytes to follow (Exchange::BodyStream), its Content-Length counts them too.
asio::awaitable<error_code> write_response(beast::tcp_stream& stream, Response& res, bool head_only,
                                           std::size_t streamed = 0) {
  const bool bodyless_status = res.result() == bhttp::status::not_modified || res.result() == bhttp::status::no_content;
  if (bodyless_status) {
    // No body and no Content-Length: a 304's would have to be the 200's length (RFC 9110).
    res.body().clear();
    res.content_length(boost::none);
    res.chunked(false);
  } else {
    res.prepare_payload();
    if (streamed != 0) res.content_length(res.body().size() + streamed);
  }
  error_code ec;
  if (head_only) {
    // The GET answer's headers (Content-Length included), without its body.
    bhttp::response_serializer<bhttp::string_body> serializer(res);
    std::tie(ec, std::ignore) = co_await bhttp::async_write_header(stream, serializer, kAsTuple);
  } else {
    std::tie(ec, std::ignore) = co_await bhttp::async_write(stream, res, kAsTuple);
  }
  co_return ec;
}

// Writes a streamed body's chunks as the client takes them: one chunk in memory at a time.
// Returns an error when the source failed (the answer is then cut short) or the write did.
asio::awaitable<error_code> write_stream(beast::tcp_stream& stream, Exchange::BodyStream& body) {
  // Large enough that the hop to the source's executor costs little per byte (a GB-sized
  // artifact is 4,096 of them), small enough that a slow reader holds little.
  constexpr std::size_t kChunk = std::size_t{256} << 10;
  for (std::size_t left = body.size; left > 0;) {
    const std::size_t want = std::min(left, kChunk);
    std::string chunk = co_await asio::co_spawn(
        body.executor, [&]() -> asio::awaitable<std::string> { co_return body.next(want); }, asio::use_awaitable);
    if (chunk.empty() || chunk.size() > left) co_return make_error_code(asio::error::operation_aborted);
    auto [ec, n] = co_await asio::async_write(stream, asio::buffer(chunk), kAsTuple);
    if (ec) co_return ec;
    left -= chunk.size();
  }
  co_return error_code{};
}

// A body streamed into a route's sink (an upload) is read this much at a time.
constexpr std::size_t kSinkChunk = std::size_t{64} << 10;

// What reading a body into a sink came to: the request's head (its body empty), the read's
// error, and whether the sink stopped it before its end (the rest is then unread).
struct StreamedBody {
  error_code ec;
  std::optional<Request> request;
  bool stopped = false;
};

// Reads the rest of `parser`'s body into `sink`, a chunk at a time; `timeout` bounds each wait for
// more, not the whole upload. `parser` is moved from (into a parser of a buffer body).
asio::awaitable<StreamedBody> read_into_sink(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                             bhttp::request_parser<bhttp::string_body>& parser, BodySink& sink,
                                             std::size_t body_limit, std::chrono::milliseconds timeout) {
  StreamedBody out;
  bhttp::request_parser<bhttp::buffer_body> body_parser(std::move(parser));
  body_parser.body_limit(body_limit);
  std::string chunk(kSinkChunk, '\0');
  while (!body_parser.is_done()) {
    body_parser.get().body().data = chunk.data();
    body_parser.get().body().size = chunk.size();
    stream.expires_after(timeout);
    auto [ec, n] = co_await bhttp::async_read_some(stream, buffer, body_parser, kAsTuple);
    if (ec && ec != bhttp::error::need_buffer) {
      out.ec = ec;
      co_return out;
    }
    const std::size_t got = chunk.size() - body_parser.get().body().size;
    if (got > 0 && !sink.write(std::string_view(chunk.data(), got))) {
      out.stopped = true;
      break;
    }
  }
  out.request.emplace(std::move(body_parser.get().base()));
  co_return out;
}

asio::awaitable<void> linger_close(beast::tcp_stream& stream, std::chrono::milliseconds limit) {
  error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
  stream.expires_after(std::min(limit, kLingerTime));
  std::vector<char> scratch(std::size_t{16} * 1024);
  for (std::size_t dropped = 0; dropped < kLingerBytes;) {
    auto [ec, n] = co_await stream.async_read_some(asio::buffer(scratch), kAsTuple);
    if (ec) break;
    dropped += n;
  }
}

void log_exception(const std::exception_ptr& e, std::string_view what) {
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
      : ioc(io), router(r), limits(l), observer(std::move(o)), acceptor(asio::make_strand(io)), pool(l) {}

  asio::io_context& ioc;
  Router& router;
  const ServerLimits limits;
  const RequestObserver observer;
  tcp::acceptor acceptor;  // on its own strand: stop() closes it from any thread
  unsigned short port = 0;
  std::atomic<bool> started{false};
  std::atomic<bool> stopping{false};

  std::uint64_t next_id = 0;  // the accept loop's alone
  ConnectionPool pool;        // admission, shedding and trust of the connections served

  std::atomic<std::size_t> refused_connections{0};  // being answered 503 beyond max_connections

  // Bodies being read or handled, and responses built and not yet written: in all and per
  // client (ServerLimits' max_inflight_* bounds).
  struct Held {
    std::size_t body = 0, response = 0;
  };
  std::mutex held_mu;
  Held held_total;                                // under held_mu
  std::unordered_map<std::string, Held> held_by;  // under held_mu; a client holding nothing has no entry

  // Reserves `bytes` of body for `client`; false when they do not fit its share or the total. A
  // client holding no body is always admitted one when the total holds none, or when it fits.
  bool reserve_body(const std::string& client, std::size_t bytes) {
    std::lock_guard lock(held_mu);
    const std::size_t mine = held_by.contains(client) ? held_by[client].body : 0;
    if (limits.max_inflight_body_bytes_per_client != 0 && mine != 0 &&
        mine + bytes > limits.max_inflight_body_bytes_per_client) {
      return false;
    }
    if (limits.max_inflight_body_bytes != 0 && held_total.body != 0 &&
        held_total.body + bytes > limits.max_inflight_body_bytes) {
      return false;
    }
    held_total.body += bytes;
    held_by[client].body += bytes;
    return true;
  }
  void release_body(const std::string& client, std::size_t bytes) {
    std::lock_guard lock(held_mu);
    held_total.body -= bytes;
    release_locked(client, bytes, 0);
  }
  // Whether `client` may have another response built (a read): its share and the total have room.
  bool response_room(const std::string& client) {
    std::lock_guard lock(held_mu);
    if (limits.max_inflight_response_bytes != 0 && held_total.response >= limits.max_inflight_response_bytes) {
      return false;
    }
    const auto it = held_by.find(client);
    return limits.max_inflight_response_bytes_per_client == 0 || it == held_by.end() ||
           it->second.response < limits.max_inflight_response_bytes_per_client;
  }
  void hold_response(const std::string& client, std::size_t bytes) {
    std::lock_guard lock(held_mu);
    held_total.response += bytes;
    held_by[client].response += bytes;
  }
  void release_response(const std::string& client, std::size_t bytes) {
    std::lock_guard lock(held_mu);
    held_total.response -= bytes;
    release_locked(client, 0, bytes);
  }
  // A token bucket per address for anonymous reads (anonymous_reads_per_s_per_peer).
  struct Bucket {
    double tokens = 0;
    std::chrono::steady_clock::time_point at;
  };
  std::unordered_map<std::string, Bucket> read_buckets;  // under held_mu
  bool take_read(const asio::ip::address& peer) {
    const double rate = limits.anonymous_reads_per_s_per_peer;
    if (rate <= 0) return true;
    const auto now = std::chrono::steady_clock::now();
    std::lock_guard lock(held_mu);
    if (read_buckets.size() > 4096) {  // forget addresses whose bucket refilled (quiet ones)
      for (auto it = read_buckets.begin(); it != read_buckets.end();) {
        const double refill = std::chrono::duration<double>(now - it->second.at).count() * rate;
        it = it->second.tokens + refill >= 2 * rate ? read_buckets.erase(it) : std::next(it);
      }
    }
    auto [it, fresh] = read_buckets.try_emplace(peer.to_string(), Bucket{2 * rate, now});
    Bucket& b = it->second;
    if (!fresh) {
      b.tokens = std::min(2 * rate, b.tokens + std::chrono::duration<double>(now - b.at).count() * rate);
      b.at = now;
    }
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  void release_locked(const std::string& client, std::size_t body, std::size_t response) {
    const auto it = held_by.find(client);
    if (it == held_by.end()) return;
    it->second.body -= body;
    it->second.response -= response;
    if (it->second.body == 0 && it->second.response == 0) held_by.erase(it);
  }

  void observe(std::string_view route, unsigned status, std::chrono::steady_clock::time_point since) const {
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
  ~Registration() { state->pool.forget(id); }
};

// Body bytes held under ServerLimits::max_inflight_body_bytes until the request is answered.
struct BodyReservation {
  detail::ServerState* state;
  std::string client;
  std::size_t bytes = 0;
  BodyReservation(detail::ServerState* s, std::string c) : state(s), client(std::move(c)) {}
  BodyReservation(const BodyReservation&) = delete;
  BodyReservation& operator=(const BodyReservation&) = delete;
  ~BodyReservation() { release(); }
  void release() {
    if (bytes != 0) state->release_body(client, bytes);
    bytes = 0;
  }
};

// A built response's bytes, held until it was written (ServerLimits::max_inflight_response_bytes).
struct ResponseHold {
  detail::ServerState* state;
  std::string client;
  std::size_t bytes;
  ResponseHold(detail::ServerState* s, std::string c, std::size_t b) : state(s), client(std::move(c)), bytes(b) {
    if (bytes != 0) state->hold_response(client, bytes);
  }
  ResponseHold(const ResponseHold&) = delete;
  ResponseHold& operator=(const ResponseHold&) = delete;
  ~ResponseHold() {
    if (bytes != 0) state->release_response(client, bytes);
  }
  // From what a read was reserved at admission to what its answer holds.
  void resize(std::size_t now) {
    if (now == bytes) return;
    if (now != 0) state->hold_response(client, now);
    if (bytes != 0) state->release_response(client, bytes);
    bytes = now;
  }
};

// Who a request counts against: its credential when its guard found one (agents behind one
// address stay apart), else its address.
std::string client_of(const Request& head, bool credentialed, const asio::ip::address& peer) {
  if (credentialed) {
    const auto authorization = head[bhttp::field::authorization];
    return "token:" +
           std::to_string(std::hash<std::string_view>{}(std::string_view(authorization.data(), authorization.size())));
  }
  return "address:" + peer.to_string();
}

std::int64_t steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// A connection on probation (admitted into the reserve) has this long to send its first whole
// request, token included.
constexpr std::chrono::milliseconds kProbationHeaders{1000};

// Answers a request that could not be read (413 chunked body over the limit, 431, 400 malformed)
// and lingers before the caller closes; a timeout or reset is not answered.
asio::awaitable<void> answer_unreadable(detail::ServerState& st, beast::tcp_stream& stream, error_code ec,
                                        std::size_t body_limit, std::chrono::steady_clock::time_point started) {
  const std::optional<Refusal> refusal = refusal_for(ec, st.limits, body_limit);
  if (!refusal) co_return;
  Request unread;
  unread.version(11);
  unread.keep_alive(false);
  Response res = problem(refusal->status, bhttp::obsolete_reason(refusal->status), refusal->detail, unread);
  stream.expires_after(st.limits.request_timeout);
  auto [wec, w] = co_await bhttp::async_write(stream, res, kAsTuple);
  st.observe(kUnmatchedRoute, static_cast<unsigned>(refusal->status), started);
  if (!wec) co_await linger_close(stream, st.limits.request_timeout);
}

// A connection beyond the bounds: 503 before its request is read, then closed.
asio::awaitable<void> refuse_connection(std::shared_ptr<detail::ServerState> st, tcp::socket socket,
                                        std::string detail) {
  beast::tcp_stream stream(std::move(socket));
  Request unread;
  unread.version(11);
  unread.keep_alive(false);
  Response res = problem(bhttp::status::service_unavailable, "Service Unavailable", detail, unread);
  res.set(bhttp::field::retry_after, "1");
  res.prepare_payload();
  constexpr std::chrono::milliseconds kRefusalTime{1000};
  stream.expires_after(kRefusalTime);
  auto [wec, w] = co_await bhttp::async_write(stream, res, kAsTuple);
  st->observe(kUnmatchedRoute, res.result_int(), std::chrono::steady_clock::now());
  if (!wec) co_await linger_close(stream, kRefusalTime);
  error_code ignored;
  stream.socket().close(ignored);
  st->refused_connections.fetch_sub(1);
}

// The connection's I/O loop; runs on the connection's strand.
asio::awaitable<void> serve_connection(std::shared_ptr<detail::ServerState> st, std::shared_ptr<Connection> conn,
                                       std::uint64_t id) {
  const Registration registration{st, id};
  beast::tcp_stream& stream = conn->stream;
  const ServerLimits& limits = st->limits;
  beast::flat_buffer buffer;

  // The first request's headers, silence before them included, get first_request_timeout in all
  // (on probation, kProbationHeaders: the reserve is not held by a client that says nothing).
  stream.expires_after(conn->probation
                           ? std::min<std::chrono::milliseconds>(limits.first_request_timeout, kProbationHeaders)
                           : limits.first_request_timeout);
  for (bool first = true; !st->stopping; first = false) {
    if (buffer.size() == 0) {
      if (!first) stream.expires_after(limits.idle_timeout);
      conn->idle = true;
      auto [ec, n] = co_await stream.async_read_some(buffer.prepare(4096), kAsTuple);
      conn->idle = false;
      if (ec) break;  // peer closed, idle timeout, shed for a newcomer or stop()
      buffer.commit(n);
    }

    const auto started = std::chrono::steady_clock::now();
    if (!first) stream.expires_after(limits.header_timeout);
    bhttp::request_parser<bhttp::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(std::min<std::size_t>(limits.header_limit, UINT32_MAX)));
    parser.body_limit(boost::none);  // the route's limit is set once the headers are admitted
    conn->headers_since_ns = steady_ns();
    auto [header_ec, header_n] = co_await bhttp::async_read_header(stream, buffer, parser, kAsTuple);
    conn->headers_since_ns = 0;
    if (header_ec) {
      co_await answer_unreadable(*st, stream, header_ec, limits.body_limit, started);
      break;
    }

    // Admission, on the headers alone: nothing below reads the body of a refused request.
    const Request& head = parser.get();
    const bool head_only = head.method() == bhttp::verb::head;
    const bool body_pending = !parser.is_done();
    std::optional<Response> refusal;
    RouteDecision decision;
    if (auto why = host_problem(head)) {
      refusal = problem(bhttp::status::bad_request, "Bad Request", *why, head);
    } else {
      decision = co_await st->router.admit(head);
      if (decision.refusal()) refusal = std::move(decision.refusal());
      if (decision.credentialed()) {
        st->pool.trust(id);
        conn->probation = false;
      } else if (limits.credentials_only && !refusal) {
        refusal = problem(bhttp::status::unauthorized, "Unauthorized",
                          "this listener serves requests with a token only (agents, operators, readers); anonymous "
                          "reads and the dashboard are on the public one",
                          head);
      } else if (conn->probation && !refusal) {
        refusal = problem(bhttp::status::service_unavailable, "Service Unavailable",
                          "the server keeps its remaining connections for clients with a token; retry later", head);
        refusal->set(bhttp::field::retry_after, "1");
      }
    }
    const std::string_view route_name =
        decision.route_name().empty() ? kUnmatchedRoute : std::string_view(decision.route_name());
    const std::string client = client_of(head, decision.credentialed(), conn->peer);
    const bool read = head.method() == bhttp::verb::get || head_only;
    if (!refusal && read && !decision.credentialed() && !st->take_read(conn->peer)) {
      refusal = problem(bhttp::status::too_many_requests, "Too Many Requests",
                        "too many reads without a token from this address; retry later", head);
      refusal->set(bhttp::field::retry_after, "1");
    }
    if (!refusal && read && !st->response_room(client)) {
      refusal = problem(bhttp::status::service_unavailable, "Service Unavailable",
                        "the server holds too many answers its readers have not read yet; retry later", head);
      refusal->set(bhttp::field::retry_after, "1");
    }
    // A read holds its share of the answer budgets from its admission, before its answer exists:
    // reads admitted at once cannot all pass the check before any of them is counted.
    constexpr std::size_t kReadReserve = std::size_t{1} << 20;
    std::optional<ResponseHold> holding;
    if (!refusal && read) holding.emplace(st.get(), client, kReadReserve);
    BodyReservation reservation(st.get(), client);
    std::size_t body_limit = limits.body_limit;
    // A route with a sink takes its body a chunk at a time (an upload): its own limit, and only a
    // chunk of it held at once.
    const bool to_sink = body_pending && decision.streams_body();
    std::shared_ptr<BodySink> sink;
    if (!refusal && body_pending) {
      const std::size_t route_limit = decision.body_limit().value_or(limits.body_limit);
      const std::size_t limit = to_sink ? route_limit : std::min(limits.body_limit, route_limit);
      body_limit = limit;
      const boost::optional<std::uint64_t> length = parser.content_length();
      if (length && *length > limit) {
        refusal = problem(bhttp::status::payload_too_large, "Payload Too Large", body_too_large(limit), head);
      } else if (const std::size_t bytes = to_sink  ? kSinkChunk
                                           : length ? static_cast<std::size_t>(*length)
                                                    : limit;
                 !st->reserve_body(client, bytes)) {
        refusal = problem(bhttp::status::service_unavailable, "Service Unavailable",
                          "the server is receiving too many request bodies at once; retry later", head);
        refusal->set(bhttp::field::retry_after, "1");
      } else {
        reservation.bytes = bytes;
        parser.body_limit(limit);
        if (to_sink && !(sink = decision.make_body_sink(head))) {
          refusal = problem(bhttp::status::service_unavailable, "Service Unavailable",
                            "the server cannot take this upload now; retry later", head);
          refusal->set(bhttp::field::retry_after, "1");
        }
      }
    }
    if (refusal) {
      // Without a body the connection stays usable; with one left unread it does not. One on
      // probation gives its reserved slot back.
      const bool keep_alive = !body_pending && head.keep_alive() && !st->stopping && !conn->probation;
      refusal->keep_alive(keep_alive);
      stream.expires_after(limits.request_timeout);
      const error_code wec = co_await write_response(stream, *refusal, head_only);
      st->observe(route_name.empty() ? kUnmatchedRoute : route_name, refusal->result_int(), started);
      conn->answered = true;
      if (wec) break;
      if (body_pending) {
        co_await linger_close(stream, limits.request_timeout);
        break;
      }
      if (!keep_alive) {
        error_code ignored;
        stream.socket().shutdown(tcp::socket::shutdown_send, ignored);
        break;
      }
      continue;
    }

    std::optional<Request> streamed_request;  // a sink's request: its header, an empty body
    bool sink_failed = false;                 // the sink stopped the upload: the rest is unread
    if (body_pending) {
      stream.expires_after(limits.request_timeout);
      if (beast::iequals(head[bhttp::field::expect], "100-continue")) {
        bhttp::response<bhttp::empty_body> go_on{bhttp::status::continue_, head.version()};
        if (auto [wec, w] = co_await bhttp::async_write(stream, go_on, kAsTuple); wec) break;
      }
      if (sink) {
        StreamedBody streamed =
            co_await read_into_sink(stream, buffer, parser, *sink, body_limit, limits.request_timeout);
        if (streamed.ec) {
          co_await answer_unreadable(*st, stream, streamed.ec, body_limit, started);
          break;
        }
        sink_failed = streamed.stopped;
        streamed_request = std::move(streamed.request);
      } else if (auto [ec, n] = co_await bhttp::async_read(stream, buffer, parser, kAsTuple); ec) {
        co_await answer_unreadable(*st, stream, ec, body_limit, started);
        break;
      }
    }

    Request req = streamed_request ? std::move(*streamed_request) : parser.release();
    stream.expires_never();  // the handler may wait (long-poll); it bounds its own waits
    // The handler learns through `exchange` whether its client left while it waited.
    const auto exchange = std::make_shared<Exchange>();
    if (sink) exchange->set_body_sink(std::move(sink));
    Response res =
        co_await handle_watching_client(stream, buffer, *exchange, st->router.handle(decision, req, exchange));
    const bool keep_alive = req.keep_alive() && res.keep_alive() && !st->stopping && !sink_failed;
    res.keep_alive(keep_alive);
    // The body is handled: its bytes are given back before the answer is written, so a client
    // holding its answer finds them free for its next body.
    std::string().swap(req.body());
    reservation.release();
    stream.expires_after(limits.request_timeout);
    std::optional<Exchange::BodyStream> streamed = exchange->take_stream();
    // A streamed answer holds a chunk and its source's buffers, not its whole: counted as
    // kStreamHold, so one client's slow readers of large answers are still bounded in number.
    constexpr std::size_t kStreamHold = std::size_t{4} << 20;
    if (!holding) holding.emplace(st.get(), client, 0);
    holding->resize(res.body().size() + (streamed.has_value() ? kStreamHold : 0));
    const bool ok_to_stream = streamed && streamed->size != 0 && res.result() == bhttp::status::ok;
    error_code wec = co_await write_response(stream, res, head_only, ok_to_stream ? streamed->size : 0);
    if (!wec && ok_to_stream && !head_only) {
      wec = co_await write_stream(stream, *streamed);
      if (wec == asio::error::operation_aborted) {  // not a client that left: the source failed
        spdlog::warn("http {}: the streamed answer's source failed; the answer was cut short", decision.route_name());
      }
    }
    exchange->response_written(!wec);
    conn->answered = true;
    st->observe(decision.route_name(), res.result_int(), started);
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
    error_code peer_error;
    const asio::ip::address peer = socket.remote_endpoint(peer_error).address();
    if (peer_error) continue;  // already gone
    auto conn = std::make_shared<Connection>(std::move(socket));
    conn->peer = peer;
    const std::uint64_t id = st->next_id++;
    if (std::optional<std::string> why = st->pool.admit(id, conn, peer)) {
      // As many refusals answered at once as connections served, or kRefusalsWithoutTotalBound
      // when there is no total bound (max_connections 0: only the per-address share refuses).
      const std::size_t bound =
          st->limits.max_connections != 0 ? st->limits.max_connections : kRefusalsWithoutTotalBound;
      if (st->refused_connections.fetch_add(1) >= bound) {
        st->refused_connections.fetch_sub(1);
        error_code ignored;
        conn->stream.socket().close(ignored);  // far beyond the bound: not even an answer
        continue;
      }
      auto executor = conn->stream.get_executor();
      asio::co_spawn(executor, refuse_connection(st, std::move(conn->stream.socket()), std::move(*why)),
                     [](const std::exception_ptr& e) { log_exception(e, "connection refusal"); });
      continue;
    }
    auto executor = conn->stream.get_executor();
    asio::co_spawn(executor, serve_connection(st, std::move(conn), id),
                   [](const std::exception_ptr& e) { log_exception(e, "connection"); });
  }
}

}  // namespace

Server::Server(asio::io_context& ioc, const tcp::endpoint& endpoint, Router& router, ServerLimits limits,
               RequestObserver observer)
    : state_(std::make_shared<detail::ServerState>(ioc, router, limits, std::move(observer))) {
  tcp::acceptor& acceptor = state_->acceptor;
  acceptor.open(endpoint.protocol());
  acceptor.set_option(asio::socket_base::reuse_address(true));
  acceptor.bind(endpoint);
  acceptor.listen(asio::socket_base::max_listen_connections);
  state_->port = acceptor.local_endpoint().port();
}

Server::~Server() { stop(); }

Result<std::unique_ptr<Server>> Server::listen(asio::io_context& ioc, const tcp::endpoint& endpoint, Router& router,
                                               ServerLimits limits, RequestObserver observer) {
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
                 [](const std::exception_ptr& e) { log_exception(e, "accept loop"); });
}

void Server::stop() {
  if (state_->stopping.exchange(true)) return;
  asio::post(state_->acceptor.get_executor(), [st = state_] {
    error_code ignored;
    st->acceptor.close(ignored);
  });
  // A connection checks `stopping` on its strand before it goes idle, so each one either sees
  // the flag or is idle when this cancellation runs on the same strand.
  for (auto& conn : state_->pool.open_connections()) {
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
