// The connection side of one request as its handler may need it: whether the client is still
// there while the handler waits, and whether the response reached the socket. A long-poll that
// grants something (a lease) uses it to grant only to a live client and to undo a grant that
// could not be delivered.
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <boost/asio/any_io_executor.hpp>

namespace benchfleet::http {

// A request body a route does not want in memory (an upload): the server hands it over a chunk
// at a time as it arrives, then runs the handler with an empty body; the handler finds the sink
// on the exchange (Exchange::body_sink) and reads what it made of the bytes.
class BodySink {
 public:
  virtual ~BodySink() = default;
  // The next bytes of the body, in order. False stops the upload (the sink keeps why): the server
  // reads no more of the body, runs the handler (which answers the sink's failure) and closes the
  // connection. Runs on the connection's I/O thread: must not block for long. Never throws.
  virtual bool write(std::string_view chunk) = 0;
};

// The server makes one per request (RouteMatch::exchange) and reports on it; handlers read it.
// Thread safety: every member may be called from any thread.
class Exchange {
 public:
  Exchange() = default;
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;
  // A callback still pending is run with delivered = false: the response was never written.
  ~Exchange() { response_written(false); }

  // True once the client closed or reset its connection while the request was being handled.
  // A client that half-closes (shuts down its sending side) after its request counts as gone.
  bool client_gone() const { return gone_.load(std::memory_order_acquire); }

  // `f(delivered)` runs once, on the server's thread, after the server tried to write the
  // response: `delivered` is false when the write failed or the client was gone by then, so
  // the handler can undo what the response granted. Must be quick; it must not block.
  // Replaces an earlier callback.
  void on_response_written(std::function<void(bool delivered)> f) {
    std::lock_guard lock(mu_);
    written_ = std::move(f);
  }

  // A body to send after the response's own, a chunk at a time: a large answer is streamed from
  // its source with backpressure, so a reader that reads slowly (or not at all) holds one chunk of
  // it in the server, not the whole answer. The response's Content-Length counts both parts.
  struct BodyStream {
    std::size_t size = 0;  // bytes after the response's own body
    // The next chunk, at most `max` bytes; empty on an error (the connection is then closed, the
    // answer cut short). May block: it runs on `executor`. Never throws.
    std::function<std::string(std::size_t max)> next;
    boost::asio::any_io_executor executor;
  };
  // Called by the handler before it returns its response (the response's body is the beginning).
  void stream_after(BodyStream body) {
    std::lock_guard lock(mu_);
    stream_ = std::move(body);
  }

  // The route's sink that took this request's body (RouteOptions::body_sink); null for others.
  std::shared_ptr<BodySink> body_sink() const {
    std::lock_guard lock(mu_);
    return sink_;
  }

  // ---- server side --------------------------------------------------------------------------
  void set_body_sink(std::shared_ptr<BodySink> sink) {
    std::lock_guard lock(mu_);
    sink_ = std::move(sink);
  }
  std::optional<BodyStream> take_stream() {
    std::lock_guard lock(mu_);
    return std::exchange(stream_, std::nullopt);
  }
  void mark_client_gone() { gone_.store(true, std::memory_order_release); }
  // Runs the callback (at most once) with `written_ok && !client_gone()`.
  void response_written(bool written_ok) {
    std::function<void(bool)> f;
    {
      std::lock_guard lock(mu_);
      f = std::exchange(written_, nullptr);
    }
    if (f) f(written_ok && !client_gone());
  }

 private:
  std::atomic<bool> gone_{false};
  mutable std::mutex mu_;
  std::shared_ptr<BodySink> sink_;
  std::function<void(bool)> written_;
  std::optional<BodyStream> stream_;
};

}  // namespace benchfleet::http
