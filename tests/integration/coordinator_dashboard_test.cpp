// Integration: what the dashboard needs from the real coordinator — the jobs listing of a run
// (its progress grid) as leases and results arrive, and the dashboard's static files from a
// --web-root directory made here (so the test does not depend on the UI's files): content
// types, ETag/304, HEAD, traversal and hidden files refused, the dashboard disabled.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/support/coordinator_process.h"
#include "tests/support/problem_assertions.h"
#include "tests/support/temp_dir.h"

namespace benchfleet::testing {
namespace {

namespace fs = std::filesystem;
using boost::beast::http::verb;
using nlohmann::json;

// GET `target`'s jobs listing as JSON (status 200 asserted by get_json).
json jobs_of(CoordinatorProcess& coord, const json& run, const std::string& query = "") {
  return coord.get_json(run_url(run) + "/jobs" + query);
}

// The one row of `jobs` with this id.
const json& row(const json& jobs, std::int64_t id) {
  for (const auto& j : jobs["jobs"]) {
    if (j["id"] == id) return j;
  }
  throw std::runtime_error("no job " + std::to_string(id) + " in " + jobs.dump());
}

// ---- GET /api/v1/runs/{id}/jobs -----------------------------------------------------------------

TEST(CoordinatorJobs, StatusesResultsAndHoldersFollowTheAgent) {
  CoordinatorProcess coord;
  // ResNet-50 x batch {1, 4, 16} x {eager, default}: 6 jobs.
  const json run = coord.submit(matrix({kResnet}, {1, 4, 16}, {"eager", "default"}));
  json jobs = jobs_of(coord, run);
  ASSERT_EQ(jobs["jobs"].size(), 6u) << jobs.dump();
  EXPECT_TRUE(jobs["next_cursor"].is_null());
  std::int64_t previous = 0;
  for (const auto& j : jobs["jobs"]) {
    EXPECT_GT(j["id"].get<std::int64_t>(), previous) << "ascending ids";
    previous = j["id"];
    EXPECT_EQ(j["status"], "queued");
    EXPECT_EQ(j["attempt"], 0);
    EXPECT_TRUE(j["result"].is_null());
    EXPECT_TRUE(j["agent"].is_null());
    EXPECT_TRUE(j["slot"].is_null());
    EXPECT_EQ(j["spec"]["model"], kResnet);
    EXPECT_EQ(j["spec"]["gpu"], "a100");
    EXPECT_TRUE(j["updated_at"].get<std::string>().ends_with("Z")) << j;
  }

  FakeAgent agent(coord, FakeAgent::descriptor("grid-agent", {{"gpu0", "a100"}}, {{"stable", {"eager", "default"}}}));
  auto first = agent.lease_job("gpu0");
  ASSERT_TRUE(first);
  ASSERT_EQ(first->spec()["batch"], 1);
  jobs = jobs_of(coord, run);
  EXPECT_EQ(row(jobs, first->job_id)["status"], "leased");
  EXPECT_EQ(row(jobs, first->job_id)["attempt"], 1);
  EXPECT_EQ(row(jobs, first->job_id)["agent"], "grid-agent");
  EXPECT_EQ(row(jobs, first->job_id)["slot"], "gpu0");
  const std::string leased_at = row(jobs, first->job_id)["updated_at"];

  ASSERT_EQ(agent.progress(*first).status, 200u);
  jobs = jobs_of(coord, run);
  EXPECT_EQ(row(jobs, first->job_id)["status"], "running");
  EXPECT_GE(row(jobs, first->job_id)["updated_at"].get<std::string>(), leased_at);

  ASSERT_EQ(agent.post_result(*first, ok_result(12.5)).status, 201u);
  const json results = coord.get_json(run_url(run) + "/results?samples=false");
  ASSERT_EQ(results["results"].size(), 1u);
  jobs = jobs_of(coord, run);
  const json& done = row(jobs, first->job_id);
  EXPECT_EQ(done["status"], "done");
  EXPECT_EQ(done["result"], json({{"id", results["results"][0]["id"]}, {"status", "ok"}}));
  EXPECT_EQ(done["agent"], "grid-agent");

  // Eager at batch 1 is done; the next job of the group runs out of memory at batch 1 (default
  // mode), and the larger batches of that mode become oom_implied without an agent.
  auto second = agent.lease_job("gpu0");
  ASSERT_TRUE(second);
  ASSERT_EQ(agent.post_result(*second, oom_result()).status, 201u);
  jobs = jobs_of(coord, run);
  EXPECT_EQ(row(jobs, second->job_id)["result"]["status"], "oom");
  int implied = 0;
  for (const auto& j : jobs["jobs"]) {
    if (j["result"].is_object() && j["result"]["status"] == "oom_implied") {
      ++implied;
      EXPECT_EQ(j["status"], "done");
      EXPECT_EQ(j["spec"]["mode"], second->spec()["mode"]);
      EXPECT_GT(j["spec"]["batch"].get<int>(), second->spec()["batch"].get<int>());
      EXPECT_TRUE(j["agent"].is_null()) << j;
      EXPECT_GT(j["result"]["id"].get<std::int64_t>(), 0);
    }
  }
  EXPECT_EQ(implied, second->spec()["batch"] == 1 ? 2 : 1) << jobs.dump();

  // The counts agree with GET /runs/{id}.
  const json summary = coord.get_json(run_url(run));
  std::map<std::string, int> by_status;
  for (const auto& j : jobs["jobs"]) ++by_status[j["status"].get<std::string>()];
  for (const auto& [status, n] : summary["jobs"].items()) EXPECT_EQ(by_status[status], n.get<int>()) << status;
}

TEST(CoordinatorJobs, PagesByCursorAndRefusesBadParameters) {
  CoordinatorProcess coord;
  const json other = coord.submit(matrix({kVit}, {1}, {"eager"}));
  // 2 models x {1, 4} x {eager, default}: 8 jobs, after the other run's one.
  const json run = coord.submit(matrix({kResnet, kVit}, {1, 4}, {"eager", "default"}));

  std::vector<std::int64_t> ids;
  std::string cursor;
  int pages = 0;
  while (pages < 10) {
    const json page = jobs_of(coord, run, "?limit=3" + (cursor.empty() ? std::string() : "&cursor=" + cursor));
    ++pages;
    EXPECT_LE(page["jobs"].size(), 3u);
    for (const auto& j : page["jobs"]) ids.push_back(j["id"]);
    if (page["next_cursor"].is_null()) break;
    cursor = page["next_cursor"];
    EXPECT_EQ(cursor, std::to_string(ids.back())) << "the cursor is the last id seen";
  }
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(ids.size(), 8u);
  EXPECT_TRUE(std::is_sorted(ids.begin(), ids.end()));
  EXPECT_EQ(std::set<std::int64_t>(ids.begin(), ids.end()).size(), 8u);
  const json all = jobs_of(coord, run);  // default limit 1000
  ASSERT_EQ(all["jobs"].size(), 8u);
  EXPECT_TRUE(all["next_cursor"].is_null());
  EXPECT_EQ(jobs_of(coord, other)["jobs"].size(), 1u);
  EXPECT_TRUE(jobs_of(coord, run, "?cursor=" + std::to_string(ids.back()))["jobs"].empty());
  EXPECT_EQ(jobs_of(coord, run, "?limit=10000")["jobs"].size(), 8u);

  const std::string url = run_url(run) + "/jobs";
  expect_problem(coord.get(url + "?limit=0"), 400, "query.limit");
  expect_problem(coord.get(url + "?limit=10001"), 400, "query.limit");
  expect_problem(coord.get(url + "?limit=ten"), 400, "query.limit");
  expect_problem(coord.get(url + "?cursor=abc"), 400, "query.cursor");
  expect_problem(coord.get(url + "?cursor=-1"), 400, "query.cursor");
  expect_problem(coord.get("/api/v1/runs/0/jobs"), 400, "path.id");
  expect_problem(coord.get("/api/v1/runs/999999/jobs"), 404);
  expect_problem(coord.post(url, json::object()), 405);
}

TEST(CoordinatorJobs, FollowsPublicReads) {
  CoordinatorProcess coord({{"--public-reads", "false"}});
  const json run = coord.submit(matrix({kResnet}, {1}, {"eager"}));
  http::Client anonymous(coord.base_url());
  auto refused = anonymous.get(run_url(run) + "/jobs");
  ASSERT_TRUE(refused.ok()) << refused.error().describe();
  expect_problem(*refused, 401);
  EXPECT_EQ(jobs_of(coord, run)["jobs"].size(), 1u);  // with the operator token
}

// ---- the dashboard's files ------------------------------------------------------------------------

// A web root with one file per content type, a hidden file, a secret next to the root and
// symlinks out of it; removed at the end.
class Dashboard : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = base_ / "web";
    fs::create_directories(root_ / "vendor");
    write("index.html", "<!doctype html><title>benchfleet</title><script src=\"app.js\"></script>\n");
    write("app.js", "import './vendor/chart.umd.js';\n");
    write("lib.mjs", "export const x = 1;\n");
    write("style.css", "body { margin: 0 }\n");
    write("logo.svg", "<svg xmlns=\"http://www.w3.org/2000/svg\"/>\n");
    write("logo.png", std::string("\x89PNG\r\n\x1a\n", 8));
    write("favicon.ico", std::string("\0\0\1\0", 4));
    write("data.json", "{\"ok\": true}\n");
    write("app.js.map", "{\"version\": 3}\n");
    write("notes.txt", "notes\n");
    write("font.woff2", "wOF2");
    write("blob.bin", "\x01\x02");
    write("vendor/chart.umd.js", "(function(){ this.Chart = function(){}; })();\n");
    write(".secret", "WEB-ROOT-SECRET\n");
    std::ofstream(base_ / "outside.txt") << "OUTSIDE-SECRET\n";
    fs::create_symlink(base_ / "outside.txt", root_ / "outside.txt");
    fs::create_symlink("/etc/passwd", root_ / "passwd");
    fs::create_symlink(base_, root_ / "parent");
  }

