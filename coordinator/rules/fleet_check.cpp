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
  for (const std::string& b : spec.torch_builds) {
    for (const std::string& g : spec.gpus) {
      const bool served = std::any_of(fleet.begin(), fleet.end(),
                                      [&](const AgentDescriptor& a) { return has_build(a, b) && has_class(a, g); });
      if (!served) {
        gaps.push_back({"torch_builds", "no enrolled agent offers torch build \"" + b + "\" on a slot of GPU class \"" +
                                            g + "\" (each is offered, on different agents)"});
      }
    }
  }
  return gaps;
}

}  // namespace benchfleet::rules
