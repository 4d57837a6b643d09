#include "coordinator/services/history_worker.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <utility>

#include "common/http/client.h"
#include "coordinator/services/change_detection.h"
#include "coordinator/services/regression_json.h"

namespace benchfleet::services {

using std::chrono::milliseconds;

namespace {

// A wake() runs detection this long after it at the latest: results stored together share a pass
// (under load a pass a second, each reading a few runs per series, rather than ten re-reading them).
constexpr milliseconds kWakeDebounce{1000};
// detect_changes calls in one pass at most (each looks at up to 64 series).
constexpr int kMaxDetectCallsPerPass = 1000;
// Deliveries sent per step, and the longest the sender sleeps between looks at the store (a
// delivery enqueued by another coordinator process on the same database, or a missed wake).
constexpr int kAlertsPerStep = 16;
constexpr milliseconds kAlertPollMax{1000};
constexpr milliseconds kAlertPollMin{20};

}  // namespace

std::optional<TimestampMs> alert_retry_at(TimestampMs now, int attempts, const HistoryWorkerOptions& options) {
  if (attempts >= options.alert_max_attempts) return std::nullopt;
  const std::int64_t max = options.alert_backoff_max.count();
  std::int64_t delay = std::max<std::int64_t>(options.alert_backoff_initial.count(), 0);
  for (int i = 1; i < attempts && delay < max; ++i) delay *= 2;
  return now + std::min(delay, max);
}

struct HistoryWorker::State {
  State(store::SeriesStore& se, store::RegressionStore& re, const Clock& c, HistoryWorkerOptions o)
      : series(se), regressions(re), clock(c), options(std::move(o)) {
    if (!options.webhook_url.empty()) {
      if (auto target = split_webhook_url(options.webhook_url); target.ok()) {
        webhook = *target;
        client = std::make_unique<http::Client>(webhook->base_url);
      } else {
        spdlog::error("alerts disabled: {}", target.error().describe());
      }
    }
  }
  store::SeriesStore& series;
  store::RegressionStore& regressions;
  const Clock& clock;
  const HistoryWorkerOptions options;
  std::optional<WebhookTarget> webhook;
  std::unique_ptr<http::Client> client;  // used by the sender's steps only, one at a time
  std::atomic<std::int64_t> passes{0};
};

namespace {

using State = HistoryWorker::State;

// One detection pass, on the blocking pool: detect_changes until no series has unseen points.
// Returns the regressions it opened. Never throws.
std::int64_t detect_pass(State& s) {
  std::int64_t opened = 0;
  try {
    const bool enqueue = s.client != nullptr;
    for (int i = 0; i < kMaxDetectCallsPerPass; ++i) {
      auto pass = detect_changes(s.series, s.options.detector, enqueue);
      if (!pass.ok()) {
        spdlog::warn("change detection failed: {}", pass.error().describe());
        break;
      }
      for (const auto& c : pass->changes) {
        if (c.direction == rules::ChangeDirection::kRegression) ++opened;
        spdlog::info(
            "{} {} in series {} ({} batch={} {} {} {} gpu={} build={}): median {:.4g} -> {:.4g} ms (x{:.3f}, p={:.2g}) "
            "first bad torch {} (result {}), last good torch {}",
            to_string(c.direction), c.id, c.series_id, c.key.model, c.key.batch, to_string(c.key.mode),
            to_string(c.key.dtype), to_string(c.key.runtime), c.key.gpu, c.key.torch_build, c.before_median_ms,
            c.after_median_ms, c.ratio, c.p_value, c.first_bad.torch_version.value_or("?"), c.first_bad.result_id,
            c.last_good && c.last_good->torch_version ? *c.last_good->torch_version : std::string("?"));
      }
      if (!pass->more) break;
    }
    s.passes.fetch_add(1);
  } catch (const std::exception& e) {
    spdlog::error("change detection failed: {}", e.what());
  }
  return opened;
}

// Sends the deliveries due now, on the blocking pool; returns how long the sender may sleep.
// Never throws.
milliseconds send_due_alerts(State& s) {
  try {
    TimestampMs now = s.clock.now_ms();
    auto due = s.regressions.due_alerts(now, kAlertsPerStep);
    if (!due.ok()) {
      spdlog::warn("alerts: cannot read the deliveries due: {}", due.error().describe());
      return kAlertPollMax;
    }
    for (const auto& d : *due) {
      std::string error;
      auto regression = s.regressions.get_regression(d.regression_id);
      if (!regression.ok()) {
        error = "regression " + std::to_string(d.regression_id) + ": " + regression.error().describe();
      } else {
        const std::string body = regression_opened_event(*regression, d.id).dump();
        const http::Client::Headers headers = {{"Content-Type", "application/json"},
                                               {"X-Benchfleet-Event", d.event},
                                               {"X-Benchfleet-Delivery", std::to_string(d.id)}};
        auto res = s.client->request(boost::beast::http::verb::post, s.webhook->target, body, headers,
                                     s.options.alert_timeout);
        if (!res.ok()) {
          error = res.error().describe();
        } else if (res->status < 200 || res->status > 299) {
          error = "HTTP " + std::to_string(res->status) + ": " + res->problem_detail();
        }
      }
      now = s.clock.now_ms();
      if (error.empty()) {
        if (auto st = s.regressions.alert_delivered(d.id, now); !st.ok()) {
          spdlog::warn("alerts: delivery {} made but not recorded: {}", d.id, st.error().describe());
        } else {
          spdlog::info("alerts: delivered {} (regression {}) attempt {}", d.id, d.regression_id, d.attempts + 1);
        }
        continue;
      }
      const auto retry = alert_retry_at(now, d.attempts + 1, s.options);
      if (retry) {
        spdlog::warn("alerts: delivery {} (regression {}) attempt {} failed: {}; retry in {} ms", d.id, d.regression_id,
                     d.attempts + 1, error, *retry - now);
      } else {
        spdlog::error("alerts: delivery {} (regression {}) given up after {} attempts: {}", d.id, d.regression_id,
                      d.attempts + 1, error);
      }
      if (auto st = s.regressions.alert_attempt_failed(d.id, error, retry); !st.ok()) {
        spdlog::warn("alerts: cannot record the failed attempt of {}: {}", d.id, st.error().describe());
      }
    }
    if (static_cast<int>(due->size()) == kAlertsPerStep) return milliseconds(0);
    auto next = s.regressions.next_alert_due();
    if (!next.ok() || !*next) return kAlertPollMax;
    return std::clamp(milliseconds(**next - s.clock.now_ms()), kAlertPollMin, kAlertPollMax);
  } catch (const std::exception& e) {
    spdlog::error("alerts: sending failed: {}", e.what());
    return kAlertPollMax;
  }
}

milliseconds wake_debounce(const HistoryWorkerOptions& options) {
  return std::min(kWakeDebounce, options.detect_interval);
}

}  // namespace

HistoryWorker::HistoryWorker(boost::asio::io_context& ioc, boost::asio::any_io_executor blocking,
                             store::SeriesStore& series, store::RegressionStore& regressions, const Clock& clock,
                             HistoryWorkerOptions options)
    : state_(std::make_shared<State>(series, regressions, clock, std::move(options))) {
  if (state_->client) {
    alerts_.emplace(ioc, blocking, "alert sender", kAlertPollMin, [s = state_] { return send_due_alerts(*s); });
  }
  // A pass that opened a regression makes the sender look at once.
  std::function<void(milliseconds)> alerts_due = alerts_ ? alerts_->poker() : nullptr;
  detect_.emplace(ioc, std::move(blocking), "change detector", state_->options.detect_interval,
                  [s = state_, alerts_due = std::move(alerts_due)] {
                    if (detect_pass(*s) > 0 && alerts_due) alerts_due(milliseconds(0));
                    return s->options.detect_interval;
                  });
}

void HistoryWorker::start() {
  detect_->start();
  if (alerts_) alerts_->start();
}

void HistoryWorker::stop() {
  detect_->stop();
  if (alerts_) alerts_->stop();
}

void HistoryWorker::wake() { detect_->poke(wake_debounce(state_->options)); }

std::int64_t HistoryWorker::detection_passes() const { return state_->passes.load(); }

}  // namespace benchfleet::services
