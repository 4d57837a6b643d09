// For integration tests that need the torch 2.6 root (scripts/torch-root.sh) and the worker built
// inside it (scripts/build-worker.sh --root): BENCHFLEET_TORCH_ROOT and BENCHFLEET_ROOT_WORKER are
// compile definitions of such tests (tests/integration/CMakeLists.txt). Without them a test
// skips, unless BENCHFLEET_REQUIRE_TORCH_ROOT=1 (scripts/test.sh sets it): then it fails.
//   TEST(X, Y) { REQUIRE_TORCH_ROOT(); ... }
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace benchfleet::testing {

// Why a build in `root` (made by scripts/torch-root.sh --suite `suite`) with its `worker` cannot be
// tested here, or "" when it can.
inline std::string missing_root(const std::string& root, const std::string& worker, const std::string& suite) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(fs::path(root) / "etc" / "benchfleet-root.json", ec)) {
    return "no " + suite + " root at " + root + " (run scripts/torch-root.sh --suite " + suite + ")";
  }
  if (!fs::exists(worker, ec)) {
    return "no worker built in the " + suite + " root at " + worker + " (run scripts/build-worker.sh --root " + root +
           " --out <build>/" + suite + "-root-worker)";
  }
  return "";
}

// The torch 2.6 root (BENCHFLEET_TORCH_ROOT, BENCHFLEET_ROOT_WORKER).
inline std::string missing_torch_root() {
  return missing_root(BENCHFLEET_TORCH_ROOT, BENCHFLEET_ROOT_WORKER, "trixie");
}

// A directory kept between test runs for `name` ($BENCHFLEET_CACHE, else ~/.cache/benchfleet, then
// test-agents/<name>), made when missing: for an agent's artifact cache and Inductor caches in a
// test that checks no cache state, so only its first run on a machine pays the cold compiles
// (the python root tests keep theirs under test-inductor/ the same way). Tests that check cold
// and warm compiles use fresh directories.
inline std::string kept_test_dir(const std::string& name) {
  namespace fs = std::filesystem;
  const char* cache = std::getenv("BENCHFLEET_CACHE");
  const char* home = std::getenv("HOME");
  fs::path base = cache != nullptr && *cache != 0 ? fs::path(cache)
                  : home != nullptr && *home != 0 ? fs::path(home) / ".cache" / "benchfleet"
                                                  : fs::temp_directory_path() / "benchfleet-cache";
  const fs::path dir = base / "test-agents" / name;
  std::error_code ec;
  fs::create_directories(dir, ec);
  return dir.string();
}

#ifdef BENCHFLEET_SID_ROOT
// Both roots: the unstable one (BENCHFLEET_SID_ROOT, BENCHFLEET_SID_ROOT_WORKER) and the torch 2.6 one.
inline std::string missing_sid_root() {
  const std::string why = missing_root(BENCHFLEET_SID_ROOT, BENCHFLEET_SID_ROOT_WORKER, "sid");
  return why.empty() ? missing_torch_root() : why;
}
#endif

}  // namespace benchfleet::testing

// Skips (or, with BENCHFLEET_REQUIRE_TORCH_ROOT=1, fails) when `missing` names what is missing.
#define REQUIRE_ROOTS(missing)                                                \
  do {                                                                        \
    if (const std::string why = (missing); !why.empty()) {                    \
      const char* required = std::getenv("BENCHFLEET_REQUIRE_TORCH_ROOT");    \
      if (required != nullptr && std::string(required) == "1") FAIL() << why; \
      GTEST_SKIP() << why;                                                    \
    }                                                                         \
  } while (false)
#define REQUIRE_TORCH_ROOT() REQUIRE_ROOTS(::benchfleet::testing::missing_torch_root())
