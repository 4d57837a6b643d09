// The HTTP pieces that need no running server: the client's refusals, the router's table,
// problem+json bodies and listen addresses.
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

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

TEST(HttpClient, ConnectionRefusedIsUnavailableNamingHostPort) {
  asio::io_context io;
  asio::ip::tcp::acceptor probe(io, {asio::ip::make_address("127.0.0.1"), 0});
  const auto port = probe.local_endpoint().port();
  probe.close();
  Client client("http://127.0.0.1:" + std::to_string(port));
  auto r = client.get("/healthz");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(r.error().message.find("127.0.0.1:" + std::to_string(port)), std::string::npos) << r.error().message;
}

TEST(HttpClient, RejectsBaseUrlsItCannotUse) {
  for (const char* url : {"https://example.com", "127.0.0.1:8080", "not a url"}) {
    auto r = Client(url).get("/healthz");
    ASSERT_FALSE(r.ok()) << url;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidArgument) << url;
  }
}

TEST(Router, ListsRoutesAndRefusesBadPatterns) {
  Router router;
  auto handler = [](const Request& req, const RouteMatch&) -> asio::awaitable<Response> {
    co_return text_response(status::ok, "", req);
  };
  router.add(verb::get, "/api/v1/runs/{id}", "runs.get", handler);
  router.add(verb::post, "/api/v1/runs", "runs.create", handler);
  const auto routes = router.routes();
  ASSERT_EQ(routes.size(), 2u);
  EXPECT_EQ(routes[0].method, verb::get);
  EXPECT_EQ(routes[0].pattern, "/api/v1/runs/{id}");
  EXPECT_EQ(routes[1].name, "runs.create");
  EXPECT_THROW(router.add(verb::get, "/api/v1/runs/{run}", "dup", handler), std::invalid_argument);
  EXPECT_THROW(router.add(verb::get, "api/v1", "x", handler), std::invalid_argument);
  EXPECT_THROW(router.add(verb::get, "/a/x{id}", "x", handler), std::invalid_argument);
  EXPECT_THROW(router.add(verb::get, "/a/{id}/{id}", "x", handler), std::invalid_argument);
}

TEST(Problem, BuildsRfc9457Body) {
  Request req{verb::get, "/x", 11};
  Response res = problem(status::conflict, "Conflict", "stale lease", req,
                         {{"type", "https://benchfleet.dev/problems/stale-lease"}, {"lease", 7}, {"status", 999}});
  EXPECT_EQ(res[boost::beast::http::field::content_type], "application/problem+json");
  const json j = json::parse(res.body());
  EXPECT_EQ(j["type"], "https://benchfleet.dev/problems/stale-lease");
  EXPECT_EQ(j["status"], 409);  // extra members never replace the core ones
  EXPECT_EQ(j["lease"], 7);
  EXPECT_EQ(status_for(ErrorCode::kPayloadTooLarge), status::payload_too_large);
  EXPECT_EQ(status_for(ErrorCode::kUnavailable), status::service_unavailable);
  EXPECT_EQ(status_for(ErrorCode::kPermissionDenied), status::forbidden);
  const json internal = json::parse(problem_from_error(Error::internal("SQLITE_CORRUPT"), req).body());
  EXPECT_EQ(internal["status"], 500);
  EXPECT_EQ(internal["detail"].get<std::string>().find("SQLITE"), std::string::npos);
}

TEST(ListenAddress, ParsesIpv4AndBracketedIpv6) {
  auto v4 = parse_listen_address("127.0.0.1:8080");
  ASSERT_TRUE(v4.ok()) << v4.error().describe();
  EXPECT_EQ(v4->port(), 8080);
  EXPECT_EQ(v4->address().to_string(), "127.0.0.1");
  auto v6 = parse_listen_address("[::1]:9000");
  ASSERT_TRUE(v6.ok()) << v6.error().describe();
  EXPECT_TRUE(v6->address().is_v6());
  EXPECT_EQ(v6->port(), 9000);
  auto any = parse_listen_address("0.0.0.0:0");
  ASSERT_TRUE(any.ok());
  EXPECT_EQ(any->port(), 0);
  for (const char* bad :
       {"", "8080", "localhost:80", "::1:80", "1.2.3.4:", "1.2.3.4:70000", "1.2.3.4:8x", "[::1]8080", "[::1"}) {
    auto r = parse_listen_address(bad);
    EXPECT_FALSE(r.ok()) << bad;
    if (!r.ok()) {
      EXPECT_NE(r.error().message.find("expected IP:PORT"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace benchfleet::http
