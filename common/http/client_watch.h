// Watching a connection while its request is handled, so a handler that waits (long-poll)
// learns that its client has gone (Exchange::client_gone) instead of answering nobody.
#pragma once

#include <chrono>
#include <cstddef>
#include <exception>
#include <utility>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/deferred.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/experimental/parallel_group.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include "common/http/exchange.h"
#include "common/http/types.h"

namespace benchfleet::http {

namespace detail {

// Reads from the socket once: end of stream or an error marks the client gone; bytes (a
// pipelined next request) are kept in `buffer` for the server's next read. Then waits until
// cancelled, so it never ends the handling itself.
inline boost::asio::awaitable<void> watch_client(boost::beast::tcp_stream& stream, boost::beast::flat_buffer& buffer,
                                                 Exchange& exchange) {
  constexpr std::size_t kWatchBytes = 4096;
  constexpr auto kAsTuple = boost::asio::as_tuple(boost::asio::use_awaitable);
  auto [ec, n] = co_await stream.socket().async_read_some(buffer.prepare(kWatchBytes), kAsTuple);
  if (ec == boost::asio::error::operation_aborted) co_return;  // the handler finished first
  if (ec) {
    exchange.mark_client_gone();
  } else {
    buffer.commit(n);
  }
  boost::asio::steady_timer forever(co_await boost::asio::this_coro::executor,
                                    std::chrono::steady_clock::time_point::max());
  co_await forever.async_wait(kAsTuple);
}

}  // namespace detail

// Awaits `handling` (the router's answer to a request) while one read on `stream` watches for
// the client leaving; the watch is cancelled when `handling` completes. REQUIRES: nothing else
// reads `stream` or touches `buffer` meanwhile; all three outlive the awaitable.
inline boost::asio::awaitable<Response> handle_watching_client(boost::beast::tcp_stream& stream,
                                                               boost::beast::flat_buffer& buffer, Exchange& exchange,
                                                               boost::asio::awaitable<Response> handling) {
  namespace asio = boost::asio;
  const auto executor = co_await asio::this_coro::executor;
  // The first to finish cancels the other; the watch only finishes when cancelled.
  auto [order, handling_error, response, watch_error] =
      co_await asio::experimental::make_parallel_group(
          asio::co_spawn(executor, std::move(handling), asio::deferred),
          asio::co_spawn(executor, detail::watch_client(stream, buffer, exchange), asio::deferred))
          .async_wait(asio::experimental::wait_for_one(), asio::deferred);
  (void)order;
  (void)watch_error;
  if (handling_error) std::rethrow_exception(handling_error);
  co_return std::move(response);
}

}  // namespace benchfleet::http
