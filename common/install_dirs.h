// Where a benchfleet program finds the read-only files it ships with (the model catalog, the
// agent's python modules, the dashboard).
//
// An installed program (`cmake --install`, a release archive) finds them relative to its own
// executable: <dir of the executable>/../share/benchfleet, the layout cmake/ReleaseLayout.cmake
// installs. A program run from the build tree it was built in has no such directory and uses
// the source tree (and the build tree's assembled dashboard) instead. The two trees' paths are
// compiled into install_dirs.cpp alone, and build_tree_of() gives them only for an executable
// that lies inside that build tree: a release unpacked anywhere else never reads the build
// machine's paths, and a missing file there is reported at its installed path.
#pragma once

#include <filesystem>
#include <optional>

namespace benchfleet {

// The running program's executable (/proc/self/exe, symlinks resolved); empty when unreadable.
std::filesystem::path running_executable();

// <dir of `executable`>/../share/benchfleet, lexically normalised. Not checked for existence.
std::filesystem::path installed_share_dir(const std::filesystem::path& executable);

// The trees of the build this code was compiled in.
struct BuildTree {
  std::filesystem::path source_dir;  // the repository root (CMake's PROJECT_SOURCE_DIR)
  std::filesystem::path binary_dir;  // the build directory (CMake's PROJECT_BINARY_DIR)
};

// The build tree when `executable` lies inside its binary directory (a development build run
// in place), else nullopt (an installed copy, or an empty path).
std::optional<BuildTree> build_tree_of(const std::filesystem::path& executable);

}  // namespace benchfleet
