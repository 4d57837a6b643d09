// The history worker, two loops off the I/O threads and off the result ingest path:
// - the change detector: every `detect_interval`, and soon after wake() (called when a result
//   was stored), runs the change detector's pass (change_detection.h) until no series has unseen points, logging each
//   confirmed change;
// - the alert sender (when a webhook URL is set): POSTs each due delivery (RegressionStore::due_alerts)
//   as {"event": "regression.opened", "delivery_id", "regression": regression_json}, with the
//   headers X-Benchfleet-Event and X-Benchfleet-Delivery; a 2xx answer delivers it, anything
//   else (or no answer within the timeout) is retried after backoff_initial * 2^(attempts - 1),
//   capped at backoff_max, and given up after max_attempts attempts.
// Result ingest never waits for either: it only calls wake(), which posts to a strand.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>

#include "common/clock.h"
#include "common/http/webhook_url.h"
#include "coordinator/rules/change_detector.h"
#include "coordinator/services/periodic_task.h"
#include "coordinator/store/regression_store.h"
#include "coordinator/store/series_store.h"

namespace benchfleet::services {

struct HistoryWorkerOptions {
  std::chrono::milliseconds detect_interval{2000};
  rules::DetectorOptions detector;
  std::string webhook_url;  // "" disables alerts (and their enqueueing)
  std::chrono::milliseconds alert_timeout{10000};
  int alert_max_attempts = 8;
  std::chrono::milliseconds alert_backoff_initial{1000};
  std::chrono::milliseconds alert_backoff_max{300000};
};

// When a delivery that failed its `attempts`-th attempt (1-based) is tried again: nullopt
// (give up) once `attempts` reached max_attempts, else after initial * 2^(attempts - 1),
// capped at max. Pure.
std::optional<TimestampMs> alert_retry_at(TimestampMs now, int attempts, const HistoryWorkerOptions& options);

class HistoryWorker {
 public:
  // Timers run on `ioc` (one strand); store work and webhook requests on `blocking`. The stores
  // and `clock` must outlive the loops (until `ioc` stops).
  HistoryWorker(boost::asio::io_context& ioc, boost::asio::any_io_executor blocking, store::SeriesStore& series,
                store::RegressionStore& regressions, const Clock& clock, HistoryWorkerOptions options);
  HistoryWorker(const HistoryWorker&) = delete;
  HistoryWorker& operator=(const HistoryWorker&) = delete;

  void start();
  // Thread-safe; the loops end before their next step (one in progress finishes: a webhook
  // request in flight ends within alert_timeout).
  void stop();
  // Thread-safe and cheap (a post): new points may be there; detection runs soon (debounced).
  void wake();

  // Detection passes run so far (tests wait on it).
  std::int64_t detection_passes() const;

  struct State;  // shared with the loops, which may outlive this object by one step

 private:
  std::shared_ptr<State> state_;
  std::optional<PeriodicTask> alerts_;  // when a webhook URL is set
  std::optional<PeriodicTask> detect_;
};

}  // namespace benchfleet::services
