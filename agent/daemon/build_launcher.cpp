#include "agent/daemon/build_launcher.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace benchfleet::agent {
namespace {

namespace fs = std::filesystem;

// Absolute, with symlinks resolved where the path exists, so a bind lands where the program
// will look for it.
std::string host_path(const std::string& p) {
  std::error_code ec;
  const fs::path canonical = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? p : canonical.lexically_normal().string();
}

}  // namespace

Result<RootInfo> read_root_info(const std::string& root) {
  std::error_code ec;
  if (!fs::is_directory(fs::path(root) / "usr" / "bin", ec)) {
    return Error::invalid("builds.root", root + " is not a root filesystem (no usr/bin)");
  }
  const fs::path marker = fs::path(root) / "etc" / "benchfleet-root.json";
  std::ifstream in(marker);
  if (!in) {
    return Error::invalid("builds.root", root + " has no " + marker.filename().string() +
                                             ": it was not made (or not finished) by scripts/torch-root.sh");
  }
  std::stringstream text;
  text << in.rdbuf();
  const auto j = nlohmann::json::parse(text.str(), nullptr, false);
  if (!j.is_object() || !j.contains("root_id") || !j["root_id"].is_string()) {
    return Error::invalid("builds.root", marker.string() + " is unreadable or has no root_id");
  }
  return RootInfo{j["root_id"].get<std::string>(), j.value("suite", ""), j.value("torch_version", "")};
}

BuildLauncher::BuildLauncher(std::string in_root, std::vector<std::string> writable, std::vector<std::string> readable,
                             std::string inductor_cache_dir)
    : in_root_(std::move(in_root)),
      writable_(std::move(writable)),
      readable_(std::move(readable)),
      inductor_cache_dir_(std::move(inductor_cache_dir)) {}

std::string BuildLauncher::inductor_cache_of(const TorchBuild& build) const {
  return (fs::path(inductor_cache_dir_) / build.name).string();
}

SpawnOptions BuildLauncher::wrap(const TorchBuild& build, SpawnOptions o) const {
  const std::string cache = host_path(inductor_cache_of(build));
  o.env_set["TORCHINDUCTOR_CACHE_DIR"] = cache;
  o.env_set["TRITON_CACHE_DIR"] = cache + "/triton";
  o.env_set["BENCHFLEET_BUILD"] = build.name;
  if (!build.library_dirs.empty()) {
    std::string path;
    for (const auto& dir : build.library_dirs) path += (path.empty() ? "" : ":") + dir;
    if (const char* inherited = std::getenv("LD_LIBRARY_PATH"); inherited != nullptr && *inherited != '\0') {
      path += std::string(":") + inherited;
    }
    o.env_set["LD_LIBRARY_PATH"] = path;
  }
  if (build.root.empty()) {
    o.env_unset.push_back("BENCHFLEET_BUILD_ROOT");
    o.env_unset.push_back("BENCHFLEET_BUILD_ROOT_ID");
    return o;
  }
  o.env_set["BENCHFLEET_BUILD_ROOT"] = build.root;
  o.env_set["BENCHFLEET_BUILD_ROOT_ID"] = build.root_info.id;

  // Host directories in the order in-root.sh must mount them: parents before what lies below
  // them, each once (a directory both written and read is bound writable).
  std::vector<std::pair<std::string, bool>> dirs;  // (path, writable)
  auto add = [&](const std::string& dir, bool writable) {
    if (dir.empty()) return;
    const std::string p = host_path(dir);
    auto same = std::find_if(dirs.begin(), dirs.end(), [&](auto& d) { return d.first == p; });
    if (same == dirs.end())
      dirs.emplace_back(p, writable);
    else
      same->second = same->second || writable;
  };
  for (const auto& d : writable_) add(d, true);
  for (const auto& d : readable_) add(d, false);
  if (!build.worker.empty()) add(fs::path(build.worker).parent_path().string(), false);
  std::stable_sort(dirs.begin(), dirs.end(), [](auto& a, auto& b) { return a.first.size() < b.first.size(); });

  std::vector<std::string> argv = {in_root_, build.root};
  for (const auto& [dir, writable] : dirs) {
    argv.push_back(writable ? "--bind" : "--ro-bind");
    argv.push_back(dir);
  }
  argv.push_back("--");
  argv.insert(argv.end(), o.argv.begin(), o.argv.end());
  o.argv = std::move(argv);
  o.signal_as_exit_status = true;
  return o;
}

}  // namespace benchfleet::agent
