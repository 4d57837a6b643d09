#include "coordinator/services/periodic_task.h"

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <atomic>
#include <exception>
#include <optional>
#include <utility>

#include "coordinator/services/blocking.h"

namespace benchfleet::services {

namespace asio = boost::asio;
using std::chrono::milliseconds;

struct PeriodicTask::State {
  State(asio::io_context& ioc, asio::any_io_executor b, std::string n, milliseconds first, Step s)
      : strand(asio::make_strand(ioc)),
        timer(strand),
        blocking(std::move(b)),
        name(std::move(n)),
        first_wait(first),
        step(std::move(s)) {}
  asio::strand<asio::io_context::executor_type> strand;
  asio::steady_timer timer;
  asio::any_io_executor blocking;
  const std::string name;
  const milliseconds first_wait;
  const Step step;
  // On the strand.
  bool stopped = false;
  bool waiting = false;               // the loop waits on `timer`
  std::optional<milliseconds> poked;  // a poke that came while the loop was not waiting
  std::atomic<std::int64_t> steps{0};
};

namespace {

using State = PeriodicTask::State;

// Waits on the timer until it expires; a wait cancelled because a poke moved the expiry is
// resumed with the new expiry. False when the task stopped.
asio::awaitable<bool> wait_for_expiry(State& s) {
  s.waiting = true;
  for (;;) {
    boost::system::error_code ec;
    co_await s.timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (s.stopped) break;
    if (!ec) {
      s.waiting = false;
      co_return true;
    }
  }
  s.waiting = false;
  co_return false;
}

// Moves the timer to expire within `within` from now, unless it expires sooner. On the strand.
void expire_within(asio::steady_timer& timer, milliseconds within) {
  const auto soon = asio::steady_timer::clock_type::now() + within;
  if (timer.expiry() > soon) timer.expires_at(soon);
}

// One step on the blocking pool. Never throws.
milliseconds run_step(State& s) {
  try {
    const milliseconds next = s.step();
    s.steps.fetch_add(1);
    return next;
  } catch (const std::exception& e) {
    spdlog::error("{}: step failed: {}", s.name, e.what());
    return s.first_wait;
  }
}

asio::awaitable<void> task_loop(std::shared_ptr<State> s) {
  milliseconds wait = s->first_wait;
  while (!s->stopped) {
    if (s->poked) {
      wait = std::min(wait, *s->poked);
      s->poked.reset();
    }
    s->timer.expires_after(wait);
    if (!co_await wait_for_expiry(*s)) break;
    wait = co_await run_blocking(s->blocking, [&] { return run_step(*s); });
  }
}

void poke_task(const std::shared_ptr<State>& state, milliseconds within) {
  asio::post(state->strand, [s = state, within] {
    if (s->stopped) return;
    if (s->waiting) {
      expire_within(s->timer, within);
    } else {
      s->poked = std::min(s->poked.value_or(within), within);
    }
  });
}

}  // namespace

PeriodicTask::PeriodicTask(asio::io_context& ioc, asio::any_io_executor blocking, std::string name,
                           milliseconds first_wait, Step step)
    : state_(std::make_shared<State>(ioc, std::move(blocking), std::move(name), first_wait, std::move(step))) {}

PeriodicTask::~PeriodicTask() { stop(); }

void PeriodicTask::start() {
  asio::co_spawn(state_->strand, task_loop(state_), [name = state_->name](const std::exception_ptr& e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      spdlog::error("{} stopped: {}", name, ex.what());
    }
  });
}

void PeriodicTask::stop() {
  asio::post(state_->strand, [s = state_] {
    s->stopped = true;
    s->timer.cancel();
  });
}

void PeriodicTask::poke(milliseconds within) { poke_task(state_, within); }

std::function<void(milliseconds)> PeriodicTask::poker() const {
  return [weak = std::weak_ptr<State>(state_)](milliseconds within) {
    if (auto s = weak.lock()) poke_task(s, within);
  };
}

std::int64_t PeriodicTask::steps() const { return state_->steps.load(); }

}  // namespace benchfleet::services
