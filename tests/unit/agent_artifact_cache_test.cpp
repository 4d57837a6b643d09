// The agent's artifact cache against a real exporter process (a shell script standing in for
// benchfleet_export.py): every artifact carries the agent's own SHA-256 of its file, computed once
// and never reported for a file that has changed since.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/daemon/artifact_cache.h"
#include "agent/daemon/file_digest.h"
#include "tests/support/temp_dir.h"

namespace benchfleet::agent {
namespace {

namespace fs = std::filesystem;

// SHA-256 test vectors (FIPS 180-2).
constexpr char kAbc[] = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
constexpr char kEmpty[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

class ArtifactCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Writes "abc" as the artifact, its metadata beside it and on stdout, and counts its runs.
    write(dir_ / "export.sh",
          "args=\"$*\"\n"
          "while [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=\"$2\"; shift; done\n"
          "echo \"$args\" >>\"" +
              (dir_ / "exports").string() +
              "\"\n"
              "printf abc >\"$out/model.pt\"\n"
              "meta='{\"status\": \"ok\", \"artifact\": \"model.pt\", \"sha256\": \"exporter\"}'\n"
              "echo \"$meta\" >\"$out/metadata.json\"; echo \"$meta\"\n");
    exporter_.python = "/bin/sh";
    exporter_.script = (dir_ / "export.sh").string();
    exporter_.catalog = "unused";
    exporter_.timeout_s = 30;
  }
  static void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }
  static std::string read(const fs::path& path) {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  Artifact prepare() {
    const Prepared p = cache_.prepare(key_, exporter_);
    EXPECT_TRUE(p.artifact.has_value()) << p.message;
    return p.artifact.value_or(Artifact{});
  }
  int exports() {
    const std::string log = read(dir_ / "exports");
    return static_cast<int>(std::count(log.begin(), log.end(), '\n'));
  }

  testing::TempDir tmp_{"bf-artifacts"};
  const fs::path dir_ = tmp_.path();
  ArtifactCache cache_{(dir_ / "cache").string()};
  Exporter exporter_;
  ArtifactKey key_{"torchvision/resnet18",
                   std::nullopt,
                   "",
                   "local",
                   "1.13.0",
                   "",
                   "torchscript",
                   Mode::kEager,
                   1,
                   "cpu",
                   "cpu",
                   Dtype::kFloat32,
                   ""};
};

TEST(FileDigest, HashesTheFileOrNamesItWhenUnreadable) {
  const testing::TempDir tmp("bf-digest");
  const fs::path& dir = tmp.path();
  std::ofstream(dir / "abc") << "abc";
  std::ofstream(dir / "empty").flush();
  EXPECT_EQ(file_sha256((dir / "abc").string()).value(), kAbc);
  EXPECT_EQ(file_sha256((dir / "empty").string()).value(), kEmpty);
  const auto missing = file_sha256((dir / "missing").string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find((dir / "missing").string()), std::string::npos) << missing.error().message;
}

TEST_F(ArtifactCacheTest, TheExportAndEveryCachedUseCarryTheAgentsHash) {
  const Artifact exported = prepare();
  EXPECT_FALSE(exported.cached);
  EXPECT_EQ(exported.sha256, kAbc);
  const Artifact cached = prepare();
  EXPECT_TRUE(cached.cached);
  EXPECT_EQ(cached.path, exported.path);
  EXPECT_EQ(cached.sha256, kAbc);
  EXPECT_EQ(exports(), 1);
}

// Hashed once: a cached use takes the hash recorded beside the artifact (a multi-GB package is
// not read again per job) while the file is the one that was hashed.
TEST_F(ArtifactCacheTest, ACachedUseDoesNotHashTheUnchangedFileAgain) {
  const fs::path record = fs::path(prepare().path).parent_path() / "sha256.json";
  nlohmann::json j = nlohmann::json::parse(read(record));
  ASSERT_EQ(j.value("sha256", ""), kAbc) << j.dump();
  j["sha256"] = std::string(64, 'f');  // only a re-hash would give kAbc back
  write(record, j.dump());
  EXPECT_EQ(prepare().sha256, std::string(64, 'f'));
}

TEST_F(ArtifactCacheTest, AChangedOrReplacedArtifactIsHashedAgain) {
  const fs::path file = prepare().path;
  // Rewritten in place at the same size; its times move on as they would at any later write
  // (set here, so the test does not depend on the file system's clock tick).
  const auto written = fs::last_write_time(file);
  write(file, "xyz");
  fs::last_write_time(file, written + std::chrono::seconds(1));
  EXPECT_EQ(prepare().sha256, "3608bca1e44ea6c4d268eb6db02260269892c0b42b86bbf1e77a6fa16c3c9282");
  // Replaced by another file (a new inode), as copying another artifact into the cache would.
  write(file.string() + ".new", "");
  fs::rename(file.string() + ".new", file);
  EXPECT_EQ(prepare().sha256, kEmpty);
  EXPECT_EQ(exports(), 1);
}

// An artifact cached by an agent that did not hash (no record beside it) is hashed at first use.
TEST_F(ArtifactCacheTest, AnArtifactCachedWithoutARecordIsHashedAtFirstUse) {
  const fs::path file = prepare().path;
  fs::remove(file.parent_path() / "sha256.json");
  EXPECT_EQ(prepare().sha256, kAbc);
  EXPECT_TRUE(fs::exists(file.parent_path() / "sha256.json"));
}

// A cache entry whose file is gone is exported again rather than handed to the worker.
TEST_F(ArtifactCacheTest, AVanishedArtifactIsExportedAgain) {
  const fs::path file = prepare().path;
  fs::remove(file);
  const Artifact again = prepare();
  EXPECT_FALSE(again.cached);
  EXPECT_EQ(again.sha256, kAbc);
  EXPECT_EQ(exports(), 2);
}

// The exporter is told the job's dtype, and each dtype (and a test-only perturbation) is its own
// cache entry: a float16 job never runs the float32 package, nor an unperturbed job a perturbed one.
TEST_F(ArtifactCacheTest, EachDtypeAndPerturbationIsItsOwnExport) {
  const Artifact float32 = prepare();
  key_.dtype = Dtype::kBfloat16;
  const Artifact bfloat16 = prepare();
  EXPECT_FALSE(bfloat16.cached);
  EXPECT_NE(bfloat16.path, float32.path);
  EXPECT_NE(bfloat16.path.find("-bfloat16-"), std::string::npos) << bfloat16.path;
  key_.test_perturbation = "0.05";
  EXPECT_FALSE(prepare().cached);
  key_.test_perturbation.clear();
  EXPECT_TRUE(prepare().cached);
  key_.dtype = Dtype::kFloat32;
  EXPECT_TRUE(prepare().cached);
  EXPECT_EQ(exports(), 3);
  const std::string log = read(dir_ / "exports");
  EXPECT_NE(log.find("--dtype float32"), std::string::npos) << log;
  EXPECT_NE(log.find("--dtype bfloat16"), std::string::npos) << log;
}

// An exporter ended by a signal is a crash carrying that signal, so the slot can tell Slurm's
// SIGTERM (scancel of the allocation while it exports: the job runs again elsewhere) from the
// job's own failure; one that fails by itself stays an error. Neither is cached.
TEST_F(ArtifactCacheTest, AnExporterKilledByASignalIsACrashWithItsSignal) {
  write(dir_ / "export.sh", "echo exporting >&2; kill -TERM $$; sleep 5\n");
  const Prepared killed = cache_.prepare(key_, exporter_);
  EXPECT_FALSE(killed.artifact.has_value());
  EXPECT_EQ(killed.failure, ResultStatus::kCrash) << killed.message;
  EXPECT_EQ(killed.signal, SIGTERM);
  EXPECT_NE(killed.message.find("signal 15"), std::string::npos) << killed.message;

  write(dir_ / "export.sh", "echo broken >&2; exit 3\n");
  const Prepared failed = cache_.prepare(key_, exporter_);
  EXPECT_FALSE(failed.artifact.has_value());
  EXPECT_EQ(failed.failure, ResultStatus::kError) << failed.message;
  EXPECT_FALSE(failed.signal.has_value());
}

}  // namespace
}  // namespace benchfleet::agent
