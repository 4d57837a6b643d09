// Whether the enrolled fleet can run a submitted matrix: a torch build or GPU class that no
// enrolled agent offers (a typo, a class with no host yet) would leave its jobs queued forever.
// Pure: the caller lists the agents.
//   auto gaps = fleet_gaps(spec, descriptors);  // empty: every build x GPU class has a host
#pragma once

#include <string>
#include <vector>

#include "common/types.h"

namespace benchfleet::rules {

struct FleetGap {
  std::string field;    // "torch_builds[1]", "gpus[0]" or "torch_builds" (a build x class pair)
  std::string message;  // what is missing and what the fleet offers, with the nearest name
};

// The matrix's builds, GPU classes, and build x class pairs that no agent in `fleet` offers, in
// matrix order: a build is offered by an agent that has it, a class by an agent with a slot of
// it, a pair by one agent with both. An empty fleet has no gaps (nothing is enrolled yet to
// judge by: agents started for the queue, as the Slurm launcher's, enrol after the submit).
std::vector<FleetGap> fleet_gaps(const MatrixSpec& spec, const std::vector<AgentDescriptor>& fleet);

}  // namespace benchfleet::rules
