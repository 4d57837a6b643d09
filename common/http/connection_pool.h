// The connections an http::Server serves, as its accept loop admits them (internal to
// common/http: server.cpp alone uses it). A connection is anonymous until one of its requests
// shows a credential; anonymous ones share max_connections - reserved_connections slots, at most
// max_connections_per_peer from one address; a newcomer at a full pool takes the slot of the
// oldest idle anonymous connection (ServerLimits, server.h).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "common/http/server.h"

namespace benchfleet::http::detail {

struct Connection {
  explicit Connection(boost::asio::ip::tcp::socket socket) : stream(std::move(socket)) {}
  boost::beast::tcp_stream stream;
  // Waiting for the next request's first byte; written on the connection's strand, read by the
  // accept loop when it looks for a connection to shed.
  std::atomic<bool> idle{false};
  std::atomic<bool> answered{false};  // one of its requests has been answered
  const std::chrono::steady_clock::time_point accepted = std::chrono::steady_clock::now();
  // Admitted into reserved_connections while the anonymous pool was full: its first request must
  // show a credential. Set before the connection's coroutine starts.
  bool probation = false;
  // Since when (steady clock, ns since its epoch) a request's headers are being read; 0 when none
  // is. A client whose headers take longer than kSlowHeaders is treated as idle when a newcomer
  // needs its slot: sending the first byte of each request at once no longer makes it busy.
  std::atomic<std::int64_t> headers_since_ns{0};
  boost::asio::ip::address peer;  // set at accept
};

// How long a request's headers may take before their connection may be shed for a newcomer.
inline constexpr std::chrono::milliseconds kSlowHeaders{1000};

// Whether `conn` may be closed to make room: waiting for its next request with nothing sent, or
// reading headers that have taken longer than kSlowHeaders.
bool sheddable(Connection& conn, std::chrono::steady_clock::time_point now);

// Whether the client has sent bytes the server has not read yet. Asks the kernel (FIONREAD) on the
// socket's descriptor, so it may be called off the connection's strand; a closed socket reads as
// nothing waiting.
bool bytes_waiting(Connection& conn);

class ConnectionPool {
 public:
  explicit ConnectionPool(const ServerLimits& limits) : limits_(limits) {}

  // Why a connection from `peer` cannot be admitted now, or nullopt after admitting it as
  // anonymous under `id` (shedding an idle anonymous connection where its pool is full; a
  // newcomer admitted into the reserve is put on probation).
  std::optional<std::string> admit(std::uint64_t id, const std::shared_ptr<Connection>& conn,
                                   const boost::asio::ip::address& peer);
  // Its request showed a credential: the connection leaves the anonymous pool.
  void trust(std::uint64_t id);
  // The connection `id` closed.
  void forget(std::uint64_t id);
  // Every connection still open.
  std::vector<std::shared_ptr<Connection>> open_connections();

 private:
  // A served connection as the accept loop sees it.
  struct Entry {
    std::weak_ptr<Connection> conn;
    boost::asio::ip::address peer;
    bool trusted = false;  // one of its requests showed a credential
    bool shed = false;     // closed to make room: no longer counted
  };

  // Marks the oldest anonymous connection waiting idle (from `peer` when given) as shed and
  // returns it; null when none is idle. Holds `mutex_`.
  std::shared_ptr<Connection> shed_oldest_idle(const boost::asio::ip::address* peer);
  void uncount(const Entry& entry);
  void release_anonymous(const boost::asio::ip::address& peer);

  const ServerLimits limits_;
  std::mutex mutex_;                            // guards the members below
  std::map<std::uint64_t, Entry> connections_;  // by id: the oldest first
  std::size_t counted_ = 0;                     // entries not shed
  std::size_t anonymous_ = 0;                   // of them, not trusted
  std::map<boost::asio::ip::address, std::size_t> anonymous_by_peer_;
};

}  // namespace benchfleet::http::detail
