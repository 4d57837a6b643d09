// Where the programs find their shipped files (common/install_dirs.h): beside an installed
// executable, and the source tree only for an executable inside its build tree. This test's own
// executable lies in the build tree (so does catalog_test's, which checks the catalog's default;
// tests/deploy/install_test.sh runs an installed coordinator).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "agent/daemon/agent_config.h"
#include "common/install_dirs.h"
#include "tests/support/temp_dir.h"

namespace benchfleet {
namespace {

namespace fs = std::filesystem;

class InstallDirsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto tree = build_tree_of(running_executable());
    ASSERT_TRUE(tree.has_value()) << running_executable() << " is a test of the build tree";
    tree_ = *tree;
  }
  testing::TempDir tmp_{"bf-install-dirs"};
  const fs::path dir_ = tmp_.path();
  BuildTree tree_;
};

TEST_F(InstallDirsTest, ShareDirIsBesideTheExecutablesDirectory) {
  EXPECT_EQ(installed_share_dir("/opt/benchfleet/releases/r1/bin/benchfleet-agent"),
            fs::path("/opt/benchfleet/releases/r1/share/benchfleet"));
  EXPECT_EQ(installed_share_dir("/usr/local/bin/../bin/benchfleet"), fs::path("/usr/local/share/benchfleet"));
}

TEST_F(InstallDirsTest, BuildTreeOnlyForExecutablesInsideIt) {
  EXPECT_EQ(tree_.source_dir, fs::path(BENCHFLEET_SOURCE_DIR));
  EXPECT_TRUE(build_tree_of(tree_.binary_dir / "coordinator" / "benchfleet-coordinator").has_value());
  // An installed copy anywhere else, including a sibling whose name starts the same.
  EXPECT_FALSE(build_tree_of("/opt/benchfleet/current/bin/benchfleet-coordinator").has_value());
  EXPECT_FALSE(build_tree_of(tree_.binary_dir.string() + "-release/bin/benchfleet-coordinator").has_value());
  EXPECT_FALSE(build_tree_of(tree_.binary_dir.parent_path() / "benchfleet-coordinator").has_value());
  EXPECT_FALSE(build_tree_of(tree_.binary_dir).has_value());
  EXPECT_FALSE(build_tree_of("").has_value());
}

TEST_F(InstallDirsTest, BuildTreeReachedThroughASymlinkIsStillTheBuildTree) {
  fs::create_directory_symlink(fs::canonical(tree_.binary_dir), dir_ / "build-link");
  EXPECT_TRUE(build_tree_of(dir_ / "build-link" / "agent" / "daemon" / "benchfleet-agent").has_value());
}

TEST_F(InstallDirsTest, InstalledAgentFindsTheExporterInItsPrefixAndNeverTheSourceTree) {
  const fs::path agent = dir_ / "prefix" / "bin" / "benchfleet-agent";
  // Nothing installed: the first candidate (beside the binary), not the source tree's copy.
  EXPECT_EQ(agent::default_exporter_path(agent.string()), (dir_ / "prefix" / "bin" / "benchfleet_export.py").string());
  fs::create_directories(dir_ / "prefix" / "share" / "benchfleet");
  std::ofstream(dir_ / "prefix" / "share" / "benchfleet" / "benchfleet_export.py") << "# installed\n";
  EXPECT_EQ(agent::default_exporter_path(agent.string()),
            fs::canonical(dir_ / "prefix" / "share" / "benchfleet" / "benchfleet_export.py").string());
}

TEST_F(InstallDirsTest, BuildTreeAgentFindsTheSourceTreesExporter) {
  const fs::path agent = tree_.binary_dir / "agent" / "daemon" / "benchfleet-agent";
  EXPECT_EQ(agent::default_exporter_path(agent.string()),
            fs::canonical(tree_.source_dir / "agent" / "python" / "benchfleet_export.py").string());
}

// A build in its own root sees only the folders the agent binds: the rules the python modules read
// must be found where benchfleet_rules.py looks, beside the modules or in the source tree.
TEST_F(InstallDirsTest, TheRulesThePythonModulesReadAreFoundInAReleaseAndInTheSources) {
  EXPECT_EQ(agent::shipped_rules_dir((tree_.source_dir / "agent" / "python" / "benchfleet_runner.py").string()),
            fs::canonical(tree_.source_dir / "common" / "rules").string());
  const fs::path share = dir_ / "prefix" / "share" / "benchfleet";
  fs::create_directories(share / "rules");
  EXPECT_EQ(agent::shipped_rules_dir((share / "benchfleet_runner.py").string()),
            fs::canonical(share / "rules").string());
}

}  // namespace
}  // namespace benchfleet
