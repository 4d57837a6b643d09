// A scratch directory for one test (or one test program), removed with its contents when the
// object goes out of scope:
//   benchfleet::testing::TempDir dir("bf-spool");   // $TMPDIR/bf-spool.XXXXXX, fresh and empty
//   Spool spool(dir.file("spool"));                 // "<dir>/spool"
// Each object gets its own directory (mkdtemp), so tests run in parallel (ctest -j, one process
// per test) never share one, and a directory left by a crashed run is never reused.
//   if (::testing::Test::HasFailure()) dir.keep();  // keep a failed test's files to look at
#pragma once

#include <stdlib.h>  // mkdtemp

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

namespace benchfleet::testing {

class TempDir {
 public:
  // Makes "$TMPDIR/<prefix>.XXXXXX" ($TMPDIR unset or empty: /tmp). Throws std::runtime_error
  // when it cannot.
  explicit TempDir(std::string_view prefix = "benchfleet-test") {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/" + std::string(prefix) + ".XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("cannot make a directory like " + pattern);
    path_ = pattern;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  TempDir(TempDir&& other) noexcept : path_(std::exchange(other.path_, {})), kept_(other.kept_) {}
  TempDir& operator=(TempDir&&) = delete;
  ~TempDir() {
    if (path_.empty() || kept_) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }

  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  // "<dir>/<name>" (not created).
  std::string file(std::string_view name) const { return (path_ / name).string(); }
  // Leaves the directory in place when the object goes: a failed test's files, for inspection.
  void keep() { kept_ = true; }

 private:
  std::filesystem::path path_;
  bool kept_ = false;
};

}  // namespace benchfleet::testing
