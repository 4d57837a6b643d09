// The launcher's queue source (slurm/queue_source.h) against a real HTTP server on 127.0.0.1:0
// that answers GET /api/v1/queue as the coordinator does (QueueSummary), or refuses.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <mutex>

#include "common/http/problem.h"
#include "common/http/router.h"
#include "common/http/server.h"
#include "slurm/queue_source.h"
#include "tests/support/temp_dir.h"

namespace benchfleet::slurm {
namespace {

namespace asio = boost::asio;
using boost::beast::http::status;
using boost::beast::http::verb;
using namespace std::chrono_literals;

class QueueSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    router_.add(verb::get, "/api/v1/queue", "queue",
                [this](const http::Request& req, const http::RouteMatch&) -> asio::awaitable<http::Response> {
                  std::lock_guard lock(mu_);
                  seen_authorization_ = std::string(req[boost::beast::http::field::authorization]);
                  if (!required_token_.empty() && seen_authorization_ != "Bearer " + required_token_) {
                    co_return http::problem_from_error({ErrorCode::kUnauthenticated, "a token is required", {}}, req);
                  }
                  co_return http::text_response(status::ok, body_, req, "application/json");
                });
    http::ServerLimits limits;
    limits.request_timeout = 5s;
    limits.idle_timeout = 5s;
    server_ = std::make_unique<http::Server>(ioc_, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0),
                                             router_, limits);
    server_->start();
    runner_ = std::async(std::launch::async, [this] { ioc_.run(); });
  }
  void TearDown() override {
    server_->stop();
    if (runner_.wait_for(20s) != std::future_status::ready) ioc_.stop();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()); }
  void answer(std::string body, std::string token = "") {
    std::lock_guard lock(mu_);
    body_ = std::move(body);
    required_token_ = std::move(token);
  }

  asio::io_context ioc_;
  http::Router router_;
  std::unique_ptr<http::Server> server_;
  std::future<void> runner_;
  std::mutex mu_;
  std::string body_;
  std::string required_token_;
  std::string seen_authorization_;
};

TEST_F(QueueSourceTest, ReadsTheQueueSummary) {
  answer(R"({"cells": [{"gpu_class": "cpu", "torch_build": "debian12", "queued": 12, "active": 1},
                       {"gpu_class": "cpu", "torch_build": "trixie", "queued": 3, "active": 0}]})",
         "s3cret");
  HttpQueueSource source(url(), "s3cret", 5s);
  auto cells = source.fetch();
  ASSERT_TRUE(cells.ok()) << cells.error().describe();
  ASSERT_EQ(cells->size(), 2u);
  EXPECT_EQ((*cells)[0].queued, 12);
  EXPECT_EQ((*cells)[1].torch_build, "trixie");
  std::lock_guard lock(mu_);
  EXPECT_EQ(seen_authorization_, "Bearer s3cret");
}

TEST_F(QueueSourceTest, RefusalsAndMalformedAnswersAreErrors) {
  answer(R"({"cells": []})", "s3cret");
  HttpQueueSource no_token(url(), "", 5s);
  auto r = no_token.fetch();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnauthenticated);
  EXPECT_NE(r.error().message.find("GET /api/v1/queue: HTTP 401"), std::string::npos) << r.error().message;

  answer(R"({"cells": [{"gpu_class": "cpu", "torch_build": "debian12", "queued": "many", "active": 0}]})");
  r = no_token.fetch();
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("cells[0].queued"), std::string::npos) << r.error().message;

  HttpQueueSource nobody("http://127.0.0.1:1", "", 2s);
  r = nobody.fetch();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnavailable);
}

TEST(ReadApiToken, FirstLineOrAnErrorNamingTheKey) {
  EXPECT_EQ(*read_api_token(""), "");
  const testing::TempDir tmp("slurm_token");
  const auto path = tmp.path() / "token";
  { std::ofstream(path) << "tok123\nignored\n"; }
  EXPECT_EQ(*read_api_token(path.string()), "tok123");
  { std::ofstream(path) << "\n"; }
  EXPECT_EQ(read_api_token(path.string()).error().field, "api_token_file");
  std::filesystem::remove(path);
  EXPECT_EQ(read_api_token(path.string()).error().field, "api_token_file");
}

}  // namespace
}  // namespace benchfleet::slurm