  void write(const std::string& name, const std::string& bytes) {
    std::ofstream(root_ / name, std::ios::binary) << bytes;
  }

  TempDir tmp_{"benchfleet-web"};
  const fs::path base_ = tmp_.path();
  fs::path root_;
};

TEST_F(Dashboard, ServesTheIndexAndFilesWithTheirTypes) {
  CoordinatorProcess coord({{"--web-root", root_.string()}});
  http::Client browser(coord.base_url());  // no token: the dashboard is public

  for (const char* target : {"/", "/index.html", "/?run=3", "/index.html?v=2"}) {
    auto res = browser.get(target);
    ASSERT_TRUE(res.ok()) << res.error().describe();
    EXPECT_EQ(res->status, 200u) << target;
    EXPECT_EQ(res->content_type, "text/html; charset=utf-8") << target;
    EXPECT_EQ(res->body, "<!doctype html><title>benchfleet</title><script src=\"app.js\"></script>\n");
    EXPECT_EQ(res->headers["cache-control"], "no-cache");
    EXPECT_EQ(res->headers["x-content-type-options"], "nosniff");
    EXPECT_FALSE(res->headers["etag"].empty());
  }
  const std::vector<std::pair<std::string, std::string>> types = {
      {"/app.js", "text/javascript; charset=utf-8"},
      {"/lib.mjs", "text/javascript; charset=utf-8"},
      {"/style.css", "text/css; charset=utf-8"},
      {"/logo.svg", "image/svg+xml"},
      {"/logo.png", "image/png"},
      {"/favicon.ico", "image/x-icon"},
      {"/data.json", "application/json"},
      {"/app.js.map", "application/json"},
      {"/notes.txt", "text/plain; charset=utf-8"},
      {"/font.woff2", "font/woff2"},
      {"/blob.bin", "application/octet-stream"},
      {"/vendor/chart.umd.js", "text/javascript; charset=utf-8"},
  };
  for (const auto& [target, type] : types) {
    auto res = browser.get(target);
    ASSERT_TRUE(res.ok()) << res.error().describe();
    EXPECT_EQ(res->status, 200u) << target;
    EXPECT_EQ(res->content_type, type) << target;
    std::ifstream in(root_ / target.substr(1), std::ios::binary);
    EXPECT_EQ(res->body, std::string(std::istreambuf_iterator<char>(in), {})) << target;
  }
  EXPECT_EQ(browser.get("/favicon.ico")->body.size(), 4u);  // binary bytes (NULs) intact
  // The API beside it is unchanged.
  EXPECT_EQ(browser.get("/healthz")->status, 200u);
  EXPECT_EQ(browser.get("/api/v1/runs")->status, 200u);
  auto unknown_api = browser.get("/api/v1/nope");
  ASSERT_TRUE(unknown_api.ok());
  expect_problem(*unknown_api, 404);
  EXPECT_EQ(unknown_api->problem_detail(), "no route for GET /api/v1/nope");
}

