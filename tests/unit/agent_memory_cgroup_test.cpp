// Where the agent makes its jobs' memory cgroups (agent/daemon/memory_cgroup.h): read from the
// text of /proc/self/cgroup and /proc/self/mountinfo as a v1 host, a v2 host with and without
// delegation, a hybrid host and a container show them.
#include "agent/daemon/memory_cgroup.h"

#include <gtest/gtest.h>

namespace benchfleet::agent {
namespace {

// A hybrid host (this project's CI machines): the memory controller on v1, an empty v2 tree.
constexpr const char* kHybridCgroup =
    "9:name=systemd:/\n"
    "8:pids:/\n"
    "4:memory:/process_api/efacfa1d\n"
    "1:cpu:/\n"
    "0::/\n";
constexpr const char* kHybridMounts =
    "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs ro,size=4096k\n"
    "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
    "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
    "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
    "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";

constexpr const char* kV2Cgroup = "0::/system.slice/benchfleet-agent.service\n";
constexpr const char* kV2Mounts =
    "25 20 0:22 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
    "rw,nsdelegate,memory_recursiveprot\n";

TEST(MemoryCgroupLocation, V1MemoryHierarchyOnAHybridHost) {
  const auto where = locate_memory_cgroup(kHybridCgroup, kHybridMounts, "");
  ASSERT_TRUE(where.has_value());
  EXPECT_EQ(where->version, CgroupVersion::kV1);
  EXPECT_EQ(where->directory, "/sys/fs/cgroup/memory/process_api/efacfa1d");
}

TEST(MemoryCgroupLocation, V2OnlyWhereMemoryIsDelegatedToChildren) {
  const auto delegated = locate_memory_cgroup(kV2Cgroup, kV2Mounts, "cpu io memory pids\n");
  ASSERT_TRUE(delegated.has_value());
  EXPECT_EQ(delegated->version, CgroupVersion::kV2);
  EXPECT_EQ(delegated->directory, "/sys/fs/cgroup/system.slice/benchfleet-agent.service");
  // Without memory in the service's subtree_control its children cannot be capped: no location
  // (the job then caps its own address space).
  EXPECT_FALSE(locate_memory_cgroup(kV2Cgroup, kV2Mounts, "cpu pids\n").has_value());
  EXPECT_FALSE(locate_memory_cgroup(kV2Cgroup, kV2Mounts, "").has_value());
  // "memory_recursiveprot" in the mount options is not the memory controller.
  EXPECT_FALSE(locate_memory_cgroup(kV2Cgroup, kV2Mounts, "memoryx\n").has_value());
}

TEST(MemoryCgroupLocation, V2WinsOverV1WhenBothCanCap) {
  const auto where = locate_memory_cgroup(kHybridCgroup, kHybridMounts, "memory");
  ASSERT_TRUE(where.has_value());
  EXPECT_EQ(where->version, CgroupVersion::kV2);
  EXPECT_EQ(where->directory, "/sys/fs/cgroup/unified");
}

TEST(MemoryCgroupLocation, AMountRootOtherThanSlashIsStrippedFromThePath) {
  // A container whose cgroup namespace was not unshared: the mount's root is the container's own
  // cgroup, and the process's path starts with it.
  const std::string cgroup = "5:memory:/docker/abc/inner\n";
  const std::string mounts = "40 30 0:40 /docker/abc /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory\n";
  const auto where = locate_memory_cgroup(cgroup, mounts, "");
  ASSERT_TRUE(where.has_value());
  EXPECT_EQ(where->directory, "/sys/fs/cgroup/memory/inner");
  // A path outside the mount's root is not under it.
  EXPECT_FALSE(locate_memory_cgroup("5:memory:/other\n", mounts, "").has_value());
  EXPECT_FALSE(locate_memory_cgroup("5:memory:/docker/abcdef\n", mounts, "").has_value());
}

TEST(MemoryCgroupLocation, NoMemoryControllerNoLocation) {
  EXPECT_FALSE(
      locate_memory_cgroup("1:cpu:/\n", "32 31 0:29 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n", "").has_value());
  EXPECT_FALSE(locate_memory_cgroup("", "", "memory").has_value());
  // Malformed lines are skipped, not misread.
  EXPECT_FALSE(locate_memory_cgroup("garbage\n4:memory\n", "short line - cgroup\n", "").has_value());
}

TEST(MemoryCgroupLocation, JoiningPrefixRunsTheProgramWithItsArguments) {
  const auto argv = joining_cgroup("/sys/fs/cgroup/memory/x", {"/usr/bin/python3", "runner.py", "--job", "a b"});
  ASSERT_EQ(argv.size(), 8u);
  EXPECT_EQ(argv[0], "/bin/sh");
  EXPECT_EQ(argv[1], "-c");
  EXPECT_EQ(argv[3], "/sys/fs/cgroup/memory/x");  // $0 of the script
  EXPECT_EQ(std::vector<std::string>(argv.begin() + 4, argv.end()),
            (std::vector<std::string>{"/usr/bin/python3", "runner.py", "--job", "a b"}));
}

}  // namespace
}  // namespace benchfleet::agent
