// benchfleet-coordinator: a thin main over the coordinator library (see --help).
#include <sys/resource.h>
#include <sys/stat.h>

#include <spdlog/spdlog.h>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "common/catalog.h"
#include "common/http/server.h"
#include "coordinator/api/api.h"
#include "coordinator/api/blocking.h"
#include "coordinator/auth.h"
#include "coordinator/config.h"
#include "coordinator/history_worker.h"
#include "coordinator/lease_sweeper.h"
#include "coordinator/schedule_runner.h"

namespace {

using namespace benchfleet;
namespace asio = boost::asio;

// The configured token, else the one kept in `path`, else a new one written there (0600).
Result<std::string> resolve_token(const std::string& configured, const std::string& path) {
  if (!configured.empty()) return configured;
  if (std::ifstream in(path); in) {
    std::string token;
    std::getline(in, token);
    if (!token.empty()) return token;
  }
  const std::string token = auth::generate_secret();
  const mode_t old = umask(077);
  std::ofstream out(path, std::ios::trunc);
  umask(old);
  if (!out || !(out << token << "\n") || !out.flush()) return Error::internal("cannot write " + path);
  ::chmod(path.c_str(), 0600);
  spdlog::info("generated a token into {} (mode 0600)", path);
  return token;
}

int run(int argc, char** argv) {
  auto parsed = parse_coordinator_config(argc, argv);
  if (!parsed.ok()) {
    std::cerr << "benchfleet-coordinator: " << parsed.error().describe() << "\n";
    return 2;
  }
  if (parsed->exit_now) return parsed->exit_code;
  const CoordinatorConfig config = parsed->config;
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ coordinator: %v");

  auto operator_token = resolve_token(config.operator_token, config.db + ".operator-token");
  auto enrollment_token = resolve_token(config.enrollment_token, config.db + ".enrollment-token");
  if (!operator_token.ok() || !enrollment_token.ok()) {
    spdlog::error("{}", (!operator_token.ok() ? operator_token.error() : enrollment_token.error()).message);
    return 1;
  }

  const std::string catalog_path = config.catalog.empty() ? default_catalog_path() : config.catalog;
  auto catalog = Catalog::load_file(catalog_path);
  if (!catalog.ok()) {
    spdlog::error("cannot load the model catalog: {}", catalog.error().describe());
    return 1;
  }

  SystemClock clock;
  store::StoreOptions options;
  options.path = config.db;
  options.max_attempts = config.max_attempts;
  options.lease_ttl_ms = config.lease_ttl_s * 1000LL;
  options.restart_grace_ms = config.restart_grace_s * 1000LL;
  auto store = store::Store::open(options, clock);
  if (!store.ok()) {
    spdlog::error("cannot open the store: {}", store.error().message);
    return 1;
  }

  // max_connections bounds the sockets, not the soft open-file limit (often 1024): raise it to
  // the hard limit, and say so when the bound still cannot be reached.
  if (rlimit files{}; ::getrlimit(RLIMIT_NOFILE, &files) == 0) {
    if (files.rlim_cur < files.rlim_max) {
      files.rlim_cur = files.rlim_max;
      ::setrlimit(RLIMIT_NOFILE, &files);
      ::getrlimit(RLIMIT_NOFILE, &files);
    }
    if (files.rlim_cur != RLIM_INFINITY && files.rlim_cur < static_cast<rlim_t>(config.max_connections) + 64) {
      spdlog::warn(
          "the open-file limit ({}) is below max_connections ({}) + 64: connections beyond it wait in the "
          "listen backlog instead of getting 503",
          static_cast<unsigned long long>(files.rlim_cur), config.max_connections);
    }
  }

  auto endpoint = http::parse_listen_address(config.listen);
  if (!endpoint.ok()) {
    spdlog::error("--listen: {}", endpoint.error().describe());
    return 2;
  }

  asio::io_context ioc(config.threads);
  asio::thread_pool blocking(static_cast<std::size_t>(config.store_threads));
  WorkSignal work;
  (*store)->on_work_available([&work] { work.notify(); });
  Metrics metrics;
  std::atomic<bool> stopping{false};
  HistoryWorkerOptions history_options;
  history_options.detect_interval = std::chrono::milliseconds(config.detect_interval_ms);
  history_options.detector.min_effect = config.detect_min_effect;
  history_options.detector.alpha = config.detect_alpha;
  history_options.detector.confirm_runs = config.detect_confirm_runs;
  history_options.detector.baseline_runs = config.detect_baseline_runs;
  history_options.detector.min_baseline_runs = config.detect_min_baseline_runs;
  history_options.webhook_url = config.alert_webhook_url;
  history_options.alert_timeout = std::chrono::milliseconds(config.alert_timeout_ms);
  history_options.alert_max_attempts = config.alert_max_attempts;
  history_options.alert_backoff_initial = std::chrono::milliseconds(config.alert_backoff_initial_ms);
  history_options.alert_backoff_max = std::chrono::milliseconds(config.alert_backoff_max_ms);
  HistoryWorker history(ioc, blocking.get_executor(), **store, clock, history_options);
  api::ApiContext ctx{**store,
                      *catalog,
                      config,
                      clock,
                      work,
                      metrics,
                      *operator_token,
                      *enrollment_token,
                      stopping,
                      blocking.get_executor(),
                      [&history] { history.wake(); }};
  http::Router router;
  api::register_routes(router, ctx);

  http::ServerLimits limits;
  limits.body_limit = static_cast<std::size_t>(config.max_body_bytes);
  limits.header_limit = static_cast<std::size_t>(config.max_header_bytes);
  limits.request_timeout = std::chrono::seconds(config.request_timeout_s);
  limits.max_connections = static_cast<std::size_t>(config.max_connections);
  limits.max_inflight_body_bytes = static_cast<std::size_t>(config.max_inflight_body_bytes);
  auto server = http::Server::listen(ioc, *endpoint, router, limits,
                                     [&metrics](std::string_view route, unsigned status, double seconds) {
                                       metrics.observe_request(route, status, seconds);
                                     });
  if (!server.ok()) {
    spdlog::error("{}", server.error().message);
    return 1;
  }
  (*server)->start();
  spdlog::info("listening on {}:{} db={} catalog={} models={}", endpoint->address().to_string(), (*server)->port(),
               config.db, catalog_path, catalog->models().size());
  if (config.web_root.empty()) {
    spdlog::info("dashboard disabled (web_root is empty)");
  } else if (std::error_code ec; !std::filesystem::is_directory(config.web_root, ec)) {
    spdlog::warn(
        "dashboard: web_root {} is not a directory; / answers 404 (build the benchfleet_web_assets target, "
        "or set --web-root)",
        config.web_root);
  } else {
    spdlog::info("dashboard at http://{}:{}/ from {}", endpoint->address().to_string(), (*server)->port(),
                 config.web_root);
  }
  if (!config.port_file.empty()) {
    std::ofstream(config.port_file + ".tmp") << (*server)->port() << "\n";
    std::rename((config.port_file + ".tmp").c_str(), config.port_file.c_str());
  }

  LeaseSweeper sweeper(ioc, blocking.get_executor(), **store, LeaseSweeper::period_for(config.lease_ttl_s));
  sweeper.start();
  // Schedules read "now" from the system clock, or (tests only) from the file named by
  // BENCHFLEET_TEST_SCHEDULE_CLOCK_FILE, re-read at each check.
  ScheduleRunner::NowSource schedule_now = [&clock]() -> Result<TimestampMs> { return clock.now_ms(); };
  if (const char* clock_file = std::getenv(kTestScheduleClockEnv); clock_file != nullptr && *clock_file != '\0') {
    spdlog::warn("schedules: using the test clock file {} ({}), not the system clock", clock_file,
                 kTestScheduleClockEnv);
    schedule_now = [path = std::string(clock_file)] { return read_clock_file(path); };
  }
  ScheduleRunner schedules(ioc, blocking.get_executor(), **store, *catalog, work, std::move(schedule_now),
                           {std::chrono::milliseconds(config.schedule_check_ms), config.max_cells});
  schedules.start();
  history.start();

  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int signo) {
    if (ec) return;
    spdlog::info("signal {}: stopping (in-flight requests finish)", signo);
    stopping.store(true);
    (*server)->stop();
    sweeper.stop();
    schedules.stop();
    history.stop();
  });

  std::vector<std::thread> threads;
  for (int i = 1; i < config.threads; ++i) threads.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (auto& t : threads) t.join();
  blocking.join();
  spdlog::info("stopped");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << "benchfleet-coordinator: fatal: " << e.what() << "\n";
    return 1;
  }
}
