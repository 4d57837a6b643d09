// benchfleet-coordinator: wiring only (see --help). Parses the configuration, opens the store,
// constructs the services and the API over it, serves until SIGINT/SIGTERM, then stops them.

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

#include <malloc.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "common/catalog.h"
#include "common/http/server.h"
#include "coordinator/api/api.h"
#include "coordinator/app/db_tools.h"
#include "coordinator/config/config.h"
#include "coordinator/config/layer_options.h"
#include "coordinator/services/history_worker.h"
#include "coordinator/services/lease_sweeper.h"
#include "coordinator/services/schedule_runner.h"
#include "coordinator/store/backup.h"

namespace {

using namespace benchfleet;
namespace asio = boost::asio;

// Blocks of 128 KiB and more (a page of samples, a result's body as posted) are mapped for
// themselves and handed back to the system when freed. By default glibc raises that threshold to
// the largest block freed so far, after which such blocks come from the heaps and stay there:
// twenty reads of ten 10^6-sample results left the coordinator at 726 MiB resident instead of
// 20 (docs/testing.md, "Memory under large reads").
void hand_large_blocks_back() { mallopt(M_MMAP_THRESHOLD, 128 * 1024); }

int run(int argc, char** argv) {
  hand_large_blocks_back();
  if (auto tool = run_db_tool(argc, argv)) return *tool;
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
  auto reader_token = resolve_token(config.reader_token, config.db + ".reader-token");
  for (const auto* token : {&operator_token, &enrollment_token, &reader_token}) {
    if (!token->ok()) {
      spdlog::error("{}", token->error().message);
      return 1;
    }
  }

  const std::string catalog_path = config.catalog.empty() ? default_catalog_path() : config.catalog;
  auto catalog = Catalog::load_file(catalog_path);
  if (!catalog.ok()) {
    spdlog::error("cannot load the model catalog: {}", catalog.error().describe());
    return 1;
  }

  // One coordinator per database file; a restore waits for it to stop.
  std::optional<store::ServeLock> serving;
  if (config.db != ":memory:") {
    auto lock = store::ServeLock::acquire(config.db);
    if (!lock.ok()) {
      spdlog::error("{}", lock.error().message);
      return 1;
    }
    serving.emplace(std::move(*lock));
  }

  SystemClock clock;
  auto store = store::Store::open(store_options(config), clock);
  if (!store.ok()) {
    spdlog::error("cannot open the store: {}", store.error().message);
    return 1;
  }

  raise_open_file_limit(config);

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
  HistoryWorker history(ioc, blocking.get_executor(), (*store)->history(), clock, history_options(config));
  api::ApiContext ctx{**store,
                      *catalog,
                      config,
                      clock,
                      work,
                      metrics,
                      *operator_token,
                      *enrollment_token,
                      *reader_token,
                      stopping,
                      blocking.get_executor(),
                      [&history] { history.wake(); }};
  http::Router router;
  api::register_routes(router, ctx);

  auto server = http::Server::listen(ioc, *endpoint, router, server_limits(config),
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

  LeaseSweeper sweeper(ioc, blocking.get_executor(), (*store)->agents(), LeaseSweeper::period_for(config.lease_ttl_s));
  sweeper.start();
  // Schedules read "now" from the system clock, or (tests only) from the file named by
  // BENCHFLEET_TEST_SCHEDULE_CLOCK_FILE, re-read at each check.
  ScheduleRunner::NowSource schedule_now = [&clock]() -> Result<TimestampMs> { return clock.now_ms(); };
  if (const char* clock_file = std::getenv(kTestScheduleClockEnv); clock_file != nullptr && *clock_file != '\0') {
    spdlog::warn("schedules: using the test clock file {} ({}), not the system clock", clock_file,
                 kTestScheduleClockEnv);
    schedule_now = [path = std::string(clock_file)] { return read_clock_file(path); };
  }
  ScheduleRunner schedules(ioc, blocking.get_executor(), (*store)->history(), *catalog, work, std::move(schedule_now),
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
