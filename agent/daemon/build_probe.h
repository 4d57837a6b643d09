// What a torch build can run on this host (docs/design.md §10), found at the agent's start by
// asking its programs (--capabilities) inside its root, when it has one.
#pragma once

#include <string>

#include "agent/daemon/agent_config.h"
#include "agent/daemon/build_launcher.h"

namespace benchfleet::agent {

// Fills `build`'s runtimes, version, torch_git, library_dirs and root_info: its root first (when
// it has one), then its python runner's (python runtime) and its worker's (libtorch)
// --capabilities on `device` ("cpu" or "cuda"), each started through `launcher` and recorded in
// `record_dir`, with their answers kept in `config.work_dir`. A build that cannot run at all (a
// missing or broken root, neither program answering) is still offered with both runtimes and
// every mode, and `build.broken` says why: its jobs then end with an `error` verdict naming the
// cause instead of waiting forever for an agent.
void probe_build(const AgentConfig& config, const BuildLauncher& launcher, const std::string& record_dir,
                 const std::string& device, TorchBuild& build);

}  // namespace benchfleet::agent
