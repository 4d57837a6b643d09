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

#include <unistd.h>
#include <cstdlib>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <sstream>
#include <thread>

#include "common/catalog.h"
#include "common/http/server.h"
#include "coordinator/api/api.h"
#include "coordinator/app/db_tools.h"
#include "coordinator/config/config.h"
#include "coordinator/config/layer_options.h"
#include "coordinator/services/artifact_files.h"
#include "coordinator/services/history_worker.h"
#include "coordinator/services/lane.h"
#include "coordinator/services/lease_sweeper.h"
#include "coordinator/services/model_registry.h"
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
  if (auto tool = app::run_db_tool(argc, argv)) return *tool;
  auto parsed = config::parse_coordinator_config(argc, argv);
  if (!parsed.ok()) {
    std::cerr << "benchfleet-coordinator: " << parsed.error().describe() << "\n";
    return 2;
  }
  if (parsed->exit_now) return parsed->exit_code;
  const config::CoordinatorConfig config = parsed->config;
  spdlog::set_level(spdlog::level::from_str(config.log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ coordinator: %v");

  auto operator_token = config::resolve_token(config.operator_token, config.db + ".operator-token");
  auto enrollment_token = config::resolve_token(config.enrollment_token, config.db + ".enrollment-token");
  auto reader_token = config::resolve_token(config.reader_token, config.db + ".reader-token");
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
  auto store = store::Store::open(config::store_options(config), clock);
  if (!store.ok()) {
    spdlog::error("cannot open the store: {}", store.error().message);
    return 1;
  }

  // Models are data in the store: the shipped catalog's ids it lacks are registered first.
  services::ModelRegistry models((*store)->models(), config.model_roots);
  if (auto added = models.start(*catalog); !added.ok()) {
    spdlog::error("cannot register the model catalog: {}", added.error().describe());
    return 1;
  } else if (*added > 0) {
    spdlog::info("registered {} models of the catalog {}", *added, catalog_path);
  }
  services::ArtifactFiles artifacts(config.artifact_dir.empty() ? config.db + ".artifacts" : config.artifact_dir,
                                    static_cast<std::uint64_t>(config.max_artifact_bytes));
  if (config.db == ":memory:" && config.artifact_dir.empty()) {
    artifacts = services::ArtifactFiles(
        (std::filesystem::temp_directory_path() / ("benchfleet-artifacts-" + std::to_string(::getpid()))).string(),
        static_cast<std::uint64_t>(config.max_artifact_bytes));
  }
  if (auto opened = artifacts.open(); !opened.ok()) {
    spdlog::error("{}", opened.error().message);
    return 1;
  }

  config::raise_open_file_limit(config);

  auto endpoint = http::parse_listen_address(config.listen);
  if (!endpoint.ok()) {
    spdlog::error("--listen: {}", endpoint.error().describe());
    return 2;
  }

  asio::io_context ioc(config.threads);
  asio::thread_pool blocking(static_cast<std::size_t>(config.store_threads));
  // Agents first: their protocol has its own threads, whose store operations go ahead; reads
  // have theirs, at a lower CPU priority (docs/design.md §8).
  services::Lane agent_lane("agents", config.agent_threads);
  const int cores = static_cast<int>(std::max(1U, std::thread::hardware_concurrency()));
  services::Lane read_lane("reads", config.read_threads > 0 ? config.read_threads : cores, config.read_nice);
  services::WorkSignal work;
  (*store)->on_work_available([&work] { work.notify(); });
  // A database file replaced under the store (a copy or rename onto it, or onto its -wal): the
  // store already refuses every write; stop, and exit non-zero, rather than serve a store that
  // can no longer keep what it acknowledges. (stop_serving is set below, before ioc runs.)
  std::function<void()> stop_serving;
  std::atomic<bool> files_lost{false};
  (*store)->on_files_lost([&](const Error& why) {
    spdlog::critical("{}", why.message);
    files_lost.store(true);
    asio::post(ioc, [&stop_serving] { stop_serving(); });
  });
  api::Metrics metrics;
  std::atomic<bool> stopping{false};
  services::HistoryWorker history(ioc, blocking.get_executor(), (*store)->series(), (*store)->regressions(), clock,
                                  config::history_options(config));
  api::ApiContext ctx{**store,
                      models,
                      artifacts,
                      config,
                      clock,
                      work,
                      metrics,
                      *operator_token,
                      *enrollment_token,
                      *reader_token,
                      stopping,
                      blocking.get_executor(),
                      agent_lane.executor(),
                      read_lane.executor(),
                      [&history] { history.wake(); }};
  http::Router router;
  api::register_routes(router, ctx);

  auto server = http::Server::listen(ioc, *endpoint, router, config::server_limits(config),
                                     [&metrics](std::string_view route, unsigned status, double seconds) {
                                       metrics.observe_request(route, status, seconds);
                                     });
  if (!server.ok()) {
    spdlog::error("{}", server.error().message);
    return 1;
  }
  (*server)->start();
  spdlog::info("listening on {}:{} db={} catalog={} models={}", endpoint->address().to_string(), (*server)->port(),
               config.db, catalog_path, models.catalog()->models().size());
  // The agents' and operators' own listener: tokens only, its own connection slots, and its own
  // I/O thread, so its sockets are never served behind the public listener's.
  asio::io_context agent_ioc(1);
  std::unique_ptr<http::Server> agent_server;
  if (!config.agent_listen.empty()) {
    auto agent_endpoint = http::parse_listen_address(config.agent_listen);
    if (!agent_endpoint.ok()) {
      spdlog::error("--agent-listen: {}", agent_endpoint.error().describe());
      return 2;
    }
    http::ServerLimits limits = config::server_limits(config);
    limits.credentials_only = true;
    limits.reserved_connections = 0;
    limits.max_connections_per_peer = 0;
    auto listening = http::Server::listen(agent_ioc, *agent_endpoint, router, limits,
                                          [&metrics](std::string_view route, unsigned status, double seconds) {
                                            metrics.observe_request(route, status, seconds);
                                          });
    if (!listening.ok()) {
      spdlog::error("{}", listening.error().message);
      return 1;
    }
    agent_server = std::move(*listening);
    agent_server->start();
    spdlog::info("listening for agents and operators (tokens only) on {}:{}", agent_endpoint->address().to_string(),
                 agent_server->port());
    if (!config.agent_port_file.empty()) {
      std::ofstream(config.agent_port_file + ".tmp") << agent_server->port() << "\n";
      std::rename((config.agent_port_file + ".tmp").c_str(), config.agent_port_file.c_str());
    }
  }
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

  services::LeaseSweeper sweeper(ioc, blocking.get_executor(), (*store)->leases(),
                                 services::LeaseSweeper::period_for(config.lease_ttl_s));
  sweeper.start();
  // What a flood of reads allocated goes back to the system within seconds: glibc keeps freed
  // heap in its per-thread arenas until it is trimmed (trimmed on the read lane, off the I/O
  // threads).
  asio::steady_timer trimmer(asio::make_strand(ioc));  // its waits and its cancel on one strand
  std::function<void()> trim_later = [&] {
    trimmer.expires_after(std::chrono::seconds(5));
    trimmer.async_wait([&](const boost::system::error_code& ec) {
      if (ec || stopping.load()) return;
      asio::post(read_lane.executor(), [] { malloc_trim(0); });
      trim_later();
    });
  };
  trim_later();
  // Schedules read "now" from the system clock, or (tests only) from the configured clock file,
  // re-read at each check.
  services::ScheduleRunner::NowSource schedule_now = [&clock]() -> Result<TimestampMs> { return clock.now_ms(); };
  if (!config.schedule_clock_file.empty()) {
    spdlog::warn("schedules: using the clock file {} (schedule_clock_file), not the system clock",
                 config.schedule_clock_file);
    schedule_now = [path = config.schedule_clock_file] { return services::read_clock_file(path); };
  }
  services::ScheduleRunner schedules(ioc, blocking.get_executor(), (*store)->schedules(), models, work,
                                     std::move(schedule_now),
                                     {std::chrono::milliseconds(config.schedule_check_ms), config.max_cells});
  schedules.start();
  history.start();

  stop_serving = [&] {
    stopping.store(true);
    (*server)->stop();
    if (agent_server) agent_server->stop();
    asio::post(trimmer.get_executor(), [&trimmer] { trimmer.cancel(); });
    sweeper.stop();
    schedules.stop();
    history.stop();
  };
  asio::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&](const boost::system::error_code& ec, int signo) {
    if (ec) return;
    spdlog::info("signal {}: stopping (in-flight requests finish)", signo);
    stop_serving();
  });

  std::vector<std::thread> threads;
  if (agent_server) threads.emplace_back([&agent_ioc] { agent_ioc.run(); });
  for (int i = 1; i < config.threads; ++i) threads.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (auto& t : threads) t.join();
  blocking.join();
  agent_lane.join();
  read_lane.join();
  spdlog::info("stopped");
  return files_lost.load() ? 1 : 0;
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