TEST_F(Dashboard, ETagRevalidationAndHead) {
  CoordinatorProcess coord({{"--web-root", root_.string()}});
  http::Client browser(coord.base_url());
  auto first = browser.get("/app.js");
  ASSERT_TRUE(first.ok());
  const std::string etag = first->headers["etag"];
  ASSERT_TRUE(etag.starts_with('"') && etag.ends_with('"')) << etag;  // strong

  auto cached = browser.request(verb::get, "/app.js", {}, {{"If-None-Match", etag}});
  ASSERT_TRUE(cached.ok());
  EXPECT_EQ(cached->status, 304u);
  EXPECT_TRUE(cached->body.empty());
  EXPECT_EQ(cached->headers["etag"], etag);
  EXPECT_EQ(cached->headers["cache-control"], "no-cache");
  EXPECT_EQ(cached->headers.count("content-length"), 0u);
  auto listed = browser.request(verb::get, "/app.js", {}, {{"If-None-Match", "\"stale\", W/" + etag}});
  EXPECT_EQ(listed->status, 304u);
  auto stale = browser.request(verb::get, "/app.js", {}, {{"If-None-Match", "\"stale\""}});
  EXPECT_EQ(stale->status, 200u);
  EXPECT_EQ(stale->body, first->body);
  auto other_file = browser.request(verb::get, "/style.css", {}, {{"If-None-Match", etag}});
  EXPECT_EQ(other_file->status, 200u);

  auto head = browser.request(verb::head, "/app.js");
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(head->status, 200u);
  EXPECT_TRUE(head->body.empty());
  EXPECT_EQ(head->headers["content-length"], std::to_string(first->body.size()));
  EXPECT_EQ(head->content_type, "text/javascript; charset=utf-8");
  EXPECT_EQ(head->headers["etag"], etag);
  auto head_index = browser.request(verb::head, "/");
  EXPECT_EQ(head_index->status, 200u);
  EXPECT_TRUE(head_index->body.empty());
  auto head_cached = browser.request(verb::head, "/app.js", {}, {{"If-None-Match", etag}});
  EXPECT_EQ(head_cached->status, 304u);
  auto head_missing = browser.request(verb::head, "/nope.js");
  EXPECT_EQ(head_missing->status, 404u);
  EXPECT_TRUE(head_missing->body.empty());

  // A changed file gets a new ETag (the copy a browser holds is then refreshed).
  write("app.js", "import './vendor/chart.umd.js'; // v2, longer\n");
  auto changed = browser.request(verb::get, "/app.js", {}, {{"If-None-Match", etag}});
  EXPECT_EQ(changed->status, 200u);
  EXPECT_NE(changed->headers["etag"], etag);
  EXPECT_EQ(changed->body, "import './vendor/chart.umd.js'; // v2, longer\n");
  EXPECT_LE(browser.connections_opened(), 2u) << "keep-alive survives 304s and HEADs";
}

