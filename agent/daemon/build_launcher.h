// How the agent starts a torch build's programs (exporter, python runner, worker, their
// --capabilities). A build may live in its own root filesystem (a Debian 13 root from
// scripts/torch-root.sh; later an unpacked container image): its programs then run inside it
// through scripts/in-root.sh (bubblewrap), with the agent's work and artifact directories and its
// python scripts visible at the same paths. Either way each build gets its own Inductor on-disk
// cache inside the agent's artifact directory, so compiled modes reuse it across jobs and builds
// never share one.
#pragma once

#include <string>
#include <vector>

#include "agent/daemon/process.h"
#include "common/result.h"
#include "common/types.h"

namespace benchfleet::agent {

// What scripts/torch-root.sh recorded about a root (<root>/etc/benchfleet-root.json).
struct RootInfo {
  std::string id;             // digest of every installed package and version
  std::string suite;          // e.g. "trixie"
  std::string torch_version;  // the root's torch when it was made
};

// Reads the root's marker. Errors name the root and what is missing, e.g. a directory that is
// not a root, or a root not made (or not finished) by scripts/torch-root.sh.
Result<RootInfo> read_root_info(const std::string& root);

// A torch build on this host: what it is called, its interpreter and its worker binary, and
// the root filesystem they live in ("" = this host's own).
struct TorchBuild {
  std::string name;
  std::string version;    // filled from the worker's (else the runner's) --capabilities at start
  std::string python;     // a path inside the root when the build has one
  std::string worker;     // a host path; run inside the root when the build has one; "": python runtime only
  std::string root;       // root filesystem, or "" (runs on the host)
  RootInfo root_info;     // read at start when `root` is set
  std::string torch_git;  // torch.version.git_version, from the runner
  // Folders of native libraries the build loads lazily (pip's nvidia/*/lib, e.g. NVRTC's
  // builtins for the TorchScript fuser), from the runner's --capabilities: its programs get
  // them first on LD_LIBRARY_PATH, so a C++ worker finds what the build's python finds.
  std::vector<std::string> library_dirs;
  std::string broken;                    // why the build cannot run anything ("" = it can)
  std::vector<RuntimeSupport> runtimes;  // advertised to the coordinator: the worker's, the runner's
};

class BuildLauncher {
 public:
  // `in_root`: scripts/in-root.sh. `writable` / `readable`: host directories a rooted build's
  // programs must see (work and artifact directories; the python scripts, the catalog and the
  // worker's directory). `inductor_cache_dir`: parent of the per-build Inductor caches.
  BuildLauncher(std::string in_root, std::vector<std::string> writable, std::vector<std::string> readable,
                std::string inductor_cache_dir);

  // `o` made to run for `build`: its Inductor cache (TORCHINDUCTOR_CACHE_DIR, TRITON_CACHE_DIR),
  // identity (BENCHFLEET_BUILD, BENCHFLEET_BUILD_ROOT, BENCHFLEET_BUILD_ROOT_ID) and library
  // folders (LD_LIBRARY_PATH: library_dirs before the agent's own) in the environment, and for a rooted build argv
  // wrapped by in-root.sh (the build's worker directory bound too) with `signal_as_exit_status` set.
  SpawnOptions wrap(const TorchBuild& build, SpawnOptions o) const;

  // The Inductor on-disk cache of `build` (created by the programs that use it).
  std::string inductor_cache_of(const TorchBuild& build) const;

 private:
  std::string in_root_;
  std::vector<std::string> writable_;
  std::vector<std::string> readable_;
  std::string inductor_cache_dir_;
};

}  // namespace benchfleet::agent
