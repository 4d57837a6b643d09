// The server's admission of requests, tested with raw sockets against a real Server on
// 127.0.0.1:0: a request is judged on its headers (Host, route, guard, body limit, room for its
// body) before its body is read, and connections beyond the bound are answered 503.
#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "common/http/client.h"
#include "common/http/problem.h"
#include "common/http/router.h"
#include "common/http/server.h"
#include "tests/support/raw_connection.h"

namespace benchfleet::http {
namespace {

namespace asio = boost::asio;
using boost::beast::http::status;
using boost::beast::http::verb;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr std::string_view kToken = "Bearer let-me-in";

using benchfleet::testing::RawConnection;

class HttpAdmissionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto count_and_echo = [this](const Request& req, const RouteMatch&) -> asio::awaitable<Response> {
      handled_.fetch_add(1);
      co_return json_response(status::ok, {{"body_size", req.body().size()}}, req);
    };
    RouteOptions guarded;
    guarded.guard = [](const Request& head, const RouteMatch&) -> asio::awaitable<std::optional<Response>> {
      if (head[boost::beast::http::field::authorization] == kToken) co_return std::nullopt;
      co_return problem_from_error({ErrorCode::kUnauthenticated, "no token", {}}, head);
    };
    router_.add(verb::post, "/guarded", "guarded", count_and_echo, guarded);
    RouteOptions small;
    small.body_limit = 16;
    router_.add(verb::post, "/small", "small", count_and_echo, small);
    router_.add(verb::post, "/open", "open", count_and_echo);
    router_.add(verb::get, "/healthz", "healthz",
                [](const Request& req, const RouteMatch&) -> asio::awaitable<Response> {
                  co_return text_response(status::ok, "ok\n", req);
                });
  }

  void TearDown() override {
    if (server_) server_->stop();
    for (auto& runner : runners_) {
      if (runner.wait_for(20s) != std::future_status::ready) ioc_.stop();
    }
  }

  void start(ServerLimits limits) {
    server_ = std::make_unique<Server>(ioc_, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0), router_,
                                       limits);
    server_->start();
    for (int i = 0; i < 2; ++i) runners_.push_back(std::async(std::launch::async, [this] { ioc_.run(); }));
  }

  static ServerLimits limits() {
    ServerLimits l;
    l.body_limit = 32 << 20;
    l.request_timeout = 10s;
    l.idle_timeout = 10s;
    l.max_inflight_body_bytes = 64 << 20;
    return l;
  }

  unsigned short port() const { return server_->port(); }

  asio::io_context ioc_;
  Router router_;
  std::unique_ptr<Server> server_;
  std::vector<std::future<void>> runners_;
  std::atomic<int> handled_{0};
};

// Bodies were read whole before the token was checked, so unauthenticated clients
// could make the server hold 16 MiB each.
TEST_F(HttpAdmissionTest, GuardRefusesOnTheHeadersWithoutWaitingForTheBody) {
  start(limits());
  RawConnection conn(port());
  conn.send("POST /guarded HTTP/1.1\r\nHost: x\r\nContent-Length: 16777216\r\n\r\n");
  const std::string reply = conn.read_to_end();  // the server closes: the body stays unread
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 401")) << reply;
  EXPECT_NE(reply.find("application/problem+json"), std::string::npos) << reply;
  EXPECT_NE(reply.find("Connection: close"), std::string::npos) << reply;
  EXPECT_EQ(handled_.load(), 0);

  // With the token the same route reads the body and runs its handler.
  Client client("http://127.0.0.1:" + std::to_string(port()));
  auto ok = client.request(verb::post, "/guarded", std::string(1000, 'x'), {{"Authorization", std::string(kToken)}});
  ASSERT_TRUE(ok.ok()) << ok.error().describe();
  EXPECT_EQ(ok->status, 200u) << ok->body;
  EXPECT_EQ(handled_.load(), 1);
}

