#include "coordinator/services/schedule_runner.h"

#include <spdlog/spdlog.h>

#include <atomic>
#include <charconv>
#include <exception>
#include <fstream>
#include <sstream>
#include <utility>

#include "common/matrix.h"

namespace benchfleet::services {

Result<TimestampMs> read_clock_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Error::invalid(path, "cannot read the clock file");
  std::ostringstream text;
  text << in.rdbuf();
  std::string s = text.str();
  const auto first = s.find_first_not_of(" \t\r\n");
  const auto last = s.find_last_not_of(" \t\r\n");
  if (first == std::string::npos) return Error::invalid(path, "the clock file is empty");
  s = s.substr(first, last - first + 1);
  TimestampMs ms = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), ms);
  if (ec != std::errc() || ptr != s.data() + s.size() || ms < 0) {
    return Error::invalid(path, "the clock file must hold milliseconds since the epoch, got \"" + s + "\"");
  }
  return ms;
}

struct ScheduleRunner::State {
  State(store::ScheduleStore& h, ModelRegistry& c, WorkSignal& w, NowSource n, Options o)
      : schedules(h), models(c), work(w), now(std::move(n)), options(o) {}
  store::ScheduleStore& schedules;
  ModelRegistry& models;
  WorkSignal& work;
  const NowSource now;
  const Options options;
  std::atomic<std::int64_t> checks{0}, runs_created{0};
};

namespace {

// One check, on the blocking pool. Never throws.
void check_once(ScheduleRunner::State& s) {
  try {
    const Result<TimestampMs> now = s.now();
    if (!now.ok()) {
      spdlog::warn("schedules: no time for this check: {}", now.error().describe());
      return;
    }
    const ExpansionLimits limits{s.options.max_cells};
    auto outcome = s.schedules.fire_due_schedules(
        *now, [&](const MatrixSpec& spec) { return expand_matrix(spec, *s.models.catalog(), limits); });
    s.checks.fetch_add(1);
    if (!outcome.ok()) {
      spdlog::warn("schedules: check failed: {}", outcome.error().describe());
      return;
    }
    for (const auto& [schedule_id, error] : outcome->errors) {
      spdlog::warn("schedule {} created no run: {}", schedule_id, error.describe());
    }
    for (const auto& f : outcome->fired) {
      spdlog::info("schedule {} created run {} (jobs={} due_at={} skipped_due_times={})", f.schedule_id, f.run_id,
                   f.job_count, f.due_at, f.skipped);
    }
    if (!outcome->fired.empty()) {
      s.runs_created.fetch_add(static_cast<std::int64_t>(outcome->fired.size()));
      s.work.notify();
    }
  } catch (const std::exception& e) {
    spdlog::error("schedules: check failed: {}", e.what());
  }
}

}  // namespace

ScheduleRunner::ScheduleRunner(boost::asio::io_context& ioc, boost::asio::any_io_executor blocking,
                               store::ScheduleStore& schedules, ModelRegistry& models, WorkSignal& work, NowSource now,
                               Options options)
    : state_(std::make_shared<State>(schedules, models, work, std::move(now), options)),
      task_(ioc, std::move(blocking), "schedule runner", options.period, [s = state_] {
        check_once(*s);
        return s->options.period;
      }) {}

void ScheduleRunner::start() { task_.start(); }
void ScheduleRunner::stop() { task_.stop(); }

std::int64_t ScheduleRunner::checks() const { return state_->checks.load(); }
std::int64_t ScheduleRunner::runs_created() const { return state_->runs_created.load(); }

}  // namespace benchfleet::services
