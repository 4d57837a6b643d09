// fleet_gaps (coordinator/rules/fleet_check.h) and the nearest-word suggestions behind it
// (common/suggest.h).
#include "coordinator/rules/fleet_check.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/suggest.h"

namespace benchfleet::rules {
namespace {

// Both runtimes by default, each with the modes a CPU host's torch 2.6 runs.
const std::vector<RuntimeSupport> kBothRuntimes = {
    {Runtime::kLibtorch, {Mode::kEager, Mode::kDefault, Mode::kMaxAutotuneNoCudagraphs}},
    {Runtime::kPython, {Mode::kEager, Mode::kDefault, Mode::kMaxAutotuneNoCudagraphs}}};

AgentDescriptor host(const std::string& name, const std::vector<std::string>& classes,
                     const std::vector<std::string>& builds,
                     const std::vector<RuntimeSupport>& runtimes = kBothRuntimes) {
  AgentDescriptor a;
  a.name = name;
  for (std::size_t i = 0; i < classes.size(); ++i) a.slots.push_back({"slot" + std::to_string(i), classes[i], {}, {}});
  for (const auto& b : builds) a.torch_builds.push_back({b, "2.6.0", runtimes});
  return a;
}

MatrixSpec matrix(std::vector<std::string> builds, std::vector<std::string> gpus) {
  MatrixSpec m;
  m.torch_builds = std::move(builds);
  m.gpus = std::move(gpus);
  return m;
}

TEST(Suggest, EditDistanceAndNearestWord) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("debain13", "debian13"), 2u);
  EXPECT_EQ(edit_distance("batch_size", "batch_sizes"), 1u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  const std::vector<std::string> known = {"batch_sizes", "models", "modes", "timeout_s"};
  EXPECT_EQ(nearest_word("batch_size", known), "batch_sizes");
  EXPECT_EQ(nearest_word("mode", known), "modes") << "the first of equally near ones";
  EXPECT_EQ(nearest_word("timeout", known), "timeout_s");
  EXPECT_EQ(nearest_word("priority", known), std::nullopt) << "nothing near enough";
  EXPECT_EQ(nearest_word("models", known), std::nullopt) << "a known word is not misspelt";
  EXPECT_EQ(did_you_mean("a10", {"a100", "h100"}), " (did you mean \"a100\"?)");
  EXPECT_EQ(did_you_mean("tpu-v5", {"a100", "h100"}), "");
}

TEST(FleetCheck, WhatTheFleetOffersHasNoGaps) {
  const std::vector<AgentDescriptor> fleet = {host("a", {"a100", "a100"}, {"stable", "nightly"}),
                                              host("b", {"cpu"}, {"stable"})};
  EXPECT_TRUE(fleet_gaps(matrix({"stable", "nightly"}, {"a100"}), fleet).empty());
  EXPECT_TRUE(fleet_gaps(matrix({"stable"}, {"a100", "cpu"}), fleet).empty());
}

TEST(FleetCheck, AnUnofferedBuildOrClassIsNamedWithTheNearestAndTheFleetsOffer) {
  const std::vector<AgentDescriptor> fleet = {host("cpu-host", {"cpu"}, {"debian12", "debian13"})};
  const auto gaps = fleet_gaps(matrix({"debian12", "debain13"}, {"cpu", "a100"}), fleet);
  ASSERT_EQ(gaps.size(), 2u);
  EXPECT_EQ(gaps[0].field, "torch_builds[1]");
  EXPECT_EQ(gaps[0].message,
            "no enrolled agent offers torch build \"debain13\" (did you mean \"debian13\"?); the fleet offers: "
            "debian12, debian13");
  EXPECT_EQ(gaps[1].field, "gpus[1]");
  EXPECT_EQ(gaps[1].message, "no enrolled agent has a slot of GPU class \"a100\"; the fleet has: cpu");
}

TEST(FleetCheck, ABuildAndAClassOnDifferentAgentsAreAGap) {
  const std::vector<AgentDescriptor> fleet = {host("gpu", {"a100"}, {"stable"}), host("cpu", {"cpu"}, {"nightly"})};
  const auto gaps = fleet_gaps(matrix({"stable", "nightly"}, {"a100"}), fleet);
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].field, "torch_builds");
  EXPECT_EQ(gaps[0].message,
            "no enrolled agent offers torch build \"nightly\" on a slot of GPU class \"a100\" (each is offered, on "
            "different agents)");
}

