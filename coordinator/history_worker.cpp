#include "coordinator/history_worker.h"

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
#include <utility>

#include "common/http/client.h"
#include "coordinator/api/blocking.h"
#include "coordinator/api/history_json.h"

namespace benchfleet {

namespace asio = boost::asio;
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

Result<WebhookTarget> split_webhook_url(const std::string& url) {
  constexpr std::string_view kScheme = "http://";
  if (!url.starts_with(kScheme)) {
    return Error::invalid("alert_webhook_url", "must be an http:// URL such as http://alerts.example:9000/hook");
  }
  const std::size_t slash = url.find_first_of("/?#", kScheme.size());
  const std::string host =
      url.substr(kScheme.size(), slash == std::string::npos ? std::string::npos : slash - kScheme.size());
  if (host.empty() || host.front() == ':' || host.find_first_of(" \t@") != std::string::npos) {
    return Error::invalid("alert_webhook_url", "needs a host, as in http://alerts.example:9000/hook");
  }
  if (url.find('#') != std::string::npos) {
    return Error::invalid("alert_webhook_url", "must not have a fragment (#...)");
  }
  if (url.find_first_of(" \t\r\n") != std::string::npos) {
    return Error::invalid("alert_webhook_url", "must not hold spaces or line breaks");
  }
  WebhookTarget out;
  out.base_url = std::string(kScheme) + host;
  if (slash == std::string::npos) {
    out.target = "/";
  } else {
    out.target = url[slash] == '?' ? "/" + url.substr(slash) : url.substr(slash);
  }
  return out;
}

struct HistoryWorker::State {
  State(asio::io_context& ioc, asio::any_io_executor b, store::Store& s, const Clock& c, HistoryWorkerOptions o)
      : strand(asio::make_strand(ioc)),
        detect_timer(strand),
        alert_timer(strand),
        blocking(std::move(b)),
        store(s),
        clock(c),
        options(std::move(o)) {
    if (!options.webhook_url.empty()) {
      if (auto target = split_webhook_url(options.webhook_url); target.ok()) {
        webhook = *target;
        client = std::make_unique<http::Client>(webhook->base_url);
      } else {
        spdlog::error("alerts disabled: {}", target.error().describe());
      }
    }
  }
  asio::strand<asio::io_context::executor_type> strand;
  asio::steady_timer detect_timer, alert_timer;
  asio::any_io_executor blocking;
  store::Store& store;
  const Clock& clock;
  const HistoryWorkerOptions options;
  std::optional<WebhookTarget> webhook;
  std::unique_ptr<http::Client> client;  // used by the sender loop only, one step at a time
  bool stopped = false;                  // on the strand
  bool wake_pending = false;             // on the strand
  std::atomic<std::int64_t> passes{0};
};

namespace {

using State = HistoryWorker::State;

// Waits on `timer` until it expires; a wait cancelled because its expiry moved is resumed with
// the new expiry. False when the worker stopped.
asio::awaitable<bool> wait_on(State& s, asio::steady_timer& timer) {
  for (;;) {
    boost::system::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (s.stopped) co_return false;
    if (!ec) co_return true;
  }
}

// Moves `timer` to expire within `within` from now, unless it expires sooner. On the strand.
void expire_within(asio::steady_timer& timer, milliseconds within) {
  const auto soon = asio::steady_timer::clock_type::now() + within;
  if (timer.expiry() > soon) timer.expires_at(soon);
}

// One detection pass, on the blocking pool: detect_changes until no series has unseen points.
// Returns the regressions it opened. Never throws.
std::int64_t detect_pass(State& s) {
  std::int64_t opened = 0;
  try {
    const bool enqueue = s.client != nullptr;
    for (int i = 0; i < kMaxDetectCallsPerPass; ++i) {
      auto pass = s.store.detect_changes(s.options.detector, enqueue);
      if (!pass.ok()) {
        spdlog::warn("change detection failed: {}", pass.error().describe());
        break;
      }
      for (const auto& c : pass->changes) {
        if (c.direction == history::ChangeDirection::kRegression) ++opened;
        spdlog::info(
            "{} {} in series {} ({} batch={} {} {} {} gpu={} build={}): median {:.4g} -> {:.4g} ms (x{:.3f}, p={:.2g}) "
            "first bad torch {} (result {}), last good torch {}",
            api::to_string(c.direction), c.id, c.series_id, c.key.model, c.key.batch, to_string(c.key.mode),
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
    auto due = s.store.due_alerts(now, kAlertsPerStep);
    if (!due.ok()) {
      spdlog::warn("alerts: cannot read the deliveries due: {}", due.error().describe());
      return kAlertPollMax;
    }
    for (const auto& d : *due) {
      std::string error;
      auto regression = s.store.get_regression(d.regression_id);
      if (!regression.ok()) {
        error = "regression " + std::to_string(d.regression_id) + ": " + regression.error().describe();
      } else {
        const std::string body = api::regression_opened_event(*regression, d.id).dump();
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
        if (auto st = s.store.alert_delivered(d.id, now); !st.ok()) {
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
      if (auto st = s.store.alert_attempt_failed(d.id, error, retry); !st.ok()) {
        spdlog::warn("alerts: cannot record the failed attempt of {}: {}", d.id, st.error().describe());
      }
    }
    if (static_cast<int>(due->size()) == kAlertsPerStep) return milliseconds(0);
    auto next = s.store.next_alert_due();
    if (!next.ok() || !*next) return kAlertPollMax;
    return std::clamp(milliseconds(**next - s.clock.now_ms()), kAlertPollMin, kAlertPollMax);
  } catch (const std::exception& e) {
    spdlog::error("alerts: sending failed: {}", e.what());
    return kAlertPollMax;
  }
}

asio::awaitable<void> detect_loop(std::shared_ptr<State> s) {
  const milliseconds debounce = std::min(kWakeDebounce, s->options.detect_interval);
  while (!s->stopped) {
    s->detect_timer.expires_after(s->wake_pending ? debounce : s->options.detect_interval);
    if (!co_await wait_on(*s, s->detect_timer)) break;
    s->wake_pending = false;
    const std::int64_t opened = co_await api::run_blocking(s->blocking, [&] { return detect_pass(*s); });
    if (opened > 0 && s->client && !s->stopped) expire_within(s->alert_timer, milliseconds(0));
  }
}

asio::awaitable<void> alert_loop(std::shared_ptr<State> s) {
  milliseconds sleep = kAlertPollMin;
  while (!s->stopped) {
    s->alert_timer.expires_after(sleep);
    if (!co_await wait_on(*s, s->alert_timer)) break;
    sleep = co_await api::run_blocking(s->blocking, [&] { return send_due_alerts(*s); });
  }
}

void spawn(State& s, asio::awaitable<void> loop, const char* what) {
  asio::co_spawn(s.strand, std::move(loop), [what](const std::exception_ptr& e) {
    if (!e) return;
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      spdlog::error("{} stopped: {}", what, ex.what());
    }
  });
}

}  // namespace

HistoryWorker::HistoryWorker(asio::io_context& ioc, asio::any_io_executor blocking, store::Store& store,
                             const Clock& clock, HistoryWorkerOptions options)
    : state_(std::make_shared<State>(ioc, std::move(blocking), store, clock, std::move(options))) {}

HistoryWorker::~HistoryWorker() { stop(); }

void HistoryWorker::start() {
  spawn(*state_, detect_loop(state_), "change detector");
  if (state_->client) spawn(*state_, alert_loop(state_), "alert sender");
}

void HistoryWorker::stop() {
  asio::post(state_->strand, [s = state_] {
    s->stopped = true;
    s->detect_timer.cancel();
    s->alert_timer.cancel();
  });
}

void HistoryWorker::wake() {
  asio::post(state_->strand, [s = state_] {
    if (s->stopped) return;
    s->wake_pending = true;
    expire_within(s->detect_timer, std::min(kWakeDebounce, s->options.detect_interval));
  });
}

std::int64_t HistoryWorker::detection_passes() const { return state_->passes.load(); }

}  // namespace benchfleet
