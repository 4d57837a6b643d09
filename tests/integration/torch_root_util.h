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

// Why the root build cannot be tested here, or "" when it can.
inline std::string missing_torch_root() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(fs::path(BENCHFLEET_TORCH_ROOT) / "etc" / "benchfleet-root.json", ec)) {
    return std::string("no torch root at ") + BENCHFLEET_TORCH_ROOT + " (run scripts/torch-root.sh)";
  }
  if (!fs::exists(BENCHFLEET_ROOT_WORKER, ec)) {
    return std::string("no worker built in the root at ") + BENCHFLEET_ROOT_WORKER +
           " (run scripts/build-worker.sh --root " + BENCHFLEET_TORCH_ROOT + " --out <build>/trixie-root-worker)";
  }
  return "";
}

#ifdef BENCHFLEET_SID_ROOT
// The same for the unstable root (scripts/torch-root.sh --suite sid) and its worker, for tests that
// also define BENCHFLEET_SID_ROOT and BENCHFLEET_SID_ROOT_WORKER.
inline std::string missing_sid_root() {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(fs::path(BENCHFLEET_SID_ROOT) / "etc" / "benchfleet-root.json", ec)) {
    return std::string("no unstable root at ") + BENCHFLEET_SID_ROOT + " (run scripts/torch-root.sh --suite sid)";
  }
  if (!fs::exists(BENCHFLEET_SID_ROOT_WORKER, ec)) {
    return std::string("no worker built in the unstable root at ") + BENCHFLEET_SID_ROOT_WORKER +
           " (run scripts/build-worker.sh --root " + BENCHFLEET_SID_ROOT + " --out <build>/sid-root-worker)";
  }
  return missing_torch_root();
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
