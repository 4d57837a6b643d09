// A blocking loopback TCP connection for tests that must misbehave on purpose (send headers and
// then not the body, hold a connection open), which http::Client cannot. Header-only, so unit
// tests that link only benchfleet_http can use it. Not thread-safe.
#pragma once

#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <string>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/write.hpp>

namespace benchfleet::testing {

class RawConnection {
 public:
  // Connects to 127.0.0.1:`port`; every read gives up after `read_timeout`, so a server that
  // waits for bytes it should not need fails a test instead of hanging it.
  // With `source` (another loopback address, "127.0.0.2"), the server sees that peer address.
  explicit RawConnection(unsigned short port, std::chrono::seconds read_timeout = std::chrono::seconds(10),
                         const char* source = nullptr)
      : socket_(io_) {
    if (source != nullptr) {
      socket_.open(boost::asio::ip::tcp::v4());
      socket_.bind({boost::asio::ip::make_address(source), 0});
    }
    socket_.connect({boost::asio::ip::make_address("127.0.0.1"), port});
    timeval timeout{static_cast<time_t>(read_timeout.count()), 0};
    ::setsockopt(socket_.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  }

  // Throws boost::system::system_error when the peer is gone.
  void send(const std::string& bytes) { boost::asio::write(socket_, boost::asio::buffer(bytes)); }

  // One response's status line and headers ("" when the connection ended or timed out first).
  std::string read_head() {
    boost::system::error_code ec;
    const std::size_t n = boost::asio::read_until(socket_, boost::asio::dynamic_buffer(pending_), "\r\n\r\n", ec);
    if (ec) return std::exchange(pending_, {});
    std::string head = pending_.substr(0, n);
    pending_.erase(0, n);
    return head;
  }

  // One whole response: its head and its Content-Length bytes of body.
  std::string read_response() {
    std::string response = read_head();
    const auto at = response.find("Content-Length: ");
    if (at == std::string::npos) return response;
    const std::size_t length = std::stoul(response.substr(at + 16));
    boost::system::error_code ec;
    if (pending_.size() < length) {
      boost::asio::read(socket_, boost::asio::dynamic_buffer(pending_),
                        boost::asio::transfer_exactly(length - pending_.size()), ec);
    }
    response += pending_.substr(0, length);
    pending_.erase(0, std::min(length, pending_.size()));
    return response;
  }

  // Whether the server has closed the connection: a read finds its end (waits up to the read
  // timeout for it).
  bool closed_by_peer() {
    char byte = 0;
    boost::system::error_code ec;
    socket_.read_some(boost::asio::buffer(&byte, 1), ec);
    return ec == boost::asio::error::eof || ec == boost::asio::error::connection_reset;
  }

  // Everything until the server closes the connection (or the read timeout passes).
  std::string read_to_end() {
    boost::system::error_code ec;
    boost::asio::read(socket_, boost::asio::dynamic_buffer(pending_), ec);
    return std::exchange(pending_, {});
  }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  std::string pending_;
};

}  // namespace benchfleet::testing
