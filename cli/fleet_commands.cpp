#include "cli/fleet_commands.h"

#include <string>

#include "cli/fleet_views.h"
#include "cli/progress.h"

namespace benchfleet::cli {

FleetCommands::FleetCommands(CLI::App& app) {
  models_ = app.add_subcommand(
      "models",
      "List the registered models: ids, the short name a matrix or `series --model` may give instead\n"
      "(the id's part after its '/', or any unique ending of it after '/', '-' or '_'), task and source.\n"
      "`models add/show/rm` register, show and remove them (docs/models.md).");
  builds_ = app.add_subcommand(
      "builds",
      "List the torch builds the enrolled agents offer: exact versions, GPU classes, runtimes and their\n"
      "modes, and how many of the agents offering each are online. A matrix naming another build is\n"
      "refused unless submitted with --allow-pending.");
  modes_ = app.add_subcommand("modes",
                              "List the modes a matrix may name, what each measures, and which builds and runtimes "
                              "of the fleet run it.");
  for (CLI::App* c : {models_, builds_, modes_}) c->add_flag("--json", json_, "print the API's JSON");
}

std::optional<int> FleetCommands::run(FleetClient& client, Console& console) const {
  if (!models_->parsed() && !builds_->parsed() && !modes_->parsed()) return std::nullopt;
  if (models_->parsed() && !models_->get_subcommands().empty()) return std::nullopt;  // models add/show/rm
  auto answer = models_->parsed() ? client.models() : client.agents();
  if (!answer.ok()) {
    console.err << "benchfleet: " << answer.error().message << "\n";
    return kExitError;
  }
  if (json_) {
    console.out << answer->dump(2) << "\n";
  } else if (models_->parsed()) {
    console.out << models_view(*answer);
  } else if (builds_->parsed()) {
    console.out << builds_view(*answer);
  } else {
    console.out << modes_view(*answer);
  }
  return kExitOk;
}

}  // namespace benchfleet::cli
