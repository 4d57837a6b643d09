// The HTTP plumbing tested for real: a Server on 127.0.0.1:0 served by background threads,
// talked to with the Client (and a raw socket where the Client cannot misbehave on purpose).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <future>
#include <memory>
#include <mutex>
#include <semaphore>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/connect.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include "common/http/client.h"
#include "common/http/problem.h"
#include "common/http/router.h"
#include "common/http/server.h"

namespace benchfleet::http {
namespace {

namespace asio = boost::asio;
using boost::beast::http::status;
using boost::beast::http::verb;
using nlohmann::json;
using namespace std::chrono_literals;

ServerLimits test_limits() {
  ServerLimits limits;
  limits.body_limit = 1024;
  limits.header_limit = 4096;
  limits.request_timeout = 5s;
  limits.idle_timeout = 5s;
  return limits;
}

class HttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto echo = [](const Request& req, const RouteMatch& m) -> asio::awaitable<Response> {
      json params(m.params), query(m.query);
      co_return json_response(
          status::ok, {{"route", m.route_name}, {"params", params}, {"query", query}, {"body_size", req.body().size()}},
          req);
    };
    router_.add(verb::get, "/api/v1/runs/{id}/report", "runs.report", echo);
    router_.add(verb::get, "/api/v1/runs/{id}", "runs.get", echo);
    router_.add(verb::delete_, "/api/v1/runs/{id}", "runs.cancel", echo);
    router_.add(verb::get, "/api/v1/runs/compare", "runs.compare", echo);
    router_.add(verb::post, "/api/v1/runs", "runs.create", echo);
    router_.add(verb::get, "/healthz", "healthz",
                [](const Request& req, const RouteMatch&) -> asio::awaitable<Response> {
                  co_return text_response(status::ok, "ok\n", req);
                });
    router_.add(verb::get, "/boom", "boom", [](const Request&, const RouteMatch&) -> asio::awaitable<Response> {
      throw std::runtime_error("secret database path /var/lib/x");
      co_return Response{};
    });
    router_.add(verb::get, "/invalid", "invalid",
                [](const Request& req, const RouteMatch&) -> asio::awaitable<Response> {
                  co_return problem_from_error(Error::invalid("measurement.min_iterations", "must be >= 1"), req);
                });
    router_.add(verb::get, "/auth", "auth", [](const Request& req, const RouteMatch&) -> asio::awaitable<Response> {
      co_return problem_from_error({ErrorCode::kUnauthenticated, "no token", {}}, req);
    });
    // Waits until release() (or 60 s), like the coordinator's long-poll.
    router_.add(verb::get, "/slow", "slow", [this](const Request& req, const RouteMatch&) -> asio::awaitable<Response> {
      auto timer = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor, 60s);
      {
        std::lock_guard lock(mutex_);
        gates_.push_back(timer);
      }
      entered_.release();
      co_await timer->async_wait(asio::as_tuple(asio::use_awaitable));
      co_return text_response(status::ok, "slow done", req);
    });
  }

  void TearDown() override {
    release();
    stop_and_join();
  }

  void start(int threads = 1, ServerLimits limits = test_limits()) {
    server_ = std::make_unique<Server>(ioc_, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0), router_,
                                       limits, [this](std::string_view route, unsigned code, double) {
                                         std::lock_guard lock(mutex_);
                                         observed_.emplace_back(std::string(route), code);
                                         observed_cv_.notify_all();
                                       });
    server_->start();
    for (int i = 0; i < threads; ++i) {
      runners_.push_back(std::async(std::launch::async, [this] { ioc_.run(); }));
    }
  }

  // Stops the server; true if every io thread returned (all connections closed) in time.
  bool stop_and_join() {
    if (server_) server_->stop();
    bool all_returned = true;
    for (auto& runner : runners_) {
      if (runner.wait_for(20s) != std::future_status::ready) {
        all_returned = false;
        ioc_.stop();
      }
    }
    runners_.clear();
    return all_returned;
  }

  void release() {
    std::lock_guard lock(mutex_);
    for (auto& timer : gates_) asio::post(timer->get_executor(), [timer] { timer->cancel(); });
    gates_.clear();
  }

  bool wait_entered() { return entered_.try_acquire_for(20s); }

  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }

  bool wait_observed(std::size_t count) {
    std::unique_lock lock(mutex_);
    return observed_cv_.wait_for(lock, 20s, [&] { return observed_.size() >= count; });
  }

  asio::io_context ioc_;
  Router router_;
  std::unique_ptr<Server> server_;
  std::vector<std::future<void>> runners_;
  std::counting_semaphore<> entered_{0};
  std::mutex mutex_;
  std::condition_variable observed_cv_;
  std::vector<std::shared_ptr<asio::steady_timer>> gates_;
  std::vector<std::tuple<std::string, unsigned>> observed_;
};

