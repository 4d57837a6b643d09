// `benchfleet compare --aa RUN`: how far this fleet's measurements move between fresh processes,
// the figure to know before trusting any gate. It submits RUN's matrix again (a slice of its
// models with --models) with `repetitions` fresh processes per cell, follows it, and prints per
// latency cell the spread of the repetitions' statistic (max / min - 1) and its CV, a summary
// against the device's stated noise floor, and the comparison of RUN with the new run (an A/A:
// no cell should read as a change).
//   aa_check(client, console, {.run = 5, .repetitions = 5});
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli/fleet_client.h"
#include "cli/watch.h"

namespace benchfleet::cli {

struct AaOptions {
  std::int64_t run = 0;
  int repetitions = 5;              // fresh processes per cell
  std::vector<std::string> models;  // a slice of the run's models (catalog ids); empty: all
  double interval_s = 1.0;          // between progress polls
};

// The exit code: kExitOk when the A/A ran and was read (whatever the noise), kExitError when the
// run or its report could not be read or submitted, or watch_run's code when the run did not end
// cleanly.
int aa_check(FleetClient& client, Console& console, const AaOptions& options);

// The per-cell noise table of a report (GET .../report?format=json) of a run with repetitions,
// Markdown; and the summary line. Pure, for tests.
std::string aa_noise_table(const nlohmann::json& report);

}  // namespace benchfleet::cli
