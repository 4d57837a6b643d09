#include "coordinator/lease_sweeper.h"

#include <algorithm>
#include <atomic>

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "coordinator/api/blocking.h"

namespace benchfleet {

namespace asio = boost::asio;

struct LeaseSweeper::State {
  State(asio::io_context& ioc, asio::any_io_executor b, store::Store& s, std::chrono::milliseconds p)
      : strand(asio::make_strand(ioc)), timer(strand), blocking(std::move(b)), store(s), period(p) {}
  asio::strand<asio::io_context::executor_type> strand;
  asio::steady_timer timer;
  asio::any_io_executor blocking;
  store::Store& store;
  const std::chrono::milliseconds period;
  bool stopped = false;  // on the strand
  std::atomic<std::int64_t> sweeps{0}, expired{0};
};

namespace {

asio::awaitable<void> sweep_loop(std::shared_ptr<LeaseSweeper::State> s) {
  while (!s->stopped) {
    s->timer.expires_after(s->period);
    boost::system::error_code ec;
    co_await s->timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (ec == asio::error::operation_aborted || s->stopped) break;
    auto n = co_await api::run_blocking(s->blocking, [&] { return s->store.expire_leases(); });
    if (!n.ok()) {
      spdlog::warn("lease expiry sweep failed: {}", n.error().message);
      continue;
    }
    s->sweeps.fetch_add(1);
    s->expired.fetch_add(*n);
    if (*n > 0) spdlog::info("expired leases requeued_or_failed={}", *n);
  }
}

}  // namespace

LeaseSweeper::LeaseSweeper(asio::io_context& ioc, asio::any_io_executor blocking, store::Store& store,
                           std::chrono::milliseconds period)
    : state_(std::make_shared<State>(ioc, std::move(blocking), store, period)) {}

LeaseSweeper::~LeaseSweeper() { stop(); }

std::chrono::milliseconds LeaseSweeper::period_for(std::int64_t lease_ttl_s) {
  return std::chrono::milliseconds(std::clamp<std::int64_t>(lease_ttl_s * 1000 / 4, 200, 5000));
}

void LeaseSweeper::start() {
  asio::co_spawn(state_->strand, sweep_loop(state_), [](const std::exception_ptr& e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      spdlog::error("lease expiry sweeper stopped: {}", ex.what());
    }
  });
}

void LeaseSweeper::stop() {
  asio::post(state_->strand, [s = state_] {
    s->stopped = true;
    s->timer.cancel();
  });
}

std::int64_t LeaseSweeper::sweeps() const { return state_->sweeps.load(); }
std::int64_t LeaseSweeper::expired() const { return state_->expired.load(); }

}  // namespace benchfleet
