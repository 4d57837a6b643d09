#include "common/install_dirs.h"

#include <algorithm>
#include <system_error>

// Set on this file only (common/CMakeLists.txt), so no other code can reach the build machine's
// paths except through build_tree_of().
#if !defined(BENCHFLEET_SOURCE_DIR) || !defined(BENCHFLEET_BINARY_DIR)
#error "BENCHFLEET_SOURCE_DIR and BENCHFLEET_BINARY_DIR must be defined for install_dirs.cpp"
#endif

namespace benchfleet {

namespace fs = std::filesystem;

fs::path running_executable() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe;
}

fs::path installed_share_dir(const fs::path& executable) {
  return (executable.parent_path() / ".." / "share" / "benchfleet").lexically_normal();
}

std::optional<BuildTree> build_tree_of(const fs::path& executable) {
  if (executable.empty()) return std::nullopt;
  std::error_code ec;
  // Both sides canonical where they exist: a build directory reached through a symlink still
  // contains its executables.
  const fs::path binary_dir = fs::weakly_canonical(BENCHFLEET_BINARY_DIR, ec);
  if (ec) return std::nullopt;
  const fs::path exe = fs::weakly_canonical(executable, ec);
  if (ec) return std::nullopt;
  // Inside: every component of binary_dir starts exe's path.
  const auto [dir_end, exe_at] = std::mismatch(binary_dir.begin(), binary_dir.end(), exe.begin(), exe.end());
  if (dir_end != binary_dir.end() || exe_at == exe.end()) return std::nullopt;
  return BuildTree{fs::path(BENCHFLEET_SOURCE_DIR), fs::path(BENCHFLEET_BINARY_DIR)};
}

}  // namespace benchfleet
