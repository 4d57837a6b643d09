// agent_name_key: names a reader cannot tell apart are one name; names that differ are not.
#include "coordinator/rules/agent_names.h"

#include <gtest/gtest.h>

#include <string>

namespace benchfleet::rules {
namespace {

TEST(AgentNames, LookAlikesOfANameShareItsKey) {
  const std::string key = agent_name_key("gpu-node-1");
  for (const char* alike : {
           "gpu-node-1 ",            // a trailing space
           " gpu-node-1",            // a leading one
           "GPU-Node-1",             // upper case
           "gpu-nod\xd0\xb5-1",      // a Cyrillic e (U+0435)
           "gpu-node-\xef\xbc\x91",  // a fullwidth 1 (U+FF11)
           "gpu-n\xd0\xbe"
           "de-1",  // a Cyrillic o (U+043E)
       }) {
    EXPECT_EQ(agent_name_key(alike), key) << alike;
  }
  // NFD against NFC: "é" as one code point and as e + U+0301.
  EXPECT_EQ(agent_name_key("caf\xc3\xa9"), agent_name_key("cafe\xcc\x81"));
}

TEST(AgentNames, DifferentNamesKeepDifferentKeys) {
  EXPECT_NE(agent_name_key("gpu-node-1"), agent_name_key("gpu-node-2"));
  EXPECT_NE(agent_name_key("gpu-node-1"), agent_name_key("gpu-node-11"));
  EXPECT_NE(agent_name_key("a100-a"), agent_name_key("a100-b"));
  EXPECT_NE(agent_name_key("\xe5\xa4\xa7"), agent_name_key("\xe5\xb0\x8f"));  // 大, 小
}

}  // namespace
}  // namespace benchfleet::rules
