// Runs blocking work (SQLite, report rendering, webhook requests) off the I/O threads: used by
// the services and the API handlers alike.
#pragma once

#include <optional>
#include <type_traits>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace benchfleet::services {

// Calls f() on `executor` and resumes the caller on its own executor with the value.
// An exception from f() is rethrown in the caller.
template <class F>
boost::asio::awaitable<std::invoke_result_t<F&>> run_blocking(boost::asio::any_io_executor executor, F f) {
  std::optional<std::invoke_result_t<F&>> out;  // the value type need not be default-constructible
  co_await boost::asio::co_spawn(
      executor,
      [&]() -> boost::asio::awaitable<void> {
        out.emplace(f());
        co_return;
      },
      boost::asio::use_awaitable);
  co_return std::move(*out);
}

}  // namespace benchfleet::services
