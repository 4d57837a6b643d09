// Anonymous clients holding a server's connections, as an attacker without a token would: many
// loopback source addresses (127.0.0.2, 127.0.0.3, ...), some sockets silent, some sending a
// keep-alive GET /healthz now and then, every socket the server closes opened again.
// Runs on its own thread from construction to destruction. For the connection-hold test and
// benchmark (tests/integration/connection_hold_test.cpp, bench/connection_hold.cpp).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <thread>

namespace benchfleet::testing {

struct HoldOptions {
  unsigned short port = 0;  // on 127.0.0.1
  int connections = 100;    // sockets kept open (or being opened again)
  int addresses = 10;       // source addresses 127.0.0.2 ... 127.0.0.(1 + addresses)
  // Every other socket sends "GET /healthz" this often (keep-alive probes); the rest stay silent.
  std::chrono::milliseconds probe_every{1000};
  std::chrono::milliseconds reconnect_delay{100};  // after the server closed a socket
};

struct HoldCounts {
  std::int64_t opened = 0;           // connections made, reconnections included
  std::int64_t closed = 0;           // by the server (shed, timed out or refused)
  std::int64_t refused = 0;          // of them, answered 503 first
  std::int64_t probes_answered = 0;  // 200s to the keep-alive probes
  std::int64_t open_now = 0;         // connected and not yet closed
};

class ConnectionHold {
 public:
  explicit ConnectionHold(HoldOptions options);
  ~ConnectionHold();  // stops the thread and closes every socket
  ConnectionHold(const ConnectionHold&) = delete;
  ConnectionHold& operator=(const ConnectionHold&) = delete;

  HoldCounts counts() const;

 private:
  void run();

  HoldOptions options_;
  std::atomic<bool> stop_{false};
  std::atomic<std::int64_t> opened_{0};
  std::atomic<std::int64_t> closed_{0};
  std::atomic<std::int64_t> refused_{0};
  std::atomic<std::int64_t> probes_answered_{0};
  std::atomic<std::int64_t> open_now_{0};
  std::thread thread_;
};

}  // namespace benchfleet::testing
