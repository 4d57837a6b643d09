// The dashboard's file serving: the path-safety rule, content types and validators as pure
// functions, and serve_asset against a real directory (symlinks, hidden files, directories).
#include "coordinator/api/web_assets.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

namespace benchfleet::api {
namespace {

namespace fs = std::filesystem;
namespace bhttp = boost::beast::http;
using Segments = std::vector<std::string>;

TEST(AssetPath, MapsSegmentsToAFileUnderTheRoot) {
  EXPECT_EQ(asset_path({}), "index.html");
  EXPECT_EQ(asset_path({"app.js"}), "app.js");
  EXPECT_EQ(asset_path({"vendor", "chart.umd.js"}), "vendor/chart.umd.js");
  EXPECT_EQ(asset_path({"runs", "run 1.html"}), "runs/run 1.html");  // decoded spaces are fine
  EXPECT_EQ(asset_path({"a..b.js"}), "a..b.js");                     // dots inside a name are fine
}

TEST(AssetPath, RefusesTraversalHiddenFilesDirectoriesAndEncodedSeparators) {
  for (const Segments& refused : std::vector<Segments>{
           {".."},  // /../etc/passwd, /%2e%2e/
           {"..", "etc", "passwd"},
           {"vendor", "..", "..", "x"},
           {"."},
           {".git", "config"},  // hidden
           {"vendor", ".secret"},
           {".env"},
           {""},            // "//"
           {"vendor", ""},  // "/vendor/": a directory
           {"a", "", "b"},
           {"..%2fetc"},          // still starts with '.'
           {"vendor/../../etc"},  // %2F decoded into a segment
           {"a\\b"},
           {std::string("a\0b", 3)},  // %00
       }) {
    EXPECT_FALSE(asset_path(refused).has_value()) << nlohmann::json(refused).dump();
  }
}

TEST(ContentType, ByExtensionCaseInsensitive) {
  EXPECT_EQ(content_type_for("index.html"), "text/html; charset=utf-8");
  EXPECT_EQ(content_type_for("app.js"), "text/javascript; charset=utf-8");
  EXPECT_EQ(content_type_for("x/app.mjs"), "text/javascript; charset=utf-8");
  EXPECT_EQ(content_type_for("STYLE.CSS"), "text/css; charset=utf-8");
  EXPECT_EQ(content_type_for("logo.svg"), "image/svg+xml");
  EXPECT_EQ(content_type_for("logo.png"), "image/png");
  EXPECT_EQ(content_type_for("favicon.ico"), "image/x-icon");
  EXPECT_EQ(content_type_for("data.json"), "application/json");
  EXPECT_EQ(content_type_for("vendor/chart.umd.js.map"), "application/json");
  EXPECT_EQ(content_type_for("LICENSE.txt"), "text/plain; charset=utf-8");
  EXPECT_EQ(content_type_for("font.woff2"), "font/woff2");
  EXPECT_EQ(content_type_for("archive.tar.gz"), "application/octet-stream");
  EXPECT_EQ(content_type_for("Makefile"), "application/octet-stream");
  EXPECT_EQ(content_type_for("html"), "application/octet-stream");
  EXPECT_EQ(content_type_for("dir.js/file"), "application/octet-stream");
}

TEST(EntityTag, StrongQuotedAndChangesWithSizeOrTime) {
  const std::string tag = entity_tag(1234, 1'700'000'000'123'456'789);
  EXPECT_EQ(tag.front(), '"');
  EXPECT_EQ(tag.back(), '"');
  EXPECT_FALSE(tag.starts_with("W/"));
  EXPECT_NE(tag, entity_tag(1235, 1'700'000'000'123'456'789));
  EXPECT_NE(tag, entity_tag(1234, 1'700'000'000'123'456'790));
  EXPECT_EQ(tag, entity_tag(1234, 1'700'000'000'123'456'789));
}

TEST(NoneMatch, ListsWildcardAndWeakComparison) {
  const std::string tag = "\"4d2-abc\"";
  EXPECT_TRUE(none_match(tag, tag));
  EXPECT_TRUE(none_match("*", tag));
  EXPECT_TRUE(none_match(" * ", tag));
  EXPECT_TRUE(none_match("\"x\", \"4d2-abc\"", tag));
  EXPECT_TRUE(none_match("\"x\",\"4d2-abc\" ,\"y\"", tag));
  EXPECT_TRUE(none_match("W/\"4d2-abc\"", tag));  // If-None-Match compares weakly
  EXPECT_FALSE(none_match("\"4d2-abd\"", tag));
  EXPECT_FALSE(none_match("4d2-abc", tag));  // unquoted is another tag
  EXPECT_FALSE(none_match("", tag));
  EXPECT_FALSE(none_match(",,", tag));
}

class ServeAsset : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = base_ / "web";
    fs::create_directories(root_ / "vendor");
    fs::create_directories(root_ / ".hidden");
    write(root_ / "index.html", "<!doctype html><title>benchfleet</title>\n");
    write(root_ / "app.js", "console.log(1);\n");
    write(root_ / "vendor" / "chart.umd.js", "var Chart = {};\n");
    write(root_ / ".env", "SECRET=1\n");
    write(root_ / ".hidden" / "x.js", "hidden\n");
    write(base_ / "outside.txt", "TOP SECRET OUTSIDE\n");
    fs::create_symlink(base_ / "outside.txt", root_ / "escape.txt");
    fs::create_symlink(base_, root_ / "up");
    fs::create_symlink(root_ / "app.js", root_ / "alias.js");  // inside the root: fine
    fs::create_symlink(root_ / ".env", root_ / "env.txt");     // into a hidden file
  }

