// The fixture of the OpenAPI route tests (openapi_routes_test.cpp, openapi_routes_history.cpp):
// a coordinator's API on a real store, called through the Router, each answer checked against
// the document.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <exception>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/http/verb.hpp>
#include <nlohmann/json.hpp>

#include "common/catalog.h"
#include "common/clock.h"
#include "common/codecs.h"
#include "common/http/router.h"
#include "common/stats.h"
#include "coordinator/api/api.h"
#include "coordinator/api/metrics.h"
#include "coordinator/config/config.h"
#include "coordinator/services/work_signal.h"
#include "coordinator/store/store.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/openapi_support.h"

namespace benchfleet::testing::openapi_routes {

namespace fs = std::filesystem;
namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using nlohmann::json;

constexpr const char* kOperatorToken = "operator-secret";
constexpr const char* kEnrollmentToken = "enrollment-secret";

inline std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

class OpenApiRoutes : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directories(dir_ / "web" / "vendor");
    std::ofstream(dir_ / "web" / "index.html") << "<!doctype html><title>benchfleet</title>\n";
    std::ofstream(dir_ / "web" / "app.js") << "console.log('hi');\n";
    std::ofstream(dir_ / "web" / "vendor" / "data.json") << "{\"any\": [1, 2]}\n";
    config_.web_root = (dir_ / "web").string();
    store::StoreOptions options;
    options.path = (dir_ / "bf.db").string();
    auto s = store::Store::open(options, clock_);
    ASSERT_TRUE(s.ok()) << s.error().message;
    store_ = std::move(*s);
    auto catalog = Catalog::load_file(default_catalog_path());
    ASSERT_TRUE(catalog.ok()) << catalog.error().describe();
    catalog_ = std::move(*catalog);
    models_.emplace(store_->models(), std::vector<std::string>{});
    ASSERT_TRUE(models_->start(catalog_).ok());
    artifacts_.emplace((dir_ / "artifacts").string(), std::uint64_t{1} << 20);
    ASSERT_TRUE(artifacts_->open().ok());
    ctx_.emplace(api::ApiContext{.store = *store_,
                                 .models = *models_,
                                 .artifacts = *artifacts_,
                                 .config = config_,
                                 .clock = clock_,
                                 .work = work_,
                                 .metrics = metrics_,
                                 .operator_token = kOperatorToken,
                                 .enrollment_token = kEnrollmentToken,
                                 .reader_token = "reader-token-of-the-openapi-routes",
                                 .stopping = stopping_,
                                 .blocking = blocking_.get_executor(),
                                 .agent_lane = blocking_.get_executor(),
                                 .read_lane = blocking_.get_executor()});
    api::register_routes(router_, *ctx_);
  }
  void TearDown() override {
    ctx_.reset();
    models_.reset();
    store_.reset();
  }

  struct Call {
    unsigned status = 0;
    std::string route;
    std::string content_type;
    std::string body;
    std::string etag;
    json parsed;  // null unless JSON
  };

  // Dispatches through the router and checks the answer against the document: the route's
  // operation documents this status with this media type, and a JSON body matches its schema.
  Call call(bhttp::verb method, const std::string& target, const std::optional<json>& body = std::nullopt,
            const std::string& token = "", const std::string& if_none_match = "") {
    http::Request req{method, target, 11};
    if (!token.empty()) req.set(bhttp::field::authorization, "Bearer " + token);
    if (!if_none_match.empty()) req.set(bhttp::field::if_none_match, if_none_match);
    if (body) {
      req.set(bhttp::field::content_type, "application/json");
      req.body() = body->dump();
    }
    req.prepare_payload();
    Call out;
    std::optional<http::Response> res;
    asio::io_context io;
    asio::co_spawn(
        io, [&]() -> asio::awaitable<void> { res = co_await router_.dispatch(req, out.route); },
        [](std::exception_ptr e) {
          if (e) std::rethrow_exception(e);
        });
    io.run();
    EXPECT_TRUE(res.has_value());
    if (!res) return out;
    out.status = res->result_int();
    out.content_type = std::string((*res)[bhttp::field::content_type]);
    out.body = res->body();
    out.etag = std::string((*res)[bhttp::field::etag]);
    const std::string media = lower(out.content_type.substr(0, out.content_type.find(';')));
    if (media == "application/json" || media == "application/problem+json") out.parsed = json::parse(out.body);
    expect_documented(method, out, media);
    return out;
  }

  void expect_documented(bhttp::verb method, const Call& c, const std::string& media) {
    const std::string where = std::string(bhttp::to_string(method)) + " " + c.route + " -> " + std::to_string(c.status);
    const json* op = nullptr;
    for (const auto& [path, item] : document()["paths"].items()) {
      for (const auto& m : kMethods) {
        if (item.contains(m) && item[m]["operationId"] == c.route) op = &item[m];
      }
    }
    ASSERT_NE(op, nullptr) << where << ": no operation";
    const std::string status = std::to_string(c.status);
    ASSERT_TRUE((*op)["responses"].contains(status)) << where << ": status not documented; body " << c.body;
    const json& resp = deref((*op)["responses"][status]);
    if (c.status == 304 || c.status == 204) {  // Not Modified, No Content: no body, so no content is documented
      EXPECT_FALSE(resp.contains("content")) << where;
      EXPECT_TRUE(c.body.empty()) << where;
      exercised_.insert(c.route + " " + status);
      return;
    }
    ASSERT_TRUE(resp.contains("content")) << where;
    ASSERT_TRUE(resp["content"].contains(media)) << where << ": media type " << media << " not documented";
    exercised_.insert(c.route + " " + status);
    if (c.parsed.is_null()) return;
    const auto errors = SchemaChecker().check(c.parsed, resp["content"][media]["schema"]);
    EXPECT_TRUE(errors.empty()) << where << join(errors) << "\nbody: " << c.body;
  }

  // The history routes' part of ResponsesMatchTheDocument (openapi_routes_history.cpp): a
  // schedule's life, a series and the regression found in 8 nightly runs, reported by `agent`.
  void exercise_history(const json& one, const std::string& op, const std::string& agent, const std::string& token);

  testing::TempDir tmp_{"bf-openapi"};
  const fs::path dir_ = tmp_.path();
  SystemClock clock_;
  std::unique_ptr<store::Store> store_;
  Catalog catalog_;
  config::CoordinatorConfig config_;
  services::WorkSignal work_;
  api::Metrics metrics_;
  std::atomic<bool> stopping_{false};
  asio::thread_pool blocking_{2};  // where the handlers that touch the store run
  std::optional<services::ModelRegistry> models_;
  std::optional<services::ArtifactFiles> artifacts_;
  std::optional<api::ApiContext> ctx_;
  http::Router router_;
  std::set<std::string> exercised_;
};

}  // namespace benchfleet::testing::openapi_routes
