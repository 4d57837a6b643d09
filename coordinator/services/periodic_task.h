// The loop every service runs: wait on a timer (on its own strand of the I/O context), run one
// step off the I/O threads (on the blocking pool), wait again for as long as the step asks. The
// sweeper, the schedule runner and the history worker's two loops are each one of these, so
// their timers, strands and stop are written once.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>

namespace benchfleet::services {

class PeriodicTask {
 public:
  // One step, on the blocking pool, never two at once; returns how long to wait before the next
  // one. A step that throws is logged (with the task's name) and the next waits `first_wait`.
  using Step = std::function<std::chrono::milliseconds()>;

  // The first step runs `first_wait` after start(). `name` is for logs ("lease expiry sweeper").
  // What `step` refers to must outlive the loop (until `ioc` stops, or stop() took effect).
  PeriodicTask(boost::asio::io_context& ioc, boost::asio::any_io_executor blocking, std::string name,
               std::chrono::milliseconds first_wait, Step step);
  // Stops the loop (see stop()).
  ~PeriodicTask();
  PeriodicTask(const PeriodicTask&) = delete;
  PeriodicTask& operator=(const PeriodicTask&) = delete;

  void start();
  // Thread-safe; the loop ends before its next step (one in progress finishes).
  void stop();
  // Thread-safe and cheap (a post): the next step runs within `within` from now, or sooner when
  // it was due sooner. A poke during a step shortens the wait after it.
  void poke(std::chrono::milliseconds within);

  // poke() as a function that stays safe to call once this task is gone (it then does nothing):
  // for another task's step, which may outlive this one by a step.
  std::function<void(std::chrono::milliseconds)> poker() const;

  // Steps completed so far (tests wait on it).
  std::int64_t steps() const;

  struct State;  // shared with the loop, which may outlive this object by one step

 private:
  std::shared_ptr<State> state_;
};

}  // namespace benchfleet::services
