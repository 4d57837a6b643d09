// The CLI's commands about what can be run:
//   benchfleet models [--json]   the catalog, with the short names a matrix may use
//   benchfleet builds [--json]   the torch builds enrolled agents offer
//   benchfleet modes [--json]    the modes, what each measures and who offers it
#pragma once

#include <CLI/CLI.hpp>

#include <optional>

#include "cli/fleet_client.h"
#include "cli/watch.h"

namespace benchfleet::cli {

class FleetCommands {
 public:
  // Registers the commands on `app`. REQUIRES: this object outlives app.parse() and run().
  explicit FleetCommands(CLI::App& app);
  FleetCommands(const FleetCommands&) = delete;
  FleetCommands& operator=(const FleetCommands&) = delete;

  // The `models` command, under which ModelCommands adds its own.
  CLI::App& models() const { return *models_; }

  // The exit code of the command app.parse() found, or nullopt when it named another one.
  std::optional<int> run(FleetClient& client, Console& console) const;

 private:
  CLI::App *models_ = nullptr, *builds_ = nullptr, *modes_ = nullptr;
  bool json_ = false;
};

}  // namespace benchfleet::cli
