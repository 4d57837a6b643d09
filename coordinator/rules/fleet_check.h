// Whether the enrolled fleet can run a submitted matrix: a torch build, GPU class or runtime that
// no enrolled agent offers (a typo, a class with no host yet, a worker not built) would leave its
// jobs queued forever; a mode the hosts that would run it cannot run ends `unsupported`.
// Pure: the caller lists the agents.
//   auto gaps = fleet_gaps(spec, descriptors);  // empty: every build x GPU class x runtime has a host
//   auto ends = unsupported_modes(spec, descriptors);  // empty: every mode runs where it will go
#pragma once

#include <string>
#include <vector>

#include "common/types.h"

namespace benchfleet::rules {

struct FleetGap {
  std::string field;  // "torch_builds[1]", "gpus[0]", "runtimes[0]", "torch_builds" (a build x class pair), "modes[2]"
  std::string message;  // what is missing and what the fleet offers, with the nearest name
};

// The matrix's builds, GPU classes, runtimes, and build x class x runtime combinations that no
// agent in `fleet` offers, in matrix order: a build is offered by an agent that has it, a class by
// an agent with a slot of it, a runtime by an agent with one of the matrix's builds offering it,
// a combination by one agent with all three. An empty fleet has no gaps (nothing is enrolled yet
// to judge by: agents started for the queue, as the Slurm launcher's, enrol after the submit).
std::vector<FleetGap> fleet_gaps(const MatrixSpec& spec, const std::vector<AgentDescriptor>& fleet);

// The matrix's (mode, build, runtime, GPU class) whose jobs the fleet would run only to answer
// `unsupported`: no agent serving that build, runtime and class lists the mode among the modes it
// runs there, or the mode replays CUDA graphs (reduce-overhead, max-autotune) on the CPU class.
// One entry per mode and build x runtime x class, field "modes[i]". Combinations no agent serves
// are fleet_gaps', not repeated here.
std::vector<FleetGap> unsupported_modes(const MatrixSpec& spec, const std::vector<AgentDescriptor>& fleet);

}  // namespace benchfleet::rules
