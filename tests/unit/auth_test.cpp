#include "coordinator/rules/tokens.h"

#include <gtest/gtest.h>

#include <set>

namespace benchfleet::rules {
namespace {

TEST(Auth, BearerTokenParsing) {
  EXPECT_EQ(bearer_token("Bearer abc"), "abc");
  EXPECT_EQ(bearer_token("bearer abc"), "abc") << "the scheme is case-insensitive (RFC 7235)";
  EXPECT_EQ(bearer_token("Basic abc"), "");
  EXPECT_EQ(bearer_token("Bearer "), "");
  EXPECT_EQ(bearer_token(""), "");
}

TEST(Auth, SecretsAreLongRandomAndUrlSafe) {
  std::set<std::string> seen;
  for (int i = 0; i < 100; ++i) {
    const auto s = generate_secret();
    EXPECT_EQ(s.size(), 43u);
    EXPECT_EQ(s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
              std::string::npos);
    seen.insert(s);
  }
  EXPECT_EQ(seen.size(), 100u);
  EXPECT_EQ(generate_lease_id().size(), 32u);
}

TEST(Auth, SaltedHashesDifferPerSaltAndMatchKnownDigest) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_NE(hash_token("salt1", "token"), hash_token("salt2", "token"));
  EXPECT_EQ(hash_token("salt1", "token"), hash_token("salt1", "token"));
  EXPECT_EQ(hash_token("salt1", "token").size(), 32u);
  EXPECT_TRUE(constant_time_equal("same", "same"));
  EXPECT_FALSE(constant_time_equal("same", "samf"));
  EXPECT_FALSE(constant_time_equal("same", "sam"));
}

}  // namespace
}  // namespace benchfleet::rules
