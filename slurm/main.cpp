// benchfleet-slurm-launcher: a thin main over the launcher library (see --help).
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <iostream>
#include <thread>

#include "common/clock.h"
#include "slurm/command_runner.h"
#include "slurm/launcher.h"
#include "slurm/launcher_config.h"
#include "slurm/queue_source.h"
#include "slurm/sbatch_script.h"
#include "slurm/slurm_commands.h"

namespace {

constexpr const char* kDescription =
    R"(benchfleet-slurm-launcher: runs benchfleet agents as Slurm batch jobs while the coordinator
has queued work for them.

Every poll_s seconds it lists its allocations (squeue --me --name=<job names>, so a restart
adopts what an earlier run submitted), records those that started or ended in
<state_dir>/timeline.jsonl (how they ended from sacct, else scontrol, else "ended, state
unknown"), reads GET /api/v1/queue from the coordinator, and for each configured GPU class
submits min(max_allocations, queued) - (pending + running) allocations as ONE sbatch call
(--array=0-K when more than one), at most max_submissions_per_minute sbatch calls in any 60 s.
Nothing is submitted in a pass where squeue or the queue cannot be read. Each allocation runs
`exec <agent_command> --allocation slurm --idle-exit-s N`; its output goes to
<state_dir>/logs/slurm-%A_%a.out (state_dir must be reachable at the same path on the compute
nodes). SIGTERM/SIGINT: finish the pass and exit 0, leaving the allocations running.

Exit status: 0 stopped (or --once pass without error, --print-script); 1 a --once pass had an
error or the state directory cannot be prepared; 2 bad options or configuration.
The configuration keys: docs/operations.md; the design: docs/design.md §10.2.)";

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{kDescription, "benchfleet-slurm-launcher"};
  std::string config_path;
  bool once = false;
  std::string print_class;
  std::string log_level = "info";
  app.add_option("-c,--config", config_path, "launcher YAML config (coordinator, poll_s, classes: ...)")->required();
  app.add_flag("--once", once, "run one reconcile pass, then exit (1 when the pass had an error)");
  app.add_option("--print-script", print_class, "print the sbatch script of GPU class CLASS and exit")
      ->option_text("CLASS");
  app.add_option("--log-level", log_level, "trace, debug, info, warn, error")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
      ->capture_default_str();
  app.set_version_flag("--version", std::string(BENCHFLEET_VERSION));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  spdlog::set_level(spdlog::level::from_str(log_level));
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %^%l%$ slurm-launcher: %v");

  auto config = benchfleet::slurm::load_launcher_config(config_path);
  if (!config.ok()) {
    std::cerr << "benchfleet-slurm-launcher: " << config.error().describe() << "\n";
    return 2;
  }
  if (!print_class.empty()) {
    const auto* cls = config->find_class(print_class);
    if (cls == nullptr) {
      std::cerr << "benchfleet-slurm-launcher: --print-script: no class \"" << print_class << "\" in " << config_path
                << "\n";
      return 2;
    }
    std::cout << benchfleet::slurm::render_sbatch_script(*config, *cls);
    return 0;
  }
  signal(SIGPIPE, SIG_IGN);
  auto token = benchfleet::slurm::read_api_token(config->api_token_file);
  if (!token.ok()) {
    std::cerr << "benchfleet-slurm-launcher: " << token.error().describe() << "\n";
    return 2;
  }

  try {
    benchfleet::SystemClock clock;
    benchfleet::slurm::ProcessRunner runner;
    benchfleet::slurm::SlurmCommands slurm(*config, runner);
    benchfleet::slurm::HttpQueueSource queue(config->coordinator, *token);
    benchfleet::slurm::Launcher launcher(*config, slurm, queue, clock);
    if (auto st = launcher.prepare(); !st.ok()) {
      spdlog::error("{}", st.error().describe());
      return 1;
    }
    if (once) {
      const auto report = launcher.reconcile();
      if (!report.status.ok()) {
        spdlog::error("pass: {}", report.status.error().describe());
        return 1;
      }
      return 0;
    }
    // Signals go to one thread (sigwait), so a pass is never cut short; children get an empty
    // mask (ProcessRunner). --once keeps the default: a signal ends it at once.
    sigset_t stop_signals;
    sigemptyset(&stop_signals);
    sigaddset(&stop_signals, SIGTERM);
    sigaddset(&stop_signals, SIGINT);
    pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
    std::thread signals([&] {
      int signo = 0;
      if (sigwait(&stop_signals, &signo) == 0) {
        spdlog::info("signal {}: stopping after this pass (allocations keep running)", signo);
      }
      launcher.stop();
    });
    spdlog::info("watching {} class(es) for {} every {} s; timeline in {}/timeline.jsonl", config->classes.size(),
                 config->coordinator, config->poll_s, config->state_dir);
    launcher.run();
    // run() returns only after stop(), which the signal thread calls after its sigwait.
    signals.join();
    spdlog::info("stopped");
    return 0;
  } catch (const std::exception& e) {
    spdlog::critical("unexpected exception: {}; exiting", e.what());
  } catch (...) {
    spdlog::critical("unexpected exception; exiting");
  }
  return 1;
}
