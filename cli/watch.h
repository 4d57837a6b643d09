// Following a run until it ends: the progress display of `submit --wait` and `watch`.
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>

#include "cli/fleet_client.h"

namespace benchfleet::cli {

// The terminal and the clock, injected so tests can drive the loop.
struct Console {
  std::ostream& out;
  std::ostream& err;
  bool err_is_terminal = false;               // draw a bar in place on `err`; else plain lines
  int width = 80;                             // terminal columns
  std::function<double()> now_s;              // monotonic seconds
  std::function<bool(double seconds)> sleep;  // false when interrupted (Ctrl-C)
};

struct WatchOptions {
  double interval_s = 1.0;         // between polls of the run
  double plain_every_s = 30.0;     // plain mode: repeat an unchanged line this often
  bool show_results = false;       // print a line per result as it arrives (on `out`)
  double give_up_after_s = 120.0;  // consecutive seconds the coordinator may be unreachable
};

// Polls GET /api/v1/runs/{id} until the run is done or cancelled, showing progress on
// console.err, then prints the summary there. Returns the exit code: exit_code_for() of the
// ended run, kExitInterrupted when sleep() reports an interruption (the run goes on), or
// kExitError when the run cannot be read (not found, or unreachable for give_up_after_s).
int watch_run(FleetClient& client, std::int64_t run_id, const WatchOptions& options, Console& console);

}  // namespace benchfleet::cli
