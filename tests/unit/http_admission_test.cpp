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
    guarded.guard = [](const Request& head, const RouteMatch&) -> asio::awaitable<Admission> {
      if (head[boost::beast::http::field::authorization] == kToken) co_return Admission::admitted(true, "holder:1");
      co_return Admission::refused(problem_from_error({ErrorCode::kUnauthenticated, "no token", {}}, head));
    };
    router_.add(verb::post, "/guarded", "guarded", count_and_echo, guarded);
    router_.add(
        verb::get, "/guarded/whoami", "guarded.whoami",
        [](const Request& req, const RouteMatch& m) -> asio::awaitable<Response> {
          co_return json_response(status::ok, {{"principal", m.principal}}, req);
        },
        guarded);
    router_.add(verb::get, "/whoami", "whoami",
                [](const Request& req, const RouteMatch& m) -> asio::awaitable<Response> {
                  co_return json_response(status::ok, {{"principal", m.principal}}, req);
                });
    router_.add(verb::get, "/guarded", "guarded.get", count_and_echo, guarded);
    RouteOptions small;
    small.body_limit = 16;
    router_.add(verb::post, "/small", "small", count_and_echo, small);
    router_.add(verb::post, "/open", "open", count_and_echo);
    router_.add(verb::get, "/healthz", "healthz",
                [](const Request& req, const RouteMatch&) -> asio::awaitable<Response> {
                  co_return text_response(status::ok, "ok\n", req);
                });
    // An answer larger than the kernel's socket buffers take: a reader that does not read it
    // keeps most of it in the server.
    router_.add(verb::get, "/big", "big", [](const Request& req, const RouteMatch&) -> asio::awaitable<Response> {
      co_return text_response(status::ok, std::string(std::size_t{24} << 20, 'b'), req);
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

// The guard checks the credential once and names its holder; the handler reads that name instead
// of checking again. A route without a guard names nobody, whatever the request claims.
TEST_F(HttpAdmissionTest, TheGuardNamesTheRequestsPrincipalToTheHandler) {
  start(limits());
  Client client("http://127.0.0.1:" + std::to_string(port()));
  auto named = client.request(verb::get, "/guarded/whoami", {}, {{"Authorization", std::string(kToken)}});
  ASSERT_TRUE(named.ok()) << named.error().describe();
  ASSERT_EQ(named->status, 200u) << named->body;
  EXPECT_EQ(json::parse(named->body)["principal"], "holder:1");
  auto refused = client.request(verb::get, "/guarded/whoami", {}, {{"Authorization", "Bearer wrong"}});
  ASSERT_TRUE(refused.ok()) << refused.error().describe();
  EXPECT_EQ(refused->status, 401u);
  auto open = client.request(verb::get, "/whoami", {}, {{"Authorization", std::string(kToken)}});
  ASSERT_TRUE(open.ok()) << open.error().describe();
  EXPECT_EQ(json::parse(open->body)["principal"], "");
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

// Connections the server has surely accepted, each being answered (a large answer it does not
// read), so neither is idle and neither can give way. (Headers begun and not finished no longer
// do: after kSlowHeaders they give way too.)
std::vector<std::unique_ptr<RawConnection>> hold_busy(unsigned short port, int count, const char* source = nullptr) {
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < count; ++i) {
    held.push_back(std::make_unique<RawConnection>(port, std::chrono::seconds(10), source));
    held.back()->send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    EXPECT_TRUE(held.back()->read_response().starts_with("HTTP/1.1 200"));
    held.back()->send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the server is writing those answers
  return held;
}

TEST_F(HttpAdmissionTest, ConnectionsBeyondTheBoundGet503WithRetryAfter) {
  ServerLimits l = limits();
  l.max_connections = 2;
  start(l);
  std::vector<std::unique_ptr<RawConnection>> held = hold_busy(port(), 2);
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

// Silent sockets and keep-alive probes held every slot for the whole idle timeout, so agents and
// operators got 503 while the holders spent nothing.
TEST_F(HttpAdmissionTest, AnIdleAnonymousConnectionGivesWayToANewcomer) {
  ServerLimits l = limits();
  l.max_connections = 2;
  start(l);
  RawConnection oldest(port());
  oldest.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(oldest.read_response().starts_with("HTTP/1.1 200"));
  RawConnection silent(port());  // never says a word
  std::this_thread::sleep_for(100ms);

  Client client("http://127.0.0.1:" + std::to_string(port()));
  auto r = client.get("/healthz");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->status, 200u);
  EXPECT_TRUE(oldest.closed_by_peer()) << "the oldest idle connection should have been closed for the newcomer";
  silent.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(silent.read_response().starts_with("HTTP/1.1 200")) << "the younger one keeps its slot";
}

TEST_F(HttpAdmissionTest, ASilentConnectionIsClosedAfterTheFirstRequestTimeout) {
  ServerLimits l = limits();
  l.first_request_timeout = 300ms;
  l.idle_timeout = 10s;
  start(l);
  RawConnection silent(port());
  const auto since = std::chrono::steady_clock::now();
  EXPECT_TRUE(silent.closed_by_peer());
  EXPECT_LT(std::chrono::steady_clock::now() - since, 5s) << "closed by the idle timeout, not the first-request one";
}

TEST_F(HttpAdmissionTest, HeadersTrickledInAreBoundedByTheHeaderTimeout) {
  ServerLimits l = limits();
  l.header_timeout = 300ms;
  l.idle_timeout = 10s;
  l.request_timeout = 10s;
  start(l);
  RawConnection slow(port());
  slow.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  ASSERT_TRUE(slow.read_response().starts_with("HTTP/1.1 200"));
  slow.send("GET /healthz HTTP/1.1\r\n");
  const auto since = std::chrono::steady_clock::now();
  EXPECT_TRUE(slow.closed_by_peer());
  EXPECT_LT(std::chrono::steady_clock::now() - since, 5s) << "the header timeout did not bound the headers";
}

TEST_F(HttpAdmissionTest, OnePeerAddressHoldsAtMostItsShareOfAnonymousConnections) {
  ServerLimits l = limits();
  l.max_connections = 16;
  l.max_connections_per_peer = 2;
  start(l);
  std::vector<std::unique_ptr<RawConnection>> held = hold_busy(port(), 2, "127.0.0.2");
  RawConnection third(port(), 10s, "127.0.0.2");
  const std::string reply = third.read_to_end();
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 503")) << reply;
  EXPECT_NE(reply.find("from one address"), std::string::npos) << reply;
  // Another address is served.
  RawConnection other(port(), 10s, "127.0.0.3");
  other.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_TRUE(other.read_response().starts_with("HTTP/1.1 200"));
  // A connection that shows a token leaves its address's anonymous share.
  RawConnection trusted(port(), 10s, "127.0.0.4");
  trusted.send("GET /guarded HTTP/1.1\r\nHost: x\r\nAuthorization: " + std::string(kToken) + "\r\n\r\n");
  ASSERT_TRUE(trusted.read_response().starts_with("HTTP/1.1 200"));
  std::vector<std::unique_ptr<RawConnection>> more = hold_busy(port(), 2, "127.0.0.4");
  EXPECT_EQ(more.size(), 2u);
}

// Without a total bound (max_connections 0) the per-address share still refuses, and every
// connection it refuses is answered, not only one at a time.
TEST_F(HttpAdmissionTest, WithoutATotalBoundEveryConnectionBeyondAnAddressShareIsAnswered503) {
  ServerLimits l = limits();
  l.max_connections = 0;
  l.reserved_connections = 0;
  l.max_connections_per_peer = 2;
  start(l);
  std::vector<std::unique_ptr<RawConnection>> held = hold_busy(port(), 2, "127.0.0.5");
  std::vector<std::unique_ptr<RawConnection>> refused;
  for (int i = 0; i < 4; ++i) refused.push_back(std::make_unique<RawConnection>(port(), 10s, "127.0.0.5"));
  for (auto& c : refused) {
    const std::string reply = c->read_to_end();
    EXPECT_TRUE(reply.starts_with("HTTP/1.1 503")) << "refused without an answer: '" << reply << "'";
    EXPECT_NE(reply.find("from one address"), std::string::npos) << reply;
  }
}

// The reserve: with the anonymous pool full of connections mid-request, a newcomer is admitted
// on probation. Showing a token keeps its slot; an anonymous request is answered 503 and closed.
TEST_F(HttpAdmissionTest, TheReserveServesOnlyConnectionsThatShowAToken) {
  ServerLimits l = limits();
  l.max_connections = 4;
  l.reserved_connections = 2;
  start(l);
  std::vector<std::unique_ptr<RawConnection>> held = hold_busy(port(), 2);

  RawConnection anonymous(port());
  anonymous.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string refused = anonymous.read_to_end();
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 503")) << refused;
  EXPECT_NE(refused.find("clients with a token"), std::string::npos) << refused;

  RawConnection agent(port());
  for (int i = 0; i < 3; ++i) {
    agent.send("GET /guarded HTTP/1.1\r\nHost: x\r\nAuthorization: " + std::string(kToken) + "\r\n\r\n");
    const std::string ok = agent.read_response();
    ASSERT_TRUE(ok.starts_with("HTTP/1.1 200")) << ok;
  }
  // A trusted connection never gives way: with the pool still full, newcomers are refused.
  RawConnection second_agent(port());
  second_agent.send("GET /guarded HTTP/1.1\r\nHost: x\r\nAuthorization: " + std::string(kToken) + "\r\n\r\n");
  EXPECT_TRUE(second_agent.read_response().starts_with("HTTP/1.1 200"));
  RawConnection fifth(port());
  EXPECT_TRUE(fifth.read_to_end().starts_with("HTTP/1.1 503"));
  agent.send("GET /guarded HTTP/1.1\r\nHost: x\r\nAuthorization: " + std::string(kToken) + "\r\n\r\n");
  EXPECT_TRUE(agent.read_response().starts_with("HTTP/1.1 200"));
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

// A client that sends the first byte of each request at once and the rest never was busy for
// ever, so its connections were never shed: headers that take over a second are idle to a
// newcomer.
TEST_F(HttpAdmissionTest, HeadersBegunButNotFinishedGiveWayAfterASecond) {
  ServerLimits l = limits();
  l.max_connections = 2;
  l.reserved_connections = 0;
  l.header_timeout = 4s;
  l.first_request_timeout = 4s;
  start(l);
  std::vector<std::unique_ptr<RawConnection>> trickling;
  for (int i = 0; i < 2; ++i) {
    trickling.push_back(std::make_unique<RawConnection>(port()));
    trickling.back()->send("G");
  }
  std::this_thread::sleep_for(1500ms);
  Client client("http://127.0.0.1:" + std::to_string(port()));
  auto r = client.get("/healthz");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->status, 200u) << r->body;
  int closed = 0;
  for (auto& c : trickling) closed += c->closed_by_peer() ? 1 : 0;
  EXPECT_GE(closed, 1) << "a connection whose headers took 1.5 s kept its slot";
}

// A newcomer admitted into the reserve on probation had 5 s to say anything: now one second for
// its first whole request.
TEST_F(HttpAdmissionTest, ProbationLastsASecondToTheFirstWholeRequest) {
  ServerLimits l = limits();
  l.max_connections = 4;
  l.reserved_connections = 2;
  l.first_request_timeout = 30s;
  start(l);
  std::vector<std::unique_ptr<RawConnection>> held;
  for (int i = 0; i < 2; ++i) {  // the anonymous pool, each in a request being answered
    held.push_back(std::make_unique<RawConnection>(port()));
    held.back()->send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n");
  }
  std::this_thread::sleep_for(300ms);
  RawConnection on_probation(port());
  on_probation.send("GET /guarded HTTP/1.1\r\n");  // begun, never finished
  const auto since = std::chrono::steady_clock::now();
  EXPECT_TRUE(on_probation.closed_by_peer());
  EXPECT_LT(std::chrono::steady_clock::now() - since, 4s) << "the reserve was held past the probation";
}

// One client's bodies (here one token) take at most their share of the in-flight bound: another
// client's body is admitted beside them.
TEST_F(HttpAdmissionTest, OneClientHoldsAtMostItsShareOfTheInFlightBodies) {
  ServerLimits l = limits();
  l.max_inflight_body_bytes = 100;
  l.max_inflight_body_bytes_per_client = 50;
  start(l);
  const auto begin_body = [&](RawConnection& c, const std::string& token) {
    c.send("POST /guarded HTTP/1.1\r\nHost: x\r\nAuthorization: " + token +
           "\r\nContent-Length: 40\r\nExpect: 100-continue\r\n\r\n");
    return c.read_head();
  };
  RawConnection first(port());
  ASSERT_TRUE(begin_body(first, std::string(kToken)).starts_with("HTTP/1.1 100"));
  first.send(std::string(10, 'x'));  // and trickles on
  RawConnection second(port());
  const std::string refused = begin_body(second, std::string(kToken));
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 503")) << "the same token past its share: " << refused;
  // Another client (an address) is admitted beside it.
  RawConnection other(port(), 10s, "127.0.0.6");
  other.send("POST /open HTTP/1.1\r\nHost: x\r\nContent-Length: 40\r\nExpect: 100-continue\r\n\r\n");
  EXPECT_TRUE(other.read_head().starts_with("HTTP/1.1 100")) << "another client found no room";
}

// Answers its readers do not read were held whole in memory (150 readers of an 18 MiB result:
// 2.7 GB). Beyond the bound a read is answered 503 before it is built.
TEST_F(HttpAdmissionTest, AnswersNotYetReadAreBounded) {
  ServerLimits l = limits();
  l.max_inflight_response_bytes = 40 << 20;
  l.max_inflight_response_bytes_per_client = 24 << 20;
  start(l);
  const auto ask = [&](RawConnection& c) { c.send("GET /big HTTP/1.1\r\nHost: x\r\n\r\n"); };
  RawConnection a(port(), 10s, "127.0.0.7"), b(port(), 10s, "127.0.0.8");
  ask(a);
  std::this_thread::sleep_for(300ms);
  // The same client again: its share is taken by the answer it has not read.
  RawConnection a2(port(), 10s, "127.0.0.7");
  ask(a2);
  const std::string own = a2.read_head();
  EXPECT_TRUE(own.starts_with("HTTP/1.1 503")) << own;
  ask(b);
  std::this_thread::sleep_for(300ms);
  // Two unread answers (48 MiB, less what the kernel took) are past the total of 40 MiB.
  RawConnection c(port(), 10s, "127.0.0.9");
  ask(c);
  const std::string total = c.read_head();
  EXPECT_TRUE(total.starts_with("HTTP/1.1 503")) << total;
  EXPECT_NE(total.find("Retry-After: 1"), std::string::npos) << total;
  // Once a reader reads its answer, its bytes are given back.
  EXPECT_TRUE(a.read_response().starts_with("HTTP/1.1 200"));
  std::this_thread::sleep_for(200ms);
  RawConnection d(port(), 10s, "127.0.0.9");
  ask(d);
  EXPECT_TRUE(d.read_head().starts_with("HTTP/1.1 200"));
}

// A listener for agents and operators serves requests with a token only.
TEST_F(HttpAdmissionTest, ACredentialsOnlyListenerRefusesAnonymousRequests) {
  ServerLimits l = limits();
  l.credentials_only = true;
  start(l);
  RawConnection anonymous(port());
  anonymous.send("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
  const std::string refused = anonymous.read_response();
  EXPECT_TRUE(refused.starts_with("HTTP/1.1 401")) << refused;
  EXPECT_NE(refused.find("with a token only"), std::string::npos) << refused;
  RawConnection agent(port());
  agent.send("GET /guarded HTTP/1.1\r\nHost: x\r\nAuthorization: " + std::string(kToken) + "\r\n\r\n");
  EXPECT_TRUE(agent.read_response().starts_with("HTTP/1.1 200"));
}

}  // namespace
}  // namespace benchfleet::http