json body_of(const Result<ClientResponse>& r) {
  EXPECT_TRUE(r.ok()) << r.error().describe();
  if (!r.ok()) return {};
  auto j = r->json();
  EXPECT_TRUE(j.ok()) << r->body;
  return j.ok() ? *j : json();
}

void expect_problem(const Result<ClientResponse>& r, unsigned code) {
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->status, code) << r->body;
  EXPECT_EQ(r->content_type, "application/problem+json");
  const json j = body_of(r);
  EXPECT_EQ(j.value("type", ""), "about:blank");
  EXPECT_EQ(j.value("status", 0u), code);
  EXPECT_FALSE(j.value("title", "").empty());
  EXPECT_FALSE(j.value("detail", "").empty());
}

// Sends raw bytes, returns everything the server sends until it closes the connection.
std::string raw_exchange(unsigned short port, const std::string& bytes) {
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::make_address("127.0.0.1"), port});
  asio::write(socket, asio::buffer(bytes));
  std::string out;
  boost::system::error_code ec;
  asio::read(socket, asio::dynamic_buffer(out), ec);
  return out;
}

TEST_F(HttpTest, RoutesWithDecodedParamsAndQuery) {
  start();
  Client client(base_url());
  const json j = body_of(client.get("/api/v1/runs/run%201/report?format=md&title=a+b&x=%26&flag&format=csv"));
  EXPECT_EQ(j["route"], "runs.report");
  EXPECT_EQ(j["params"]["id"], "run 1");
  EXPECT_EQ(j["query"]["format"], "md");  // the first of repeated keys
  EXPECT_EQ(j["query"]["title"], "a b");
  EXPECT_EQ(j["query"]["x"], "&");
  EXPECT_EQ(j["query"]["flag"], "");
}

// A sink that counts and checksums what it is handed, and stops past `stop_after` bytes.
class CountingSink : public BodySink {
 public:
  explicit CountingSink(std::size_t stop_after) : stop_after_(stop_after) {}
  bool write(std::string_view chunk) override {
    bytes += chunk.size();
    largest_chunk = std::max(largest_chunk, chunk.size());
    for (char c : chunk) sum = sum * 31 + static_cast<unsigned char>(c);
    return bytes <= stop_after_;
  }
  std::size_t bytes = 0, largest_chunk = 0;
  std::uint64_t sum = 0;

 private:
  std::size_t stop_after_;
};

