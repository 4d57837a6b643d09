// benchfleet-agent: a thin main over the agent library (see --help).
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <filesystem>
#include <iostream>
#include <thread>

#include "agent/daemon/agent_config.h"
#include "agent/daemon/daemon.h"

int main(int argc, char** argv) {
  auto parsed = benchfleet::agent::parse_agent_config(argc, argv);
  if (!parsed.ok()) {
    std::cerr << "benchfleet-agent: " << parsed.error().describe() << "\n";
    return 2;
  }
  if (parsed->exit_now) return parsed->exit_code;
  spdlog::set_level(spdlog::level::from_str(parsed->config.log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ agent: %v");

  // Signals go to one thread (sigwait) so every other thread can block in I/O safely.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  benchfleet::agent::Daemon daemon(parsed->config, ec ? std::string(argv[0]) : self.string());
  std::thread signals([&] {
    for (int n = 0; n < 2; ++n) {
      int signo = 0;
      if (sigwait(&stop_signals, &signo) != 0) return;
      daemon.request_stop();
    }
  });
  signals.detach();  // it waits for signals for the process's lifetime
  // Every thread the daemon starts guards its own body; this catches what escapes the start
  // (probing the builds, enrolment). Children alive then are killed by their owners'
  // destructors on the way out, and any a crash leaves behind by the next start.
  try {
    return daemon.run();
  } catch (const std::exception& e) {
    spdlog::critical("unexpected exception: {}; exiting", e.what());
  } catch (...) {
    spdlog::critical("unexpected exception; exiting");
  }
  return 1;
}
