// The check every command argument that names a stored object (run, schedule, series,
// regression) goes through:
//   cmd->add_option("id", run_id, "run id")->required()->check(positive_id());
#pragma once

#include <CLI/CLI.hpp>

namespace benchfleet::cli {

// Accepts a positive integer id of at most 18 digits; anything else fails the command line
// with "must be a positive integer id, got \"<value>\"" (exit code 2).
CLI::Validator positive_id();

}  // namespace benchfleet::cli