TEST(FleetCheck, AnEmptyFleetHasNoGaps) { EXPECT_TRUE(fleet_gaps(matrix({"anything"}, {"h100"}), {}).empty()); }

// After the quick start the agent offers the python runtime alone (no worker built in the roots):
// a libtorch matrix would wait forever, and said so nowhere.
TEST(FleetCheck, ARuntimeNoAgentOffersIsAGap) {
  const std::vector<AgentDescriptor> fleet = {
      host("a", {"cpu"}, {"stable", "unstable"}, {{Runtime::kPython, {Mode::kEager, Mode::kDefault}}})};
  MatrixSpec m = matrix({"stable", "unstable"}, {"cpu"});
  m.runtimes = {Runtime::kLibtorch};
  const auto gaps = fleet_gaps(m, fleet);
  ASSERT_EQ(gaps.size(), 1u);
  EXPECT_EQ(gaps[0].field, "runtimes[0]");
  EXPECT_NE(gaps[0].message.find("no enrolled agent offers runtime \"libtorch\""), std::string::npos)
      << gaps[0].message;
  EXPECT_NE(gaps[0].message.find("the fleet offers: python"), std::string::npos) << gaps[0].message;
  m.runtimes = {Runtime::kPython};
  EXPECT_TRUE(fleet_gaps(m, fleet).empty());
  // Offered on one build only: the combination is named.
  const std::vector<AgentDescriptor> split = {host("a", {"cpu"}, {"stable"}, {{Runtime::kLibtorch, {Mode::kEager}}}),
                                              host("b", {"cpu"}, {"unstable"}, {{Runtime::kPython, {Mode::kEager}}})};
  m.runtimes = {Runtime::kLibtorch};
  const auto pair = fleet_gaps(m, split);
  ASSERT_EQ(pair.size(), 1u);
  EXPECT_EQ(pair[0].field, "runtimes");
  EXPECT_NE(pair[0].message.find("for torch build \"unstable\" on a slot of GPU class \"cpu\""), std::string::npos);
}

TEST(FleetCheck, ModesThatWillEndUnsupportedAreNamed) {
  const std::vector<AgentDescriptor> fleet = {
      host("a", {"cpu"}, {"unstable"}, {{Runtime::kPython, {Mode::kEager, Mode::kDefault}}}),
      host("g", {"h100"}, {"unstable"},
           {{Runtime::kPython, {Mode::kEager, Mode::kDefault, Mode::kReduceOverhead, Mode::kMaxAutotune}}})};
  MatrixSpec m = matrix({"unstable"}, {"cpu"});
  m.runtimes = {Runtime::kPython};
  m.modes = {Mode::kEager, Mode::kReduceOverhead, Mode::kMaxAutotuneNoCudagraphs};
  const auto ends = unsupported_modes(m, fleet);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[0].field, "modes[1]");
  EXPECT_NE(ends[0].message.find("reduce-overhead on build \"unstable\", runtime python, GPU class \"cpu\" will end "
                                 "unsupported: it replays CUDA graphs"),
            std::string::npos)
      << ends[0].message;
  EXPECT_EQ(ends[1].field, "modes[2]");
  EXPECT_NE(ends[1].message.find("no enrolled agent serving it runs that mode"), std::string::npos);
  // On the GPU host the CUDA-graph mode runs.
  m.gpus = {"h100"};
  m.modes = {Mode::kReduceOverhead, Mode::kMaxAutotune};
  EXPECT_TRUE(unsupported_modes(m, fleet).empty());
}

}  // namespace
}  // namespace benchfleet::rules
