// benchfleet-agent's configuration (agent/daemon/agent_config.h): the memory cap's option and
// torch builds without a worker, from flags and a YAML file as the daemon reads them.
#include "agent/daemon/agent_config.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/support/temp_dir.h"

namespace benchfleet::agent {
namespace {

Result<AgentConfigParse> parse(std::vector<std::string> args) {
  args.insert(args.begin(), "benchfleet-agent");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return parse_agent_config(static_cast<int>(argv.size()), argv.data());
}

TEST(AgentConfig, TheMemoryCapIsAutoByDefaultAndOtherwiseNamed) {
  auto plain = parse({"--name", "a"});
  ASSERT_TRUE(plain.ok()) << plain.error().describe();
  EXPECT_EQ(plain->config.memory_cap, "auto");
  auto rlimit = parse({"--name", "a", "--memory-cap", "address_space"});
  ASSERT_TRUE(rlimit.ok()) << rlimit.error().describe();
  EXPECT_EQ(rlimit->config.memory_cap, "address_space");
  auto bad = parse({"--name", "a", "--memory-cap", "cgroupz"});
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().field, "memory_cap");
  EXPECT_NE(bad.error().message.find("cgroupz"), std::string::npos) << bad.error().message;
}

// Every build and runtime of a slot runs with one thread count: by default the agent's CPUs
// shared out among its slots; --cpu-threads for all; --slot-threads SLOT=N for one.
TEST(AgentConfig, EachSlotHasOneThreadCountForEveryBuild) {
  const std::vector<SlotDescriptor> cpu_only = {{"cpu", "cpu", {}, {}}};
  const std::vector<SlotDescriptor> two_gpus = {{"gpu0", "h100", {}, {}}, {"gpu1", "h100", {}, {}}};
  auto plain = parse({"--name", "a"});
  ASSERT_TRUE(plain.ok()) << plain.error().describe();
  EXPECT_EQ(slot_thread_counts(plain->config, cpu_only, 2).value(), (std::map<std::string, int>{{"cpu", 2}}));
  EXPECT_EQ(slot_thread_counts(plain->config, two_gpus, 16).value(),
            (std::map<std::string, int>{{"gpu0", 8}, {"gpu1", 8}}));
  EXPECT_EQ(slot_thread_counts(plain->config, two_gpus, 1).value(),
            (std::map<std::string, int>{{"gpu0", 1}, {"gpu1", 1}}))
      << "at least one";

  auto set = parse({"--name", "a", "--cpu-threads", "4", "--slot-threads", "gpu1=6"});
  ASSERT_TRUE(set.ok()) << set.error().describe();
  EXPECT_EQ(slot_thread_counts(set->config, two_gpus, 16).value(),
            (std::map<std::string, int>{{"gpu0", 4}, {"gpu1", 6}}));

  for (const std::string bad : {"gpu9=2", "gpu0", "gpu0=0", "gpu0=x", "gpu0=99999"}) {
    auto parsed = parse({"--name", "a", "--slot-threads", bad});
    ASSERT_TRUE(parsed.ok()) << parsed.error().describe();
    auto counts = slot_thread_counts(parsed->config, two_gpus, 16);
    ASSERT_FALSE(counts.ok()) << bad;
    EXPECT_EQ(counts.error().field, "slot_threads");
    EXPECT_NE(counts.error().message.find(bad), std::string::npos) << counts.error().message;
  }
  EXPECT_NE(slot_thread_counts(parse({"--name", "a", "--slot-threads", "gpu9=2"})->config, two_gpus, 16)
                .error()
                .message.find("its slots: gpu0, gpu1"),
            std::string::npos);
  EXPECT_FALSE(parse({"--name", "a", "--cpu-threads", "-1"}).ok());
}

TEST(AgentConfig, ABuildWithoutAWorkerIsAcceptedAndOneWithoutPythonIsNot) {
  testing::TempDir dir("benchfleet-agent-config");
  const std::string file = (dir.path() / "agent.yaml").string();
  std::ofstream(file) << "builds:\n"
                      << "  - {name: unstable, python: /usr/bin/python3, root: /srv/roots/sid}\n"
                      << "  - {name: local, python: /usr/bin/python3, worker: /opt/benchfleet/bin/benchfleet-worker}\n";
  auto parsed = parse({"--name", "a", "--config", file});
  ASSERT_TRUE(parsed.ok()) << parsed.error().describe();
  ASSERT_EQ(parsed->config.builds.size(), 2u);
  EXPECT_EQ(parsed->config.builds[0].worker, "");  // the python runtime only
  EXPECT_EQ(parsed->config.builds[0].root, "/srv/roots/sid");
  EXPECT_EQ(parsed->config.builds[1].worker, "/opt/benchfleet/bin/benchfleet-worker");

  std::ofstream(file) << "builds:\n  - {name: unstable, worker: /opt/w}\n";
  auto no_python = parse({"--name", "a", "--config", file});
  ASSERT_FALSE(no_python.ok());
  EXPECT_EQ(no_python.error().field, "builds[0].python");
}

}  // namespace
}  // namespace benchfleet::agent
