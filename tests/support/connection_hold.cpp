#include "tests/support/connection_hold.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace benchfleet::testing {

namespace {

constexpr std::string_view kProbe = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";
constexpr auto kTick = std::chrono::milliseconds(20);

struct HeldSocket {
  int fd = -1;
  bool connected = false;
  bool probe = false;
  std::chrono::steady_clock::time_point next_probe;
  std::chrono::steady_clock::time_point reopen_at;  // when closed
  std::string received;                             // what the server sent and was not yet counted
};

// A non-blocking connect to 127.0.0.1:port from 127.0.0.`source_host`; -1 on failure.
int open_socket(unsigned short port, int source_host) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in source{};
  source.sin_family = AF_INET;
  source.sin_addr.s_addr = htonl((127u << 24) | static_cast<unsigned>(source_host));
  sockaddr_in target{};
  target.sin_family = AF_INET;
  target.sin_port = htons(port);
  target.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(fd, reinterpret_cast<const sockaddr*>(&source), sizeof source) != 0 ||
      (::connect(fd, reinterpret_cast<const sockaddr*>(&target), sizeof target) != 0 && errno != EINPROGRESS)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// How many times `status` occurs in `text`.
std::int64_t count_statuses(const std::string& text, std::string_view status) {
  std::int64_t n = 0;
  for (std::size_t at = text.find(status); at != std::string::npos; at = text.find(status, at + 1)) ++n;
  return n;
}

}  // namespace

ConnectionHold::ConnectionHold(HoldOptions options) : options_(options), thread_([this] { run(); }) {}

ConnectionHold::~ConnectionHold() {
  stop_ = true;
  thread_.join();
}

HoldCounts ConnectionHold::counts() const {
  return HoldCounts{opened_.load(), closed_.load(), refused_.load(), probes_answered_.load(), open_now_.load()};
}

void ConnectionHold::run() {
  std::vector<HeldSocket> sockets(static_cast<std::size_t>(options_.connections));
  const auto reopen = [&](std::size_t i) {
    HeldSocket& s = sockets[i];
    s.fd = open_socket(options_.port, 2 + static_cast<int>(i % static_cast<std::size_t>(options_.addresses)));
    s.connected = false;
    s.probe = i % 2 == 1 && options_.probe_every.count() > 0;
    s.received.clear();
  };
  const auto drop = [&](HeldSocket& s) {
    if (s.connected) {
      open_now_.fetch_sub(1);
      closed_.fetch_add(1);
      if (s.received.find("HTTP/1.1 503") != std::string::npos) refused_.fetch_add(1);
    }
    ::close(s.fd);
    s.fd = -1;
    s.reopen_at = std::chrono::steady_clock::now() + options_.reconnect_delay;
  };
  for (std::size_t i = 0; i < sockets.size(); ++i) reopen(i);

  std::vector<pollfd> fds(sockets.size());
  char buffer[4096];
  while (!stop_) {
    const auto tick = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < sockets.size(); ++i) {
      if (sockets[i].fd < 0 && tick >= sockets[i].reopen_at) reopen(i);
      // poll() ignores a negative fd: a socket waiting to reopen.
      fds[i] = pollfd{sockets[i].fd, static_cast<short>(sockets[i].connected ? POLLIN : POLLOUT), 0};
    }
    ::poll(fds.data(), fds.size(), static_cast<int>(kTick.count()));
    const auto now = std::chrono::steady_clock::now();
    for (std::size_t i = 0; i < sockets.size(); ++i) {
      HeldSocket& s = sockets[i];
      if (s.fd < 0) continue;
      if (!s.connected) {
        if ((fds[i].revents & (POLLOUT | POLLERR | POLLHUP)) == 0) continue;
        int error = 0;
        socklen_t length = sizeof error;
        ::getsockopt(s.fd, SOL_SOCKET, SO_ERROR, &error, &length);
        if (error != 0) {
          drop(s);
          continue;
        }
        s.connected = true;
        s.next_probe = now;  // a probe's first request goes at once
        opened_.fetch_add(1);
        open_now_.fetch_add(1);
        continue;
      }
      if ((fds[i].revents & (POLLIN | POLLERR | POLLHUP)) != 0) {
        const ssize_t n = ::recv(s.fd, buffer, sizeof buffer, 0);
        if (n <= 0) {
          drop(s);
          continue;
        }
        s.received.append(buffer, static_cast<std::size_t>(n));
        probes_answered_.fetch_add(count_statuses(s.received, "HTTP/1.1 200"));
        if (s.received.find("HTTP/1.1 503") == std::string::npos) s.received.clear();
      }
      if (s.probe && now >= s.next_probe) {
        s.next_probe = now + options_.probe_every;
        if (::send(s.fd, kProbe.data(), kProbe.size(), MSG_NOSIGNAL) < 0) drop(s);
      }
    }
  }
  for (HeldSocket& s : sockets) {
    if (s.fd >= 0) drop(s);
  }
}

}  // namespace benchfleet::testing