  static void write(const fs::path& path, const std::string& text) { std::ofstream(path) << text; }

  http::Response get(const Segments& segments, const std::string& if_none_match = "",
                     bhttp::verb method = bhttp::verb::get) {
    http::Request req{method, "/", 11};
    if (!if_none_match.empty()) req.set(bhttp::field::if_none_match, if_none_match);
    return serve_asset(root_.string(), req, segments);
  }

  static void expect_not_found(const http::Response& res, const std::string& what) {
    EXPECT_EQ(res.result_int(), 404u) << what;
    EXPECT_EQ(res[bhttp::field::content_type], "application/problem+json") << what;
    EXPECT_EQ(res.body().find("SECRET"), std::string::npos) << what;
    EXPECT_EQ(res.body().find("/tmp"), std::string::npos) << what << ": a 404 names no server path";
  }

  testing::TempDir tmp_{"bf-web"};
  const fs::path base_ = tmp_.path();
  fs::path root_;
};

TEST_F(ServeAsset, ServesFilesWithTypeValidatorsAndNoCache) {
  const http::Response index = get({});
  ASSERT_EQ(index.result_int(), 200u);
  EXPECT_EQ(index.body(), "<!doctype html><title>benchfleet</title>\n");
  EXPECT_EQ(index[bhttp::field::content_type], "text/html; charset=utf-8");
  EXPECT_EQ(index[bhttp::field::cache_control], "no-cache");
  EXPECT_EQ(index["X-Content-Type-Options"], "nosniff");
  const std::string etag(index[bhttp::field::etag]);
  EXPECT_TRUE(etag.starts_with('"')) << etag;

  const http::Response chart = get({"vendor", "chart.umd.js"});
  ASSERT_EQ(chart.result_int(), 200u);
  EXPECT_EQ(chart.body(), "var Chart = {};\n");
  EXPECT_EQ(chart[bhttp::field::content_type], "text/javascript; charset=utf-8");
  EXPECT_EQ(get({"alias.js"}).body(), "console.log(1);\n");  // a symlink within the root
}

TEST_F(ServeAsset, IfNoneMatchAnswers304UntilTheFileChanges) {
  const std::string etag(get({"app.js"})[bhttp::field::etag]);
  const http::Response cached = get({"app.js"}, etag);
  EXPECT_EQ(cached.result_int(), 304u);
  EXPECT_TRUE(cached.body().empty());
  EXPECT_EQ(cached[bhttp::field::etag], etag);
  EXPECT_EQ(cached[bhttp::field::cache_control], "no-cache");
  EXPECT_EQ(get({"app.js"}, "\"other\"").result_int(), 200u);

  write(root_ / "app.js", "console.log(22);\n");
  const http::Response changed = get({"app.js"}, etag);
  EXPECT_EQ(changed.result_int(), 200u);
  EXPECT_EQ(changed.body(), "console.log(22);\n");
  EXPECT_NE(changed[bhttp::field::etag], etag);
}

TEST_F(ServeAsset, RefusesWhatIsNotAPublicFileUnderTheRoot) {
  expect_not_found(get({"..", "outside.txt"}), "..");
  expect_not_found(get({"escape.txt"}), "symlink to a file outside");
  expect_not_found(get({"up", "outside.txt"}), "symlinked directory outside");
  expect_not_found(get({".env"}), "hidden file");
  expect_not_found(get({".hidden", "x.js"}), "hidden directory");
  expect_not_found(get({"env.txt"}), "symlink to a hidden file");
  expect_not_found(get({"vendor"}), "a directory");
  expect_not_found(get({"vendor", ""}), "a directory with a slash");
  expect_not_found(get({"nope.js"}), "missing");
  expect_not_found(get({"vendor/../../outside.txt"}), "encoded slashes");
}

TEST_F(ServeAsset, EmptyRootDisablesAndAMissingRootSaysNotInstalled) {
  http::Request req{bhttp::verb::get, "/", 11};
  const http::Response disabled = serve_asset("", req, {});
  EXPECT_EQ(disabled.result_int(), 404u);
  EXPECT_NE(disabled.body().find("disabled"), std::string::npos) << disabled.body();
  const http::Response missing = serve_asset((base_ / "nowhere").string(), req, {});
  EXPECT_EQ(missing.result_int(), 404u);
  EXPECT_NE(missing.body().find("not installed"), std::string::npos) << missing.body();
  EXPECT_EQ(missing.body().find("nowhere"), std::string::npos) << missing.body();
  fs::remove(root_ / "index.html");
  expect_not_found(get({}), "no index.html");
}

}  // namespace
}  // namespace benchfleet::api
