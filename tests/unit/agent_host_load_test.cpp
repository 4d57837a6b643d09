// How busy the host was with other work while a job ran (agent/daemon/host_load.h).
#include "agent/daemon/host_load.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>

namespace benchfleet::agent {
namespace {

TEST(HostLoad, ProcStatsAggregateLineIsRead) {
  const auto t = parse_proc_stat("cpu  100 5 30 800 10 2 3 0 0 0\ncpu0 50 2 15 400 5 1 1 0 0 0\nintr 12345\n");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->busy, 100u + 5 + 30 + 2 + 3 + 0);
  EXPECT_EQ(t->total, t->busy + 800 + 10);
  EXPECT_FALSE(parse_proc_stat("cpu0 1 2 3 4 5\n").has_value()) << "no aggregate line";
  EXPECT_FALSE(parse_proc_stat("cpu  1 2 3\n").has_value()) << "too few fields";
}

HostSample sample(std::uint64_t busy, std::uint64_t total, double children_cpu_s) {
  HostSample s;
  s.cpu = CpuTimes{busy, total};
  s.children_cpu_s = children_cpu_s;
  return s;
}

TEST(HostLoad, WhatTheJobUsedIsNotOtherLoad) {
  // 2 CPUs for 10 s at 100 ticks/s: 2000 ticks. The job used 1 CPU (10 s); the host was busy
  // 1100 ticks: 100 ticks (5%) of other work.
  auto load = other_load(sample(0, 0, 0), sample(1100, 2000, 10), 100);
  ASSERT_TRUE(load.has_value());
  EXPECT_NEAR(load->other_fraction, 0.05, 1e-9);
  EXPECT_FALSE(load->high);
  // Another process kept a whole CPU busy beside it: half the host's time.
  load = other_load(sample(0, 0, 0), sample(2000, 2000, 10), 100);
  EXPECT_NEAR(load->other_fraction, 0.5, 1e-9);
  EXPECT_TRUE(load->high);
  // Children reaped in the window that ran before it cannot make the share negative.
  EXPECT_DOUBLE_EQ(other_load(sample(0, 0, 0), sample(100, 2000, 30), 100)->other_fraction, 0);
  EXPECT_FALSE(other_load(sample(5, 10, 0), sample(5, 10, 0), 100).has_value()) << "no time passed";
  EXPECT_FALSE(other_load(HostSample{}, sample(5, 10, 0), 100).has_value()) << "no /proc/stat";
}

TEST(HostLoad, ABusyChildOfOursIsNotCountedAsOtherLoad) {
  const HostSample before = HostSample::now();
  ASSERT_TRUE(before.cpu.has_value()) << "/proc/stat is readable on Linux";
  const pid_t child = fork();
  if (child == 0) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(300);
    volatile unsigned long spin = 0;
    while (std::chrono::steady_clock::now() < until) spin = spin + 1;
    _exit(0);
  }
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  const HostSample after = HostSample::now();
  EXPECT_GE(after.children_cpu_s - before.children_cpu_s, 0.2) << "the child's CPU time is ours";
  const auto load = other_load(before, after);
  ASSERT_TRUE(load.has_value());
  EXPECT_GE(load->other_fraction, 0.0);
  EXPECT_LE(load->other_fraction, 1.0);
}

}  // namespace
}  // namespace benchfleet::agent