TEST_F(HttpAdmissionTest, ExpectContinueIsNotSentToARefusedRequest) {
  start(limits());
  RawConnection conn(port());
  conn.send("POST /guarded HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  const std::string reply = conn.read_to_end();
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 401")) << reply;
  EXPECT_EQ(reply.find("100 Continue"), std::string::npos) << reply;
}

TEST_F(HttpAdmissionTest, UnknownRouteAndWrongMethodAreAnsweredWithoutReadingTheBody) {
  start(limits());
  {
    RawConnection conn(port());
    conn.send("POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 16777216\r\n\r\n");
    const std::string reply = conn.read_to_end();
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 404")) << reply;
  }
  {
    RawConnection conn(port());
    conn.send("PUT /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 16777216\r\n\r\n");
    const std::string reply = conn.read_to_end();
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 405")) << reply;
  }
  // Without a body a refusal keeps the connection: the next request on it is served.
  RawConnection conn(port());
  conn.send("GET /nowhere HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string not_found = conn.read_response();
  EXPECT_TRUE(not_found.starts_with("HTTP/1.1 404")) << not_found;
  EXPECT_EQ(not_found.find("Connection: close"), std::string::npos) << not_found;
  conn.send("GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_NE(conn.read_to_end().find("HTTP/1.1 200"), std::string::npos);
}

TEST_F(HttpAdmissionTest, RouteBodyLimitIs413BeforeTheBody) {
  start(limits());
  RawConnection conn(port());
  conn.send("POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 17\r\n\r\n");
  const std::string reply = conn.read_to_end();
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 413")) << reply;
  EXPECT_NE(reply.find("larger than 16 bytes"), std::string::npos) << reply;

  Client client("http://127.0.0.1:" + std::to_string(port()));
  auto ok = client.request(verb::post, "/small", std::string(16, 'x'));
  ASSERT_TRUE(ok.ok()) << ok.error().describe();
  EXPECT_EQ(ok->status, 200u);
  // A chunked body is held to the route's limit as it arrives.
  RawConnection chunked(port());
  chunked.send("POST /small HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n20\r\n" + std::string(32, 'x') +
               "\r\n0\r\n\r\n");
  const std::string chunked_reply = chunked.read_to_end();
  EXPECT_TRUE(chunked_reply.starts_with("HTTP/1.1 413")) << chunked_reply;
}

// HTTP/1.1 without Host was answered 200.
TEST_F(HttpAdmissionTest, Http11WithoutHostIs400) {
  start(limits());
  {
    RawConnection conn(port());
    conn.send("GET /healthz HTTP/1.1\r\nConnection: close\r\n\r\n");
    const std::string reply = conn.read_to_end();
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 400")) << reply;
    EXPECT_NE(reply.find("application/problem+json"), std::string::npos) << reply;
    EXPECT_NE(reply.find("Host"), std::string::npos) << reply;
  }
  {
    RawConnection conn(port());
    conn.send("GET /healthz HTTP/1.1\r\nHost: a\r\nHost: b\r\nConnection: close\r\n\r\n");
    const std::string reply = conn.read_to_end();
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 400")) << reply;
  }
  {
    RawConnection conn(port());
    conn.send("POST /open HTTP/1.1\r\nContent-Length: 16777216\r\n\r\n");
    const std::string reply = conn.read_to_end();
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 400")) << reply;
  }
  RawConnection conn(port());  // HTTP/1.0 has no Host requirement
  conn.send("GET /healthz HTTP/1.0\r\n\r\n");
  const std::string reply = conn.read_to_end();
  EXPECT_TRUE(reply.starts_with("HTTP/1.0 200")) << reply;
  EXPECT_EQ(handled_.load(), 0);
}

TEST_F(HttpAdmissionTest, ConnectionsBeyondTheBoundGet503WithRetryAfter) {
  ServerLimits l = limits();
  l.max_connections = 2;
  start(l);
  // Two connections the server has surely accepted: each got an answer and stays open.
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 2; ++i) {
    held.push_back(std::make_unique<RawConnection>(port()));
    held.back()->send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    ASSERT_TRUE(held.back()->read_response().starts_with("HTTP/1.1 200"));
  }
  RawConnection third(port());
  const std::string reply = third.read_to_end();  // answered before it sent anything
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 503")) << reply;
  EXPECT_NE(reply.find("Retry-After: 1"), std::string::npos) << reply;
  EXPECT_NE(reply.find("application/problem+json"), std::string::npos) << reply;

  // Once one closes, a new connection is served again.
  held.pop_back();
  Client client("http://127.0.0.1:" + std::to_string(port()));
  bool served = false;
  for (int i = 0; i < 100 && !served; ++i) {
    auto r = client.get("/healthz");
    served = r.ok() && r->status == 200u;
    if (!served) std::this_thread::sleep_for(50ms);
  }
  EXPECT_TRUE(served);
}

TEST_F(HttpAdmissionTest, InFlightBodyBytesAreBounded) {
  ServerLimits l = limits();
  l.max_inflight_body_bytes = 100;
  start(l);
  // The first body is admitted (100 Continue) and held while its bytes trickle in.
  RawConnection first(port());
  first.send("POST /open HTTP/1.1\r\nHost: x\r\nContent-Length: 80\r\nExpect: 100-continue\r\n\r\n");
  ASSERT_TRUE(first.read_head().starts_with("HTTP/1.1 100")) << "first body not admitted";
  first.send(std::string(40, 'x'));

  // A second one would take the total past 100 bytes: 503 without reading it.
  RawConnection second(port());
  second.send("POST /open HTTP/1.1\r\nHost: x\r\nContent-Length: 80\r\n\r\n");
  const std::string refused = second.read_to_end();
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 503")) << refused;
  EXPECT_NE(refused.find("Retry-After: 1"), std::string::npos) << refused;
  // A small one still fits.
  Client client("http://127.0.0.1:" + std::to_string(port()));
  auto small = client.request(verb::post, "/open", std::string(20, 'y'));
  ASSERT_TRUE(small.ok()) << small.error().describe();
  EXPECT_EQ(small->status, 200u);

  first.send(std::string(40, 'x'));
  const std::string done = first.read_head();
  EXPECT_TRUE(done.starts_with("HTTP/1.1 200")) << done;
  // Its bytes are given back once answered: an 80-byte body fits again.
  auto again = client.request(verb::post, "/open", std::string(80, 'z'));
  ASSERT_TRUE(again.ok()) << again.error().describe();
  EXPECT_EQ(again->status, 200u) << again->body;
}

TEST_F(HttpAdmissionTest, ABodyLargerThanTheInFlightBoundIsAdmittedAlone) {
  ServerLimits l = limits();
  l.max_inflight_body_bytes = 100;
  start(l);
  Client client("http://127.0.0.1:" + std::to_string(port()));
  auto r = client.request(verb::post, "/open", std::string(1000, 'x'));
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->status, 200u) << r->body;
}

}  // namespace
}  // namespace benchfleet::http
