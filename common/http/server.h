// HTTP/1.1 server: one coroutine per connection doing I/O only; the Router turns each request
// into a response. Every read and write is bounded; handlers may wait as long as they need
// (long-poll) without holding up other connections.
//
// A request's body is read only once its headers were admitted: a valid Host (400 without one
// on HTTP/1.1), a route (404/405), the route's guard (e.g. 401/403), the route's body limit
// (413) and room under max_inflight_body_bytes (503). A request refused before its body was read
// is answered and its connection closed (the unread body makes it unusable); one without a body
// keeps its connection.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string_view>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "common/http/router.h"
#include "common/result.h"

namespace benchfleet::http {

struct ServerLimits {
  // Larger body -> 413. A route's RouteOptions::body_limit may lower it, never raise it.
  std::size_t body_limit = 1 << 20;
  std::size_t header_limit = std::size_t{16} * 1024;  // larger request line + headers -> 431
  // Bounds reading one request's body and, separately, writing its response; reset per request.
  // The handler's own wait is not bounded here (long-poll).
  std::chrono::milliseconds request_timeout{30000};
  // How long a keep-alive connection may wait for the first byte of its next request.
  std::chrono::milliseconds idle_timeout{60000};
  // How long a new connection may take to send its first request's headers, silence included: a
  // client that connects and says nothing holds its slot this long at most.
  std::chrono::milliseconds first_request_timeout{5000};
  // From a later request's first byte to the end of its headers (its body then has
  // request_timeout): headers sent a byte at a time hold a slot this long at most.
  std::chrono::milliseconds header_timeout{10000};
  // Connections served at once (long-polls included); 0: unbounded. A connection beyond the
  // bound is answered at once with 503 problem+json, "Retry-After: 1" and "Connection: close",
  // without its request being read; beyond twice the bound it is closed at accept unanswered.
  //
  // A connection is anonymous until one of its requests shows a credential (its route's guard
  // says so, RouteDecision::credentialed()); from then on it is trusted. Anonymous connections
  // may hold max_connections - reserved_connections slots, and at most max_connections_per_peer
  // from one peer address (0: unbounded); trusted ones count only against max_connections.
  // A new connection that finds its pool full takes the slot of the oldest anonymous connection
  // that is idle (waiting for its next request, or silent since it connected) with no bytes
  // waiting to be read, of its own address when that address is at its bound: that one is
  // closed. When none is idle, the newcomer is refused; when only the reserve has room, it is
  // admitted on probation and must show a credential on its first request (else 503, closed).
  // So clients that connect and wait cannot keep agents and operators out: a trusted connection
  // is never closed for another, and an anonymous one holds a slot against newcomers only while
  // it is sending or being answered (bounded by first_request_timeout, header_timeout and
  // request_timeout).
  std::size_t max_connections = 2048;
  std::size_t reserved_connections = 0;  // must be below max_connections when that is set
  std::size_t max_connections_per_peer = 0;
  // Request bodies held at once across connections (being read or handled), each counted by its
  // Content-Length (a chunked one by its route's limit); 0: unbounded. A request that would go
  // beyond is answered 503 with "Retry-After: 1" without its body being read. One body is always
  // admitted when none is held, so a body_limit above this bound still gets through alone.
  std::size_t max_inflight_body_bytes = std::size_t{64} << 20;
  // Of those, what one client may hold at once (0: no per-client bound): a client is its token
  // (the Authorization header of a request whose guard found a credential) or else its address.
  // A client holding nothing is always admitted one body (as above), so one agent's slow or large
  // bodies delay that agent, not the others.
  std::size_t max_inflight_body_bytes_per_client = std::size_t{16} << 20;
  // Response bodies built and not yet written (a slow reader's answer waits in memory until it
  // reads it), across connections and per client; 0: unbounded. While they are at their bound a
  // new request of that client (or any, for the total) is answered 503 with "Retry-After: 1"
  // before its handler runs, so slow readers of large answers cost a bounded amount of memory.
  std::size_t max_inflight_response_bytes = std::size_t{256} << 20;
  std::size_t max_inflight_response_bytes_per_client = std::size_t{64} << 20;
  // Reads (GET, HEAD) without a credential from one address: at most this many a second, in
  // bursts of up to twice as many; beyond, 429 with "Retry-After: 1" before anything is done for
  // them. 0: no bound. (Agents and operators, showing tokens, are not counted.)
  double anonymous_reads_per_s_per_peer = 100;
  // Only requests whose guard finds a credential are served (a listener for agents and
  // operators apart from the public one, with its own connections): any other is answered 401.
  bool credentials_only = false;
};

// Called after each response is written (or failed to be written), with the route name
// (kUnmatchedRoute when none), the status and the seconds from the request's first byte.
// May be called from several threads at once.
using RequestObserver = std::function<void(std::string_view route_name, unsigned status, double seconds)>;

// Usage:
//   Server server(ioc, endpoint, router, limits);
//   server.start();
//   ... ioc.run() on one or more threads; it returns after stop() once every connection closed.
//
// Lifetime: `router` must outlive every run() of `ioc`. The Server may be destroyed while
// connections are open only after `ioc` has stopped running.
namespace detail {
struct ServerState;
}  // namespace detail

class Server {
 public:
  // Binds and listens at once, so port() is known before start().
  // Throws boost::system::system_error if the address cannot be bound; see listen().
  Server(boost::asio::io_context& ioc, const boost::asio::ip::tcp::endpoint& endpoint, Router& router,
         ServerLimits limits, RequestObserver observer = {});
  ~Server();

  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // As the constructor, with a bind failure as Error{kUnavailable} naming the address.
  static Result<std::unique_ptr<Server>> listen(boost::asio::io_context& ioc,
                                                const boost::asio::ip::tcp::endpoint& endpoint, Router& router,
                                                ServerLimits limits, RequestObserver observer = {});

  // The bound port (the one the OS chose when the endpoint's port was 0).
  unsigned short port() const;

  // Starts accepting. Call once.
  void start();

  // Stops accepting and closes idle keep-alive connections; requests being read or handled are
  // finished and answered with "Connection: close". Thread-safe, non-blocking, idempotent: may
  // be called from a signal_set handler running on `ioc` itself.
  void stop();

 private:
  std::shared_ptr<detail::ServerState> state_;  // shared with connection coroutines
};

// Parses "127.0.0.1:8080", "[::1]:8080" or "0.0.0.0:0" (an IP address, not a host name).
Result<boost::asio::ip::tcp::endpoint> parse_listen_address(std::string_view text);

}  // namespace benchfleet::http