// An upload route takes its body through a sink a chunk at a time: beyond the server's own
// body_limit (up to the route's), never whole in memory; the handler sees an empty body. A body
// over the route's limit is 413 before it is read; a sink that stops the upload gets its answer
// and the connection closes.
TEST_F(HttpTest, ASinkRouteStreamsItsBodyBeyondTheServersLimit) {
  RouteOptions upload;
  upload.body_limit = 8u << 20;
  upload.body_sink = [](const Request&, const RouteMatch& m) -> std::shared_ptr<BodySink> {
    return std::make_shared<CountingSink>(m.query.count("stop") != 0 ? 100000 : SIZE_MAX);
  };
  router_.add(
      verb::post, "/upload", "upload",
      [](const Request& req, const RouteMatch& m) -> asio::awaitable<Response> {
        auto* sink = dynamic_cast<CountingSink*>(m.exchange->body_sink().get());
        co_return json_response(status::ok,
                                {{"bytes", sink->bytes},
                                 {"largest_chunk", sink->largest_chunk},
                                 {"sum", sink->sum},
                                 {"body_size", req.body().size()}},
                                req);
      },
      upload);
  start();  // the server's body_limit: test_limits()'s, far below 3 MiB
  std::string body(3u << 20, '\0');
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < body.size(); ++i) {
    body[i] = static_cast<char>(i * 7 + i / 977);
    sum = sum * 31 + static_cast<unsigned char>(body[i]);
  }
  Client client(base_url());
  const json j = body_of(client.request(verb::post, "/upload", body));
  EXPECT_EQ(j.value("bytes", 0u), body.size());
  EXPECT_EQ(j.value("sum", std::uint64_t{0}), sum) << "every byte, in order";
  EXPECT_LE(j.value("largest_chunk", 0u), 64u << 10) << "a chunk at a time";
  EXPECT_EQ(j.value("body_size", 1u), 0u);
  expect_problem(client.request(verb::post, "/upload", std::string(9u << 20, 'x')), 413);
  const json stopped = body_of(client.request(verb::post, "/upload?stop=1", body));
  EXPECT_LT(stopped.value("bytes", 0u), body.size()) << "the rest is not read";
  EXPECT_EQ(body_of(client.request(verb::post, "/api/v1/runs", std::string(100, 'x')))["body_size"], 100)
      << "the client goes on, on a new connection";
}

TEST_F(HttpTest, LiteralSegmentBeatsParameter) {
  start();
  Client client(base_url());
  EXPECT_EQ(body_of(client.get("/api/v1/runs/compare"))["route"], "runs.compare");
  EXPECT_EQ(body_of(client.get("/api/v1/runs/r-7"))["route"], "runs.get");
  EXPECT_EQ(body_of(client.request(verb::delete_, "/api/v1/runs/compare"))["route"], "runs.cancel");
}

TEST_F(HttpTest, UnknownPathIs404Problem) {
  start();
  Client client(base_url());
  expect_problem(client.get("/api/v1/nope"), 404);
  expect_problem(client.get("/api/v1/runs/"), 404);  // an empty {id} does not match
}

TEST_F(HttpTest, WrongMethodIs405WithAllow) {
  start();
  Client client(base_url());
  auto r = client.request(verb::put, "/api/v1/runs/r-1");
  expect_problem(r, 405);
  EXPECT_EQ(r->headers["allow"], "GET, DELETE, HEAD");  // HEAD is answered by the GET route
}