TEST_F(Dashboard, RefusesTraversalHiddenFilesAndEscapingSymlinks) {
  CoordinatorProcess coord({{"--web-root", root_.string()}});
  http::Client browser(coord.base_url());
  for (const char* target : {
           "/../etc/passwd",
           "/../../../../etc/passwd",
           "/%2e%2e/%2e%2e/%2e%2e/etc/passwd",
           "/%2E%2E/outside.txt",
           "/..%2f..%2f..%2fetc%2fpasswd",
           "/vendor%2f..%2f..%2foutside.txt",
           "/vendor/..%2F..%2Foutside.txt",
           "/vendor/../../outside.txt",
           "/./.secret",
           "/.secret",
           "/%2esecret",
           "/vendor/",
           "/vendor",
           "//etc/passwd",
           "/outside.txt",         // symlink to a file outside the root
           "/passwd",              // symlink to /etc/passwd
           "/parent/outside.txt",  // symlinked directory outside the root
           "/parent/web/.secret",
           "/index.html%00.png",
           "/nope.js",
       }) {
    auto res = browser.get(target);
    ASSERT_TRUE(res.ok()) << target << ": " << res.error().describe();
    EXPECT_EQ(res->status, 404u) << target << ": " << res->body;
    EXPECT_EQ(res->content_type, "application/problem+json") << target;
    for (const char* leak : {"root:", "SECRET", base_.c_str()}) {
      EXPECT_EQ(res->body.find(leak), std::string::npos) << target << " leaked " << leak << ": " << res->body;
    }
  }
  // Other methods on files are not served either.
  auto post = browser.post_json("/index.html", json::object());
  EXPECT_EQ(post->status, 404u);
  // Nor is the coordinator's database, wherever it is.
  const std::string db = fs::path(coord.db_path()).filename().string();
  EXPECT_EQ(browser.get("/../" + db)->status, 404u);
  EXPECT_EQ(browser.get("/%2e%2e/" + db)->status, 404u);
}

TEST_F(Dashboard, EmptyWebRootDisablesTheDashboardOnly) {
  CoordinatorProcess coord({{"--web-root", ""}});
  http::Client browser(coord.base_url());
  for (const char* target : {"/", "/index.html", "/app.js"}) {
    auto res = browser.get(target);
    ASSERT_TRUE(res.ok());
    expect_problem(*res, 404);
    EXPECT_NE(res->problem_detail().find("dashboard is disabled"), std::string::npos) << res->body;
  }
  EXPECT_EQ(browser.get("/healthz")->status, 200u);
  EXPECT_EQ(browser.get("/api/v1/runs")->status, 200u);
}

TEST_F(Dashboard, PagesLoadWithoutATokenWhenReadsArePrivate) {
  CoordinatorProcess coord({{"--web-root", root_.string()}, {"--public-reads", "false"}});
  http::Client browser(coord.base_url());
  EXPECT_EQ(browser.get("/")->status, 200u);
  EXPECT_EQ(browser.get("/vendor/chart.umd.js")->status, 200u);
  expect_problem(*browser.get("/api/v1/runs"), 401);  // what the pages call needs the token
}

}  // namespace
}  // namespace benchfleet::testing
