// gtest assertions on problem+json answers (RFC 9457), shared by the coordinator's integration
// tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "common/http/client.h"

namespace benchfleet::testing {

// Asserts `res` is a problem+json answer with `status` and a detail and, when given, naming
// `field`.
inline void expect_problem(const http::ClientResponse& res, unsigned status, const std::string& field = "") {
  EXPECT_EQ(res.status, status) << res.body;
  EXPECT_EQ(res.content_type, "application/problem+json") << res.body;
  auto body = res.json();
  ASSERT_TRUE(body.ok()) << res.body;
  EXPECT_EQ(body->value("status", 0u), status) << res.body;
  EXPECT_FALSE(body->value("detail", std::string()).empty()) << res.body;
  if (!field.empty()) {
    EXPECT_EQ(body->value("field", std::string()), field) << res.body;
  }
}

}  // namespace benchfleet::testing
