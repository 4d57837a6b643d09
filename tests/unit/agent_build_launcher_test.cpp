// How the agent starts a build's programs (agent/daemon/build_launcher.h): on the host, or inside
// the build's root through in-root.sh; and reading the root's identity.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "agent/daemon/build_launcher.h"
#include "tests/support/temp_dir.h"

namespace benchfleet::agent {
namespace {

namespace fs = std::filesystem;

class BuildLauncherTest : public ::testing::Test {
 protected:
  std::string path(const std::string& p) const { return (dir_ / p).string(); }
  testing::TempDir tmp_{"bf-launch"};
  const fs::path dir_ = tmp_.path();
};

SpawnOptions runner_call() {
  SpawnOptions o;
  o.argv = {"/usr/bin/python3", "/src/agent/python/benchfleet_runner.py", "--capabilities"};
  return o;
}

TEST_F(BuildLauncherTest, HostBuildRunsAsGivenWithItsOwnInductorCache) {
  const BuildLauncher launcher("/x/in-root.sh", {path("work")}, {path("py")}, path("artifacts/inductor"));
  TorchBuild b;
  b.name = "stable";
  b.worker = "/opt/w/bin/benchfleet-worker";
  const SpawnOptions o = launcher.wrap(b, runner_call());
  EXPECT_EQ(o.argv, runner_call().argv);
  EXPECT_FALSE(o.signal_as_exit_status);
  EXPECT_EQ(o.env_set.at("TORCHINDUCTOR_CACHE_DIR"), path("artifacts/inductor/stable"));
  EXPECT_EQ(o.env_set.at("TRITON_CACHE_DIR"), path("artifacts/inductor/stable/triton"));
  EXPECT_EQ(o.env_set.at("BENCHFLEET_BUILD"), "stable");
  // A root's identity inherited from the agent's own environment must not leak into a host build.
  EXPECT_NE(std::find(o.env_unset.begin(), o.env_unset.end(), "BENCHFLEET_BUILD_ROOT_ID"), o.env_unset.end());

  TorchBuild other = b;
  other.name = "nightly";
  EXPECT_NE(launcher.wrap(other, runner_call()).env_set.at("TORCHINDUCTOR_CACHE_DIR"),
            o.env_set.at("TORCHINDUCTOR_CACHE_DIR"))
      << "two builds never share an Inductor cache";
}

TEST_F(BuildLauncherTest, LibraryFoldersOfTheBuildComeFirstOnTheLibraryPath) {
  const BuildLauncher launcher("/x/in-root.sh", {path("work")}, {path("py")}, path("artifacts/inductor"));
  TorchBuild b;
  b.name = "stable";
  b.worker = "/opt/w/bin/benchfleet-worker";
  EXPECT_EQ(launcher.wrap(b, runner_call()).env_set.count("LD_LIBRARY_PATH"), 0u)
      << "a build without library folders leaves the inherited library path alone";

  b.library_dirs = {"/venv/lib/python3.12/site-packages/nvidia/cu13/lib",
                    "/venv/lib/python3.12/site-packages/nvidia/cudnn/lib"};
  const char* saved = std::getenv("LD_LIBRARY_PATH");
  const std::string restore = saved ? saved : "";
  ::setenv("LD_LIBRARY_PATH", "/agent/own/lib", 1);
  const SpawnOptions o = launcher.wrap(b, runner_call());
  if (saved)
    ::setenv("LD_LIBRARY_PATH", restore.c_str(), 1);
  else
    ::unsetenv("LD_LIBRARY_PATH");
  EXPECT_EQ(o.env_set.at("LD_LIBRARY_PATH"),
            "/venv/lib/python3.12/site-packages/nvidia/cu13/lib:/venv/lib/python3.12/site-packages/nvidia/cudnn/lib:"
            "/agent/own/lib");
}

TEST_F(BuildLauncherTest, RootedBuildRunsInsideItsRootSeeingTheAgentsDirectories) {
  // The artifact directory lies inside the work directory's parent and is also listed as
  // readable: bound once, writable, after its parent.
  const BuildLauncher launcher("/x/in-root.sh", {path("state/artifacts"), path("state")},
                               {path("py"), path("state/artifacts"), path("py")}, path("state/artifacts/inductor"));
  TorchBuild b;
  b.name = "trixie";
  b.root = "/roots/trixie";
  b.root_info.id = "abc123";
  b.worker = path("rootworker/bin/benchfleet-worker");
  const SpawnOptions o = launcher.wrap(b, runner_call());
  const std::vector<std::string> want = {"/x/in-root.sh",
                                         "/roots/trixie",
                                         "--ro-bind",
                                         path("py"),
                                         "--bind",
                                         path("state"),
                                         "--ro-bind",
                                         path("rootworker/bin"),
                                         "--bind",
                                         path("state/artifacts"),
                                         "--",
                                         "/usr/bin/python3",
                                         "/src/agent/python/benchfleet_runner.py",
                                         "--capabilities"};
  EXPECT_EQ(o.argv, want);
  EXPECT_TRUE(o.signal_as_exit_status) << "bubblewrap reports a signal as 128+N";
  EXPECT_EQ(o.env_set.at("BENCHFLEET_BUILD_ROOT"), "/roots/trixie");
  EXPECT_EQ(o.env_set.at("BENCHFLEET_BUILD_ROOT_ID"), "abc123");
  EXPECT_EQ(o.env_set.at("TORCHINDUCTOR_CACHE_DIR"), path("state/artifacts/inductor/trixie"));
}

TEST_F(BuildLauncherTest, RootInfoNamesWhatIsWrong) {
  auto missing = read_root_info(path("nowhere"));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().field, "builds.root");
  EXPECT_NE(missing.error().message.find("is not a root filesystem"), std::string::npos) << missing.error().message;

  fs::create_directories(path("root/usr/bin"));
  fs::create_directories(path("root/etc"));
  auto unfinished = read_root_info(path("root"));
  ASSERT_FALSE(unfinished.ok());
  EXPECT_NE(unfinished.error().message.find("scripts/torch-root.sh"), std::string::npos) << unfinished.error().message;

  std::ofstream(path("root/etc/benchfleet-root.json")) << "{\"suite\": \"trixie\"}";
  EXPECT_FALSE(read_root_info(path("root")).ok()) << "a marker without root_id";

  std::ofstream(path("root/etc/benchfleet-root.json"))
      << R"({"suite": "trixie", "torch_version": "2.6.0+debian", "root_id": "2af264a82d9f547a"})";
  auto info = read_root_info(path("root"));
  ASSERT_TRUE(info.ok()) << info.error().message;
  EXPECT_EQ(info->id, "2af264a82d9f547a");
  EXPECT_EQ(info->suite, "trixie");
  EXPECT_EQ(info->torch_version, "2.6.0+debian");
}

}  // namespace
}  // namespace benchfleet::agent