TEST_F(HttpTest, HeadGetsTheGetRoutesHeadersWithoutTheBody) {
  start();
  Client client(base_url());
  auto head = client.request(verb::head, "/healthz");
  ASSERT_TRUE(head.ok()) << head.error().describe();
  EXPECT_EQ(head->status, 200u);
  EXPECT_TRUE(head->body.empty());
  EXPECT_EQ(head->headers["content-length"], "3");  // the GET body's length
  EXPECT_EQ(head->content_type, "text/plain; charset=utf-8");
  auto get = client.get("/healthz");  // the connection's framing is intact
  ASSERT_TRUE(get.ok()) << get.error().describe();
  EXPECT_EQ(get->body, "ok\n");
  EXPECT_EQ(client.connections_opened(), 1u);
  auto missing = client.request(verb::head, "/nope");
  ASSERT_TRUE(missing.ok()) << missing.error().describe();
  EXPECT_EQ(missing->status, 404u);
  EXPECT_EQ(missing->content_type, "application/problem+json");
  EXPECT_TRUE(missing->body.empty());

  // On the wire: headers, then nothing until the server closes.
  const std::string raw =
      raw_exchange(server_->port(), "HEAD /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_NE(raw.find("Content-Length: 3\r\n"), std::string::npos) << raw;
  EXPECT_TRUE(raw.ends_with("\r\n\r\n")) << raw;
}

TEST_F(HttpTest, NotModifiedCarriesNoBodyOrContentLength) {
  router_.add(verb::get, "/cached", "cached", [](const Request& req, const RouteMatch&) -> asio::awaitable<Response> {
    Response res{status::not_modified, req.version()};
    res.set(boost::beast::http::field::etag, "\"v1\"");
    co_return res;
  });
  start();
  const std::string raw = raw_exchange(server_->port(), "GET /cached HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  EXPECT_TRUE(raw.starts_with("HTTP/1.1 304")) << raw;
  EXPECT_NE(raw.find("ETag: \"v1\""), std::string::npos) << raw;
  EXPECT_EQ(raw.find("Content-Length"), std::string::npos) << raw;
  Client client(base_url());
  for (int i = 0; i < 2; ++i) {  // and a keep-alive client reads it and goes on
    auto r = client.get("/cached");
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(r->status, 304u);
  }
  EXPECT_EQ(client.connections_opened(), 1u);
}

TEST_F(HttpTest, FallbackAnswersGetsThatMatchNoRoute) {
  router_.set_fallback("files", [](const Request& req, const RouteMatch& m) -> asio::awaitable<Response> {
    co_return json_response(status::ok, {{"route", m.route_name}, {"pattern", m.pattern}, {"segments", m.segments}},
                            req);
  });
  ASSERT_TRUE(router_.fallback().has_value());
  EXPECT_EQ(router_.fallback()->name, "files");
  EXPECT_EQ(router_.fallback()->pattern, kFallbackPattern);
  start();
  Client client(base_url());
  json j = body_of(client.get("/vendor/chart%2Fx.js?v=1"));
  EXPECT_EQ(j["route"], "files");
  EXPECT_EQ(j["pattern"], "/{path}");
  EXPECT_EQ(j["segments"], json({"vendor", "chart/x.js"}));  // an encoded slash stays in its segment
  EXPECT_EQ(body_of(client.get("/"))["segments"], json::array());
  EXPECT_EQ(body_of(client.get("/%2e%2e/x"))["segments"], json({"..", "x"}));
  EXPECT_EQ(body_of(client.get("/api/v1/runs/r-1"))["route"], "runs.get");  // routes first
  auto head = client.request(verb::head, "/index.html");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->status, 200u);
  EXPECT_TRUE(head->body.empty());
  expect_problem(client.request(verb::post, "/index.html"), 404);      // only GET and HEAD
  expect_problem(client.request(verb::put, "/api/v1/runs/r-1"), 405);  // a known path keeps its 405
}

TEST_F(HttpTest, MalformedTargetIs400Problem) {
  start();
  Client client(base_url());
  expect_problem(client.get("/api/v1/runs/%zz"), 400);
}

TEST_F(HttpTest, BodyOverLimitIs413AndClientRecovers) {
  start();
  Client client(base_url());
  auto r = client.request(verb::post, "/api/v1/runs", std::string(4096, 'x'));
  expect_problem(r, 413);
  EXPECT_EQ(body_of(client.request(verb::post, "/api/v1/runs", std::string(1000, 'x')))["body_size"], 1000);
}

// A body far over the limit (more than the server drains before closing: 1 MiB) makes the
// client's send fail once the server has answered and closed; the client still reads the 413
// it was sent, instead of reporting a send failure the caller would retry forever.
TEST_F(HttpTest, BodyFarOverLimitIsStill413ToTheClientNotASendFailure) {
  start();
  Client client(base_url());
  auto r = client.request(verb::post, "/api/v1/runs", std::string(32 << 20, 'x'));
  expect_problem(r, 413);
  EXPECT_EQ(body_of(client.request(verb::post, "/api/v1/runs", std::string(10, 'x')))["body_size"], 10);
}

TEST_F(HttpTest, HugeHeaderIs431) {
  start();
  Client client(base_url());
  expect_problem(client.request(verb::get, "/healthz", {}, {{"X-Big", std::string(8192, 'h')}}), 431);
}

TEST_F(HttpTest, MalformedHttpIs400ThenClose) {
  start();
  const std::string reply = raw_exchange(server_->port(), "NOT HTTP AT ALL\r\n\r\n");
  EXPECT_TRUE(reply.starts_with("HTTP/1.1 400")) << reply;
  EXPECT_NE(reply.find("application/problem+json"), std::string::npos) << reply;
}

TEST_F(HttpTest, AnswersExpect100ContinueBeforeTheBody) {
  start();
  asio::io_context io;
  asio::ip::tcp::socket socket(io);
  socket.connect({asio::ip::make_address("127.0.0.1"), server_->port()});
  asio::write(socket, asio::buffer(std::string("POST /api/v1/runs HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                                               "Expect: 100-continue\r\nConnection: close\r\n\r\n")));
  std::string got;
  asio::read_until(socket, asio::dynamic_buffer(got), "\r\n\r\n");
  EXPECT_TRUE(got.starts_with("HTTP/1.1 100 Continue")) << got;
  asio::write(socket, asio::buffer(std::string("hello")));
  boost::system::error_code ec;
  asio::read(socket, asio::dynamic_buffer(got), ec);
  EXPECT_NE(got.find("HTTP/1.1 200"), std::string::npos) << got;
  EXPECT_NE(got.find("\"body_size\":5"), std::string::npos) << got;
}

TEST_F(HttpTest, ProblemFromErrorNamesTheField) {
  start();
  Client client(base_url());
  auto r = client.get("/invalid");
  expect_problem(r, 400);
  const json j = body_of(r);
  EXPECT_EQ(j["field"], "measurement.min_iterations");
  EXPECT_EQ(j["detail"], "measurement.min_iterations: must be >= 1");
  EXPECT_EQ(j["title"], "Bad Request");

  auto auth = client.get("/auth");
  expect_problem(auth, 401);
  EXPECT_EQ(auth->headers["www-authenticate"], "Bearer");
}

TEST_F(HttpTest, HandlerExceptionIs500AndServerKeepsServing) {
  start();
  Client client(base_url());
  auto r = client.get("/boom");
  expect_problem(r, 500);
  EXPECT_EQ(r->body.find("secret"), std::string::npos) << r->body;
  auto ok = client.get("/healthz");
  ASSERT_TRUE(ok.ok()) << ok.error().describe();
  EXPECT_EQ(ok->status, 200u);
  EXPECT_EQ(client.connections_opened(), 1u);
}

TEST_F(HttpTest, KeepAliveReusesOneConnection) {
  start();
  Client client(base_url());
  for (int i = 0; i < 5; ++i) {
    auto r = client.get("/healthz");
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(r->body, "ok\n");
  }
  EXPECT_EQ(client.connections_opened(), 1u);
}

TEST_F(HttpTest, ClientReconnectsWhenServerClosedIdleConnection) {
  ServerLimits limits = test_limits();
  limits.idle_timeout = 50ms;
  start(1, limits);
  Client client(base_url());
  ASSERT_TRUE(client.get("/healthz").ok());
  std::this_thread::sleep_for(1s);  // far past the idle timeout: the server has closed it
  auto r = client.get("/healthz");
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->status, 200u);
  EXPECT_EQ(client.connections_opened(), 2u);
}

// A server that closes each of the first `shed` connections it accepts before reading anything
// (what a full pool does to a newcomer whose request has not arrived yet) and answers the next
// one "ok"; how many connections it accepted.
std::future<int> shedding_server(asio::ip::tcp::acceptor& acceptor, int shed) {
  return std::async(std::launch::async, [&acceptor, shed] {
    int accepted = 0;
    for (;; ++accepted) {
      boost::system::error_code ec;
      asio::ip::tcp::socket socket = acceptor.accept(ec);
      if (ec) return accepted;
      if (accepted < shed) {
        socket.close();
        continue;
      }
      asio::streambuf request;
      asio::read_until(socket, request, "\r\n\r\n", ec);
      asio::write(socket,
                  asio::buffer(std::string("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")), ec);
      return accepted + 1;
    }
  });
}

TEST(HttpClient, AGetOnANewConnectionClosedUnreadIsSentOnceMoreAPostIsNot) {
  asio::io_context io;
  asio::ip::tcp::acceptor acceptor(io, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  const std::string url = "http://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port());
  {
    auto server = shedding_server(acceptor, 1);
    Client client(url);
    auto r = client.get("/healthz", {}, 5s);
    ASSERT_TRUE(r.ok()) << r.error().describe();
    EXPECT_EQ(r->body, "ok");
    EXPECT_EQ(client.connections_opened(), 2u);
    EXPECT_EQ(server.get(), 2);
  }
  {
    // Shed twice: the GET is sent again once, not retried for ever.
    auto server = shedding_server(acceptor, 2);
    Client client(url);
    auto r = client.get("/healthz", {}, 5s);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(client.connections_opened(), 2u);
    ASSERT_TRUE(Client(url).get("/healthz", {}, 5s).ok());  // the server's third connection
    EXPECT_EQ(server.get(), 3);
  }
  {
    // The server may have acted on a POST it closed: the caller decides.
    auto server = shedding_server(acceptor, 1);
    Client client(url);
    auto r = client.post_json("/api/v1/runs", json{{"x", 1}}, {}, 5s);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(client.connections_opened(), 1u);
    ASSERT_TRUE(Client(url).get("/healthz", {}, 5s).ok());
    EXPECT_EQ(server.get(), 2);
  }
}

TEST_F(HttpTest, SlowHandlerDoesNotBlockOtherConnections) {
  start(/*threads=*/1);  // one thread: only coroutines can interleave the two requests
  auto slow = std::async(std::launch::async, [&] { return Client(base_url()).get("/slow"); });
  ASSERT_TRUE(wait_entered());
  Client client(base_url());
  auto fast = client.get("/healthz");
  ASSERT_TRUE(fast.ok()) << fast.error().describe();
  EXPECT_EQ(fast->status, 200u);
  EXPECT_NE(slow.wait_for(0s), std::future_status::ready);  // still waiting for release()
  release();
  auto r = slow.get();
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->body, "slow done");
}

TEST_F(HttpTest, StopFinishesInFlightRequestAndClosesIdleConnections) {
  start(/*threads=*/2);
  Client idle(base_url());
  ASSERT_TRUE(idle.get("/healthz").ok());  // leaves an idle keep-alive connection
  auto slow = std::async(std::launch::async, [&] { return Client(base_url()).get("/slow"); });
  ASSERT_TRUE(wait_entered());
  server_->stop();
  release();
  auto r = slow.get();
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->body, "slow done");
  EXPECT_EQ(r->headers["connection"], "close");
  EXPECT_TRUE(stop_and_join()) << "io_context still had connections after stop()";
  auto refused = Client(base_url()).get("/healthz", {}, 5s);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kUnavailable);
}

TEST_F(HttpTest, ObserverSeesRouteNameAndStatus) {
  start();
  Client client(base_url());
  ASSERT_TRUE(client.get("/api/v1/runs/r-1/report").ok());
  ASSERT_TRUE(client.get("/nope").ok());
  ASSERT_TRUE(wait_observed(2));
  std::lock_guard lock(mutex_);
  EXPECT_EQ(observed_[0], std::make_tuple(std::string("runs.report"), 200u));
  EXPECT_EQ(observed_[1], std::make_tuple(std::string(kUnmatchedRoute), 404u));
}

TEST_F(HttpTest, ServesManyClientsOnSeveralThreads) {
  start(/*threads=*/4);
  std::vector<std::future<int>> workers;
  for (int w = 0; w < 8; ++w) {
    workers.push_back(std::async(std::launch::async, [&, w] {
      Client client(base_url());
      int ok = 0;
      for (int i = 0; i < 25; ++i) {
        auto target = "/api/v1/runs/w" + std::to_string(w) + "-" + std::to_string(i);
        auto r = client.get(target);
        if (r.ok() && r->json().ok() && (*r->json())["params"]["id"] == target.substr(13)) ++ok;
      }
      return ok;
    }));
  }
  for (auto& w : workers) EXPECT_EQ(w.get(), 25);
}

TEST_F(HttpTest, ClientTimesOutAndNamesTheServer) {
  start();
  Client client(base_url());
  auto r = client.get("/slow", {}, 200ms);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(r.error().message.find("timed out"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find(client.host_port()), std::string::npos);
}

}  // namespace
}  // namespace benchfleet::http
