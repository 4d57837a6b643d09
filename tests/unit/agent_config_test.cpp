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
