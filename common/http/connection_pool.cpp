#include "common/http/connection_pool.h"

#include <sys/ioctl.h>

#include <algorithm>

#include <boost/asio/post.hpp>

namespace benchfleet::http::detail {
namespace {

// A new connection that has not sent anything yet is shed only after those that have been
// answered or stayed silent this long.
constexpr std::chrono::milliseconds kNewcomerGrace{1000};

}  // namespace

bool bytes_waiting(Connection& conn) {
  int waiting = 0;
  return ::ioctl(conn.stream.socket().native_handle(), FIONREAD, &waiting) == 0 && waiting > 0;
}

bool sheddable(Connection& conn, std::chrono::steady_clock::time_point now) {
  const std::int64_t since = conn.headers_since_ns.load();
  if (since != 0) {
    return now.time_since_epoch() - std::chrono::nanoseconds(since) > kSlowHeaders;
  }
  // Idle with bytes waiting is not idle: a burst of clients connecting at once is accepted
  // faster than their requests are read, and must not close each other.
  return conn.idle && !bytes_waiting(conn);
}

std::optional<std::string> ConnectionPool::admit(std::uint64_t id, const std::shared_ptr<Connection>& conn,
                                                 const boost::asio::ip::address& peer) {
  std::shared_ptr<Connection> victim;
  std::lock_guard lock(mutex_);
  const std::size_t total_bound = limits_.max_connections;
  const std::size_t anonymous_bound =
      total_bound == 0 ? 0 : total_bound - std::min(limits_.reserved_connections, total_bound);
  const std::size_t per_peer_bound = limits_.max_connections_per_peer;
  const auto known = anonymous_by_peer_.find(peer);
  const std::size_t from_peer = known == anonymous_by_peer_.end() ? 0 : known->second;
  if (per_peer_bound != 0 && from_peer >= per_peer_bound) {
    victim = shed_oldest_idle(&peer);
    if (!victim) {
      return "the server is serving its limit of " + std::to_string(per_peer_bound) +
             " unauthenticated connections from one address; retry later";
    }
  }
  const bool at_total = total_bound != 0 && counted_ >= total_bound;
  if (!victim && (at_total || (anonymous_bound != 0 && anonymous_ >= anonymous_bound))) {
    victim = shed_oldest_idle(nullptr);
    if (!victim && at_total) {
      return "the server is serving its limit of " + std::to_string(total_bound) + " connections; retry later";
    }
    // Only the reserve is left: the newcomer keeps its slot if its first request shows a token.
    conn->probation = !victim;
  }
  if (victim) {
    boost::asio::post(victim->stream.get_executor(), [victim] {
      // It may have begun a request since it was chosen: then it keeps its connection (and the
      // bound is over by one until it closes).
      if (sheddable(*victim, std::chrono::steady_clock::now())) victim->stream.cancel();
    });
  }
  connections_.emplace(id, Entry{conn, peer, false, false});
  ++counted_;
  ++anonymous_;
  ++anonymous_by_peer_[peer];
  return std::nullopt;
}

// Connections that have been answered, or stayed silent past kNewcomerGrace, or whose headers
// have taken longer than kSlowHeaders, go first; only when none is does the oldest newcomer that
// has not sent anything yet give way. A client that
// has just connected and is about to send its request is then closed only when every older
// anonymous connection is busy or already gone.
std::shared_ptr<Connection> ConnectionPool::shed_oldest_idle(const boost::asio::ip::address* peer) {
  const auto now = std::chrono::steady_clock::now();
  for (const bool newcomers_too : {false, true}) {
    for (auto& [id, entry] : connections_) {
      if (entry.trusted || entry.shed || (peer != nullptr && entry.peer != *peer)) continue;
      auto conn = entry.conn.lock();
      if (!conn) continue;
      const bool slow_headers = conn->headers_since_ns.load() != 0;
      if (!newcomers_too && !slow_headers && !conn->answered && now - conn->accepted < kNewcomerGrace) continue;
      if (!sheddable(*conn, now)) continue;
      entry.shed = true;
      uncount(entry);
      return conn;
    }
  }
  return nullptr;
}

void ConnectionPool::trust(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  const auto it = connections_.find(id);
  if (it == connections_.end() || it->second.trusted || it->second.shed) return;
  release_anonymous(it->second.peer);
  it->second.trusted = true;
}

void ConnectionPool::forget(std::uint64_t id) {
  std::lock_guard lock(mutex_);
  const auto it = connections_.find(id);
  if (it == connections_.end()) return;
  if (!it->second.shed) uncount(it->second);
  connections_.erase(it);
}

std::vector<std::shared_ptr<Connection>> ConnectionPool::open_connections() {
  std::vector<std::shared_ptr<Connection>> open;
  std::lock_guard lock(mutex_);
  for (auto& [id, entry] : connections_) {
    if (auto conn = entry.conn.lock()) open.push_back(std::move(conn));
  }
  return open;
}

void ConnectionPool::uncount(const Entry& entry) {
  --counted_;
  if (!entry.trusted) release_anonymous(entry.peer);
}

void ConnectionPool::release_anonymous(const boost::asio::ip::address& peer) {
  --anonymous_;
  if (const auto it = anonymous_by_peer_.find(peer); it != anonymous_by_peer_.end() && --it->second == 0) {
    anonymous_by_peer_.erase(it);
  }
}

}  // namespace benchfleet::http::detail
