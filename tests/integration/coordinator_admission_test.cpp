// Integration: the real coordinator judges a request on its headers before reading
// its body, bounds its connections and the request bodies it holds, and wants Host on HTTP/1.1.
// Raw sockets, because a well-behaved client sends its body before reading the answer.
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/coordinator_process.h"
#include "tests/support/raw_connection.h"

namespace benchfleet::testing {
namespace {

using nlohmann::json;

std::string post_head(const std::string& target, std::size_t length, const std::string& extra = {}) {
  return "POST " + target +
         " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(length) +
         "\r\n" + extra + "\r\n";
}

// 40 connections each sending a 16 MiB body without a token took the coordinator from
// 80 MB to 686 MB, because bodies were read whole before the token was checked. Now each gets
// its 401 after the headers alone (the body is never sent here).
TEST(CoordinatorAdmission, UnauthenticatedBodiesAreRefusedBeforeTheyAreSent) {
  CoordinatorProcess coord;
  const unsigned short port = static_cast<unsigned short>(std::stoi(coord.base_url().substr(17)));
  for (const std::string target : {"/api/v1/runs", "/api/v1/agents/enroll", "/api/v1/jobs/1/result",
                                   "/api/v1/agents/1/heartbeat", "/api/v1/runs/1/cancel"}) {
    SCOPED_TRACE(target);
    RawConnection conn(port);
    conn.send(post_head(target, 16u << 20));
    const std::string reply = conn.read_to_end();  // the server closes: the body stays unread
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 401")) << reply;
    EXPECT_NE(reply.find("application/problem+json"), std::string::npos) << reply;
  }
  {
    SCOPED_TRACE("a wrong agent token");
    RawConnection conn(port);
    conn.send(post_head("/api/v1/jobs/1/result", 16u << 20, "Authorization: Bearer bfa_1_forged\r\n"));
    EXPECT_TRUE(conn.read_to_end().starts_with("HTTP/1.1 401"));
  }
  {
    SCOPED_TRACE("an agent's token for another agent's path");
    FakeAgent agent(coord, FakeAgent::descriptor("a1", {{"gpu0", "a100"}}, {{"stable", {"eager"}}}));
    RawConnection conn(port);
    conn.send(post_head("/api/v1/agents/" + std::to_string(agent.id() + 1) + "/heartbeat", 1u << 20,
                        "Authorization: Bearer " + agent.token() + "\r\n"));
    EXPECT_TRUE(conn.read_to_end().starts_with("HTTP/1.1 403"));
  }
  {
    SCOPED_TRACE("a write over its route's limit, with the token");
    RawConnection conn(port);
    conn.send(post_head("/api/v1/runs", 2u << 20,
                        std::string("Authorization: Bearer ") + CoordinatorProcess::kOperatorToken + "\r\n"));
    EXPECT_TRUE(conn.read_to_end().starts_with("HTTP/1.1 413"));
  }
  {
    SCOPED_TRACE("a GET with a body");
    RawConnection conn(port);
    conn.send("GET /api/v1/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 16777216\r\n\r\n");
    EXPECT_TRUE(conn.read_to_end().starts_with("HTTP/1.1 413"));
  }
  // And the coordinator still serves the operator.
  EXPECT_EQ(coord.submit(matrix({kResnet}, {1}, {"eager"}))["job_count"], 1);
}

// Connections in the middle of a request hold their slots; an idle anonymous one would give way
// to the newcomer (connection_hold_test.cpp).
TEST(CoordinatorAdmission, ConnectionsBeyondMaxConnectionsGet503) {
  CoordinatorProcess coord({{"--max-connections", "3"}, {"--reserved-connections", "0"}});
  const unsigned short port = static_cast<unsigned short>(std::stoi(coord.base_url().substr(17)));
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 3; ++i) {
    held.push_back(std::make_unique<RawConnection>(port));
    held.back()->send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    ASSERT_TRUE(held.back()->read_response().starts_with("HTTP/1.1 200"));
    held.back()->send("GET /healthz HTTP/1.1\r\n");  // the next request begun
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // and read by the coordinator
  RawConnection fourth(port);
  const std::string reply = fourth.read_to_end();
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 503")) << reply;
  EXPECT_NE(reply.find("Retry-After: 1"), std::string::npos) << reply;
  EXPECT_NE(reply.find("application/problem+json"), std::string::npos) << reply;

  held.clear();
  EXPECT_TRUE(eventually([&] {
    try {
      return coord.get("/healthz").status == 200u;
    } catch (const std::exception&) {
      return false;
    }
  }));
}

TEST(CoordinatorAdmission, BodiesBeyondMaxInflightBodyBytesGet503) {
  CoordinatorProcess coord({{"--max-inflight-body-bytes", "2048"}});
  const unsigned short port = static_cast<unsigned short>(std::stoi(coord.base_url().substr(17)));
  const std::string auth = std::string("Authorization: Bearer ") + CoordinatorProcess::kOperatorToken + "\r\n";
  const json body = matrix({kResnet}, {1}, {"eager"});
  std::string padded = body.dump();
  padded.resize(1500, ' ');

  RawConnection first(port);
  first.send(post_head("/api/v1/runs", padded.size(), auth + "Expect: 100-continue\r\n"));
  ASSERT_TRUE(first.read_head().starts_with("HTTP/1.1 100")) << "the first body was not admitted";

  RawConnection second(port);
  second.send(post_head("/api/v1/runs", padded.size(), auth));
  const std::string refused = second.read_to_end();
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 503")) << refused;
  EXPECT_NE(refused.find("Retry-After: 1"), std::string::npos) << refused;

  first.send(padded);
  EXPECT_TRUE(first.read_head().starts_with("HTTP/1.1 201"));
  // Its bytes are given back once answered.
  EXPECT_EQ(coord.submit(body)["job_count"], 1);
}

// HTTP/1.1 without Host got 200.
TEST(CoordinatorAdmission, Http11WithoutHostIs400) {
  CoordinatorProcess coord;
  const unsigned short port = static_cast<unsigned short>(std::stoi(coord.base_url().substr(17)));
  for (const std::string target : {"/healthz", "/api/v1/runs", "/"}) {
    SCOPED_TRACE(target);
    RawConnection conn(port);
    conn.send("GET " + target + " HTTP/1.1\r\nConnection: close\r\n\r\n");
    const std::string reply = conn.read_to_end();
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 400")) << reply;
    EXPECT_NE(reply.find("application/problem+json"), std::string::npos) << reply;
  }
  RawConnection conn(port);
  conn.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(conn.read_to_end().starts_with("HTTP/1.1 200"));
}

}  // namespace
}  // namespace benchfleet::testing
