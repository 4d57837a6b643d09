// The `benchfleet` command line: parses argv and runs one subcommand against the coordinator.
#pragma once

#include "cli/watch.h"

namespace benchfleet::cli {

// Runs the CLI; the exit code is one of progress.h's kExit* values. Output goes to
// console.out (data: tables, reports, ids) and console.err (progress, errors).
int run_cli(int argc, char** argv, Console& console);

}  // namespace benchfleet::cli
