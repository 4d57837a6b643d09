#include "cli/fleet_views.h"

#include <map>
#include <set>
#include <string_view>
#include <vector>

#include "cli/views.h"
#include "common/types.h"

namespace benchfleet::cli {
namespace {

using nlohmann::json;

std::string joined(const std::set<std::string>& items, std::string_view separator = ", ") {
  std::string out;
  for (const std::string& item : items) {
    if (!out.empty()) out += separator;
    out += item;
  }
  return out.empty() ? "-" : out;
}

// Mode names in the order of all_modes() (eager first); names it does not know after, sorted.
std::string in_mode_order(const std::set<std::string>& modes) {
  std::vector<std::string> ordered;
  std::set<std::string> rest = modes;
  for (Mode m : all_modes()) {
    std::string name(to_string(m));
    if (rest.erase(name) > 0) ordered.push_back(std::move(name));
  }
  ordered.insert(ordered.end(), rest.begin(), rest.end());
  std::string out;
  for (const std::string& name : ordered) {
    if (!out.empty()) out += ' ';
    out += name;
  }
  return out;
}

const json& agents_of(const json& agent_list) {
  static const json kNone = json::array();
  const auto it = agent_list.find("agents");
  return it != agent_list.end() && it->is_array() ? *it : kNone;
}

// What each mode measures, as the matrix documentation says it.
std::string_view mode_meaning(Mode m) {
  switch (m) {
    case Mode::kEager:
      return "the model op by op, as written (libtorch: its TorchScript trace); every speedup's baseline";
    case Mode::kTorchscript:
      return "the trace frozen and optimized for inference (libtorch)";
    case Mode::kDefault:
      return "torch.compile (python) or an AOTInductor package (libtorch), default options";
    case Mode::kReduceOverhead:
      return "torch.compile mode=reduce-overhead: CUDA graphs (CUDA only)";
    case Mode::kMaxAutotune:
      return "torch.compile mode=max-autotune: kernel search and CUDA graphs (CUDA only)";
    case Mode::kMaxAutotuneNoCudagraphs:
      return "torch.compile mode=max-autotune-no-cudagraphs";
  }
  return "";
}

}  // namespace

std::string models_view(const json& model_list) {
  std::vector<std::vector<std::string>> rows;
  if (const auto it = model_list.find("models"); it != model_list.end() && it->is_array()) {
    for (const json& m : *it) {
      const std::string id = m.value("id", "?");
      rows.push_back({id, id.substr(id.rfind('/') + 1), m.value("display_name", "?"), member_text(m, "source")});
    }
  }
  if (rows.empty()) return "the catalog has no models\n";
  return render_text_table({"ID", "SHORT NAME", "TASK/MODEL", "SOURCE"}, rows);
}

std::string builds_view(const json& agent_list) {
  struct Build {
    std::set<std::string> versions, classes, agents, online;
    std::map<std::string, std::set<std::string>> modes;  // runtime -> modes
  };
  std::map<std::string, Build> builds;
  for (const json& a : agents_of(agent_list)) {
    std::set<std::string> classes;
    for (const json& s : a.value("slots", json::array())) classes.insert(s.value("gpu_class", "?"));
    const std::string agent = a.value("name", "?");
    for (const json& b : a.value("torch_builds", json::array())) {
      Build& build = builds[b.value("name", "?")];
      if (const std::string v = b.value("version", ""); !v.empty()) build.versions.insert(v);
      build.classes.insert(classes.begin(), classes.end());
      build.agents.insert(agent);
      if (a.value("online", false)) build.online.insert(agent);
      for (const json& r : b.value("runtimes", json::array())) {
        auto& modes = build.modes[r.value("runtime", "?")];
        for (const json& m : r.value("modes", json::array())) {
          if (m.is_string()) modes.insert(m.get<std::string>());
        }
      }
    }
  }
  if (builds.empty()) return "no agents enrolled: no torch builds are offered\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& [name, b] : builds) {
    std::set<std::string> runtimes;
    for (const auto& [runtime, modes] : b.modes) runtimes.insert(runtime + ": " + in_mode_order(modes));
    rows.push_back({name, joined(b.versions), joined(b.classes), joined(runtimes, "; "),
                    std::to_string(b.online.size()) + "/" + std::to_string(b.agents.size()) + " online"});
  }
  return render_text_table({"BUILD", "VERSIONS", "GPU CLASSES", "RUNTIMES AND MODES", "AGENTS"}, rows);
}

std::string modes_view(const json& agent_list) {
  std::map<std::string, std::set<std::string>> offered;  // mode -> "build/runtime"
  for (const json& a : agents_of(agent_list)) {
    for (const json& b : a.value("torch_builds", json::array())) {
      for (const json& r : b.value("runtimes", json::array())) {
        for (const json& m : r.value("modes", json::array())) {
          if (m.is_string()) offered[m.get<std::string>()].insert(b.value("name", "?") + "/" + r.value("runtime", "?"));
        }
      }
    }
  }
  std::vector<std::vector<std::string>> rows;
  for (Mode m : all_modes()) {
    const std::string name(to_string(m));
    const auto it = offered.find(name);
    rows.push_back({name, std::string(mode_meaning(m)), it == offered.end() ? "-" : joined(it->second)});
  }
  return render_text_table({"MODE", "WHAT IT MEASURES", "OFFERED BY"}, rows);
}

}  // namespace benchfleet::cli
