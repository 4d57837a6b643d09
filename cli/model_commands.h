// The CLI's commands for registered models and their artifacts (docs/models.md):
//   benchfleet models add FILE.yaml [--new-version]   register a definition (YAML or JSON)
//   benchfleet models show ID [--json]                one model, its versions and results
//   benchfleet models rm ID [--retire]                remove one (retire one with results)
//   benchfleet artifacts add PATH [--name NAME]       upload a file, or a directory as a tar
//   benchfleet artifacts [--json]                     list the uploaded artifacts
// (`benchfleet models` alone lists the models: fleet_commands.h.)
#pragma once

#include <CLI/CLI.hpp>

#include <optional>
#include <string>

#include "cli/fleet_client.h"
#include "cli/watch.h"

namespace benchfleet::cli {

class ModelCommands {
 public:
  // Adds add/show/rm under `models` and the `artifacts` command to `app`. REQUIRES: this object
  // outlives app.parse() and run().
  ModelCommands(CLI::App& app, CLI::App& models);
  ModelCommands(const ModelCommands&) = delete;
  ModelCommands& operator=(const ModelCommands&) = delete;

  // The exit code of the command app.parse() found, or nullopt when it named another one.
  std::optional<int> run(FleetClient& client, Console& console) const;

 private:
  int add(FleetClient& client, Console& console) const;
  int upload(FleetClient& client, Console& console) const;

  CLI::App *add_ = nullptr, *show_ = nullptr, *rm_ = nullptr, *artifacts_ = nullptr, *artifacts_add_ = nullptr;
  std::string file_, id_, path_, name_;
  bool new_version_ = false, retire_ = false, json_ = false;
};

}  // namespace benchfleet::cli
