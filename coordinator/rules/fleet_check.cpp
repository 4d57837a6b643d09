#include "coordinator/rules/fleet_check.h"

#include <algorithm>
#include <set>

#include "common/suggest.h"

namespace benchfleet::rules {
namespace {

bool has_build(const AgentDescriptor& a, const std::string& build) {
  return std::any_of(a.torch_builds.begin(), a.torch_builds.end(),
                     [&](const TorchBuildDescriptor& b) { return b.name == build; });
}

bool has_class(const AgentDescriptor& a, const std::string& gpu_class) {
  return std::any_of(a.slots.begin(), a.slots.end(), [&](const SlotDescriptor& s) { return s.gpu_class == gpu_class; });
}

const RuntimeSupport* runtime_of(const AgentDescriptor& a, const std::string& build, Runtime runtime) {
  for (const TorchBuildDescriptor& b : a.torch_builds) {
    if (b.name != build) continue;
    for (const RuntimeSupport& r : b.runtimes) {
      if (r.runtime == runtime) return &r;
    }
  }
  return nullptr;
}

bool serves(const AgentDescriptor& a, const std::string& build, const std::string& gpu_class, Runtime runtime) {
  return has_class(a, gpu_class) && runtime_of(a, build, runtime) != nullptr;
}

// Modes that capture and replay CUDA graphs: on the CPU they would be other modes under their names.
bool replays_cuda_graphs(Mode m) { return m == Mode::kReduceOverhead || m == Mode::kMaxAutotune; }

bool is_cpu_class(const std::string& gpu_class) { return gpu_class == "cpu" || gpu_class == "CPU"; }

std::string listed(const std::vector<std::string>& names) {
  std::string s;
  for (const std::string& n : names) {
    if (!s.empty()) s += ", ";
    s += n;
  }
  return s.empty() ? "none" : s;
}

}  // namespace

std::vector<FleetGap> fleet_gaps(const MatrixSpec& spec, const std::vector<AgentDescriptor>& fleet) {
  std::vector<FleetGap> gaps;
  if (fleet.empty()) return gaps;
  std::set<std::string> build_set;
  std::set<std::string> class_set;
  for (const AgentDescriptor& a : fleet) {
    for (const TorchBuildDescriptor& b : a.torch_builds) build_set.insert(b.name);
    for (const SlotDescriptor& s : a.slots) class_set.insert(s.gpu_class);
  }
  const std::vector<std::string> builds(build_set.begin(), build_set.end());
  const std::vector<std::string> classes(class_set.begin(), class_set.end());
  bool every_axis_offered = true;
  for (std::size_t i = 0; i < spec.torch_builds.size(); ++i) {
    const std::string& b = spec.torch_builds[i];
    if (build_set.contains(b)) continue;
    every_axis_offered = false;
    gaps.push_back({"torch_builds[" + std::to_string(i) + "]", "no enrolled agent offers torch build \"" + b + "\"" +
                                                                   did_you_mean(b, builds) +
                                                                   "; the fleet offers: " + listed(builds)});
  }
  for (std::size_t i = 0; i < spec.gpus.size(); ++i) {
    const std::string& g = spec.gpus[i];
    if (class_set.contains(g)) continue;
    every_axis_offered = false;
    gaps.push_back({"gpus[" + std::to_string(i) + "]", "no enrolled agent has a slot of GPU class \"" + g + "\"" +
                                                           did_you_mean(g, classes) +
                                                           "; the fleet has: " + listed(classes)});
  }
  if (!every_axis_offered) return gaps;  // the pairs would only repeat it
  for (std::size_t i = 0; i < spec.runtimes.size(); ++i) {
    const Runtime r = spec.runtimes[i];
    std::set<std::string> offered;  // the runtimes the fleet's agents offer for the matrix's builds
    bool found = false;
    for (const AgentDescriptor& a : fleet) {
      for (const TorchBuildDescriptor& b : a.torch_builds) {
        if (std::find(spec.torch_builds.begin(), spec.torch_builds.end(), b.name) == spec.torch_builds.end()) continue;
        for (const RuntimeSupport& rs : b.runtimes) {
          offered.insert(std::string(to_string(rs.runtime)));
          found = found || rs.runtime == r;
        }
      }
    }
    if (found) continue;
    every_axis_offered = false;
    gaps.push_back({"runtimes[" + std::to_string(i) + "]",
                    "no enrolled agent offers runtime \"" + std::string(to_string(r)) +
                        "\" for the matrix's torch builds" +
                        " (the libtorch runtime needs a worker built for the build); the fleet offers: " +
                        listed(std::vector<std::string>(offered.begin(), offered.end()))});
  }
  if (!every_axis_offered) return gaps;
  for (const std::string& b : spec.torch_builds) {
    for (const std::string& g : spec.gpus) {
      const bool served = std::any_of(fleet.begin(), fleet.end(),
                                      [&](const AgentDescriptor& a) { return has_build(a, b) && has_class(a, g); });
      if (!served) {
        gaps.push_back({"torch_builds", "no enrolled agent offers torch build \"" + b + "\" on a slot of GPU class \"" +
                                            g + "\" (each is offered, on different agents)"});
        continue;
      }
      for (const Runtime r : spec.runtimes) {
        if (std::any_of(fleet.begin(), fleet.end(), [&](const AgentDescriptor& a) { return serves(a, b, g, r); })) {
          continue;
        }
        gaps.push_back({"runtimes", "no enrolled agent offers runtime \"" + std::string(to_string(r)) +
                                        "\" for torch build \"" + b + "\" on a slot of GPU class \"" + g + "\""});
      }
    }
  }
  return gaps;
}

std::vector<FleetGap> unsupported_modes(const MatrixSpec& spec, const std::vector<AgentDescriptor>& fleet) {
  std::vector<FleetGap> out;
  for (std::size_t i = 0; i < spec.modes.size(); ++i) {
    const Mode m = spec.modes[i];
    const std::string mode(to_string(m));
    for (const std::string& b : spec.torch_builds) {
      for (const Runtime r : spec.runtimes) {
        for (const std::string& g : spec.gpus) {
          const std::string where =
              "build \"" + b + "\", runtime " + std::string(to_string(r)) + ", GPU class \"" + g + "\"";
          if (replays_cuda_graphs(m) && is_cpu_class(g)) {
            out.push_back({"modes[" + std::to_string(i) + "]",
                           mode + " on " + where +
                               " will end unsupported: it replays CUDA graphs, which need a CUDA "
                               "device"});
            continue;
          }
          bool served = false, runs = false;
          for (const AgentDescriptor& a : fleet) {
            if (!serves(a, b, g, r)) continue;
            served = true;
            const RuntimeSupport* rs = runtime_of(a, b, r);
            runs = runs || std::find(rs->modes.begin(), rs->modes.end(), m) != rs->modes.end();
          }
          if (served && !runs) {
            out.push_back({"modes[" + std::to_string(i) + "]",
                           mode + " on " + where +
                               " will end unsupported: no enrolled agent serving it runs that mode "
                               "there (GET /api/v1/agents lists each build's modes)"});
          }
        }
      }
    }
  }
  return out;
}

}  // namespace benchfleet::rules
