// benchfleet: the command line client of the coordinator (see --help).
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <iostream>
#include <thread>

#include "cli/app.h"

namespace {

std::atomic<bool> g_interrupted{false};

extern "C" void on_interrupt(int) { g_interrupted.store(true); }

int terminal_width() {
  winsize ws{};
  if (::ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  return 80;
}

}  // namespace

int main(int argc, char** argv) {
  // Ctrl-C while waiting stops the waiting, not the run; the loop notices at its next sleep.
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);

  using Clock = std::chrono::steady_clock;
  const auto epoch = Clock::now();
  benchfleet::cli::Console console{
      std::cout,
      std::cerr,
      ::isatty(STDERR_FILENO) == 1,
      terminal_width(),
      [epoch] { return std::chrono::duration<double>(Clock::now() - epoch).count(); },
      [](double seconds) {
        const auto until = Clock::now() + std::chrono::duration<double>(seconds);
        while (Clock::now() < until) {
          if (g_interrupted.load()) return false;
          std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return !g_interrupted.load();
      },
  };
  return benchfleet::cli::run_cli(argc, argv, console);
}
