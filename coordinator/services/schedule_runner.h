// The schedule runner: every `period` it creates the runs of the schedules that are due
// (ScheduleStore::fire_due_schedules: exactly once per due time, the latest of several missed ones),
// expanding each stored matrix against the current catalog, logs what it created and why a
// schedule created nothing, and wakes waiting lease requests.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>

#include "common/clock.h"
#include "common/result.h"
#include "coordinator/services/model_registry.h"
#include "coordinator/services/periodic_task.h"
#include "coordinator/services/work_signal.h"
#include "coordinator/store/schedule_store.h"

namespace benchfleet::services {

// The time written in a clock file: one integer (ms since the epoch), surrounding blanks
// allowed. Error{kInvalidArgument} naming the file when it cannot be read or holds anything else.
Result<TimestampMs> read_clock_file(const std::string& path);

class ScheduleRunner {
 public:
  // "Now" for a check; an error skips that check (logged).
  using NowSource = std::function<Result<TimestampMs>()>;

  struct Options {
    std::chrono::milliseconds period{5000};
    std::int64_t max_cells = 100'000;  // ExpansionLimits of the runs it creates
  };

  // The timer runs on `ioc` (its own strand); the store work on `blocking`. `schedules`, `models`
  // and `work` must outlive the runner's loop (until `ioc` stops).
  ScheduleRunner(boost::asio::io_context& ioc, boost::asio::any_io_executor blocking, store::ScheduleStore& schedules,
                 ModelRegistry& models, WorkSignal& work, NowSource now, Options options);
  ScheduleRunner(const ScheduleRunner&) = delete;
  ScheduleRunner& operator=(const ScheduleRunner&) = delete;

  void start();
  // Thread-safe; the loop ends before its next check (one in progress finishes).
  void stop();

  // Checks made and runs created, for logs and tests.
  std::int64_t checks() const;
  std::int64_t runs_created() const;

  struct State;  // shared with the loop, which may outlive this object by one step

 private:
  std::shared_ptr<State> state_;
  PeriodicTask task_;
};

}  // namespace benchfleet::services
