// The connection side of one request as its handler may need it: whether the client is still
// there while the handler waits, and whether the response reached the socket. A long-poll that
// grants something (a lease) uses it to grant only to a live client and to undo a grant that
// could not be delivered.
#pragma once

#include <atomic>
#include <functional>
#include <mutex>
#include <utility>

namespace benchfleet::http {

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

  // ---- server side --------------------------------------------------------------------------
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
  std::mutex mu_;
  std::function<void(bool)> written_;
};

}  // namespace benchfleet::http
