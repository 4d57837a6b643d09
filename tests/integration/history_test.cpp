// Integration: the real coordinator with an injected schedule clock
// (the coordinator's schedule_clock_file) fires a nightly schedule exactly once per night, also
// across a restart; results posted through the agent API across "torch versions" form a series;
// a step becomes one regression, and a real HTTP server standing in for the webhook receives it
// once, retried with backoff when it fails, without result ingest ever waiting for it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/codecs.h"
#include "common/http/router.h"
#include "common/http/server.h"
#include "common/stats.h"
#include "common/time_format.h"
#include "tests/support/coordinator_child.h"
#include "tests/support/coordinator_process.h"
#include "tests/support/temp_dir.h"

namespace benchfleet::testing {
namespace {

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr std::int64_t kDayMs = 86'400'000;
constexpr std::int64_t kJan1 = 1'735'689'600'000;  // 2025-01-01T00:00:00Z
constexpr const char* kOperator = "it-operator-token-0123456789";
constexpr const char* kEnrollment = "it-enrollment-token-0123456789";

// ---- the webhook receiver: a real HTTP server on 127.0.0.1:0 ----------------------------------

struct Received {
  json body;
  std::string event, delivery;
  std::chrono::steady_clock::time_point at;
  unsigned answered = 0;
};

class WebhookReceiver {
 public:
  WebhookReceiver() {
    router_.add(
        bhttp::verb::post, "/hook", "hook",
        [this](const http::Request& req, const http::RouteMatch& m) -> asio::awaitable<http::Response> {
          started_.fetch_add(1);
          if (delay_.count() > 0) {
            asio::steady_timer timer(co_await asio::this_coro::executor, delay_);
            co_await timer.async_wait(asio::use_awaitable);
          }
          Received r;
          r.body = json::parse(req.body(), nullptr, false);
          r.event = std::string(req["X-Benchfleet-Event"]);
          r.delivery = std::string(req["X-Benchfleet-Delivery"]);
          r.at = std::chrono::steady_clock::now();
          r.answered = 200;
          {
            std::lock_guard lock(mu_);
            if (failures_left_ > 0) {
              --failures_left_;
              r.answered = 500;
            }
            EXPECT_EQ(m.query.count("src"), 1u) << "the URL's query reaches the receiver";
            received_.push_back(r);
          }
          co_return http::json_response(static_cast<bhttp::status>(r.answered), {{"ok", r.answered == 200}}, req);
        });
    auto endpoint = http::parse_listen_address("127.0.0.1:0");
    auto server = http::Server::listen(ioc_, *endpoint, router_, http::ServerLimits{});
    if (!server.ok()) throw std::runtime_error(server.error().message);
    server_ = std::move(*server);
    server_->start();
    thread_ = std::thread([this] { ioc_.run(); });
  }
  ~WebhookReceiver() {
    server_->stop();
    ioc_.stop();
    thread_.join();
  }
  WebhookReceiver(const WebhookReceiver&) = delete;
  WebhookReceiver& operator=(const WebhookReceiver&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(server_->port()) + "/hook?src=bf"; }
  void fail_next(int n) {
    std::lock_guard lock(mu_);
    failures_left_ = n;
  }
  // REQUIRES: called before the first request.
  void set_delay(std::chrono::milliseconds d) { delay_ = d; }
  std::vector<Received> received() const {
    std::lock_guard lock(mu_);
    return received_;
  }
  int started() const { return started_.load(); }

 private:
  asio::io_context ioc_;
  http::Router router_;
  std::unique_ptr<http::Server> server_;
  std::thread thread_;
  mutable std::mutex mu_;
  std::vector<Received> received_;
  int failures_left_ = 0;
  std::chrono::milliseconds delay_{0};
  std::atomic<int> started_{0};
};

// ---- the coordinator, with the schedule clock file in its environment --------------------------

class Coordinator {
 public:
  explicit Coordinator(const std::map<std::string, std::string>& flags) {
    clock_file_ = dir_ + "/clock";
    flags_ = {{"--db", dir_ + "/bf.db"}, {"--operator-token", kOperator}, {"--enrollment-token", kEnrollment},
              {"--log-level", "info"},   {"--schedule-check-ms", "50"},   {"--detect-interval-ms", "200"}};
    for (const auto& [k, v] : flags) flags_[k] = v;
  }
  ~Coordinator() {
    child_.reset();
    if (::testing::Test::HasFailure()) {
      std::ifstream in(dir_ + "/coordinator.log");
      std::stringstream log;
      log << in.rdbuf();
      const std::string text = log.str();
      std::cerr << "---- coordinator log (kept in " << dir_ << ") ----\n"
                << text.substr(text.size() > 12000 ? text.size() - 12000 : 0) << "\n---- end ----\n";
      tmp_.keep();
    }
  }

  void set_clock(std::int64_t ms) {
    std::ofstream(clock_file_ + ".tmp") << ms << "\n";
    std::filesystem::rename(clock_file_ + ".tmp", clock_file_);
  }

  void start() {
    LaunchOptions options;
    options.flags = flags_;
    options.flags["--schedule-clock-file"] = clock_file_;
    options.port_file = dir_ + "/port";
    options.log_file = dir_ + "/coordinator.log";
    options.append_log = true;
    options.clean_environment = true;  // $BENCHFLEET_* of the developer dropped
    auto child = CoordinatorChild::start(options);
    if (!child.ok()) throw std::runtime_error(child.error().message);
    child_ = std::move(*child);
    client_ = std::make_unique<http::Client>("http://127.0.0.1:" + std::to_string(child_->port()));
  }
  void stop() {
    const auto exit = child_->stop();
    EXPECT_FALSE(exit.killed_after_grace) << "the coordinator did not stop on SIGTERM";
    child_.reset();
  }

  http::Client& client() { return *client_; }
  std::string base_url() const { return "http://127.0.0.1:" + std::to_string(child_->port()); }

  http::ClientResponse get(const std::string& target) {
    auto r = client_->get(target, kOperator);
    if (!r.ok()) throw std::runtime_error("GET " + target + ": " + r.error().describe());
    return *r;
  }
  json get_json(const std::string& target) {
    auto r = get(target);
    if (r.status != 200) throw std::runtime_error("GET " + target + " -> " + std::to_string(r.status) + " " + r.body);
    return json::parse(r.body);
  }
  http::ClientResponse post(const std::string& target, const json& body, const std::string& token = kOperator) {
    auto r = client_->post_json(target, body, token);
    if (!r.ok()) throw std::runtime_error("POST " + target + ": " + r.error().describe());
    return *r;
  }
  // The value of a /metrics sample line such as benchfleet_regressions{state="open"}.
  double metric(const std::string& sample) {
    const std::string text = get("/metrics").body;
    const auto at = text.find("\n" + sample + " ");
    if (at == std::string::npos) throw std::runtime_error("no " + sample + " in /metrics");
    return std::stod(text.substr(at + sample.size() + 2));
  }

 private:
  TempDir tmp_{"bf-history"};
  const std::string dir_ = tmp_.str();
  std::string clock_file_;
  std::map<std::string, std::string> flags_;
  std::unique_ptr<CoordinatorChild> child_;
  std::unique_ptr<http::Client> client_;
};

// ---- a simulated agent speaking the agent API ---------------------------------------------------

class Agent {
 public:
  explicit Agent(Coordinator& c, const std::vector<std::string>& modes = {"eager"}) : c_(c) {
    const auto res =
        c.post("/api/v1/agents/enroll", FakeAgent::descriptor("nightly-box", {{"gpu0", "a100"}}, {{"nightly", modes}}),
               kEnrollment);
    if (res.status != 201) throw std::runtime_error("enrolment answered " + res.body);
    const json body = json::parse(res.body);
    id_ = body["agent_id"];
    token_ = body["agent_token"];
  }

  // Leases the one job there is and posts an ok result of `samples` recorded by torch
  // `version` (with `extra` members: a compiled mode's export time and accuracy). Returns the
  // milliseconds the result POST took.
  double run_job(const std::string& version, const std::vector<double>& samples,
                 const std::function<json(const json& spec)>& extra = nullptr) {
    const auto lease =
        c_.post("/api/v1/agents/" + std::to_string(id_) + "/lease", {{"slot", "gpu0"}, {"wait_s", 5}}, token_);
    if (lease.status != 200) throw std::runtime_error("lease answered " + lease.body);
    const json job = json::parse(lease.body)["job"];
    if (!job.is_object()) throw std::runtime_error("no job to lease for torch " + version);
    json result = {{"status", "ok"},
                   {"stats", compute_statistics(samples)},
                   {"samples_ms", samples},
                   {"first_call_ms", 250.5},
                   {"stop_reason", "max_time"},
                   {"memory", {{"peak_allocated_bytes", 123456789}}},
                   {"environment",
                    {{"torch_version", version},
                     {"torch_git", "git" + version.substr(version.size() - 2)},
                     {"gpu_name", "Fake A100"}}},
                   {"telemetry", {{"temperature_c", 41}}}};
    if (extra) result.update(extra(job["spec"]));
    const auto t0 = std::chrono::steady_clock::now();
    const auto posted =
        c_.post("/api/v1/jobs/" + std::to_string(job["id"].get<std::int64_t>()) + "/result",
                {{"lease_id", job["lease_id"]}, {"attempt", job["attempt"]}, {"result", result}}, token_);
    const double took = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (posted.status != 201) throw std::runtime_error("result answered " + posted.body);
    return took;
  }

 private:
  Coordinator& c_;
  std::int64_t id_ = 0;
  std::string token_;
};

// 40 samples around `median_ms` with a 3% coefficient of variation (seeded: the same every run).
std::vector<double> samples_around(double median_ms, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> noise(median_ms, 0.03 * median_ms);
  std::vector<double> out;
  for (int i = 0; i < 40; ++i) out.push_back(noise(rng));
  return out;
}

// The nightly version of night `n` (1..9): "2.7.0.dev2025010n".
std::string nightly(int n) { return "2.7.0.dev2025010" + std::to_string(n); }
// Nights 1..6 around 10 ms, then 11.5 ms (a 15% step).
double level_of(int n) { return n <= 6 ? 10.0 : 11.5; }

json one_cell_matrix(const std::string& name) {
  return {{"name", name},
          {"models", {kResnet}},
          {"batch_sizes", {1}},
          {"modes", {"eager"}},
          {"torch_builds", {"nightly"}},
          {"gpus", {"a100"}},
          {"runtimes", {"libtorch"}}};
}

std::int64_t run_count(Coordinator& c) { return static_cast<std::int64_t>(c.get_json("/api/v1/runs")["runs"].size()); }

const char* kSeriesQuery = "/api/v1/series?model=microsoft/resnet-50&batch=1&mode=eager&gpu=a100&build=nightly";

TEST(History, NightlyScheduleFiresOnceAndAStepBecomesOneRegressionAlertedOnce) {
  WebhookReceiver receiver;
  Coordinator coord({{"--alert-webhook-url", receiver.url()}});
  // The store stamps a new schedule's first due time from the system clock; only the schedule
  // runner reads the clock file, which the test moves from the real now to each night's due time.
  const std::int64_t now = SystemClock().now_ms();
  coord.set_clock(now);
  coord.start();

  // Refused: a bad cron expression, a matrix that does not expand.
  auto bad_cron = coord.post("/api/v1/schedules", {{"cron", "0 25 * * *"}, {"matrix", one_cell_matrix("nightly")}});
  EXPECT_EQ(bad_cron.status, 400u);
  EXPECT_EQ(json::parse(bad_cron.body)["field"], "cron") << bad_cron.body;
  json unknown_model = one_cell_matrix("nightly");
  unknown_model["models"] = {"no/such-model"};
  auto bad_matrix = coord.post("/api/v1/schedules", {{"cron", "0 2 * * *"}, {"matrix", unknown_model}});
  EXPECT_EQ(bad_matrix.status, 400u);
  EXPECT_EQ(json::parse(bad_matrix.body)["field"].get<std::string>().rfind("matrix.models", 0), 0u) << bad_matrix.body;
  json long_walk = one_cell_matrix("nightly");  // more batch sizes than a lease carries, as POST /runs
  long_walk["shape_walk"] = true;
  long_walk["batch_sizes"] = json::array();
  for (int b = 1; b <= 65; ++b) long_walk["batch_sizes"].push_back(b);
  auto bad_walk = coord.post("/api/v1/schedules", {{"cron", "0 2 * * *"}, {"matrix", long_walk}});
  EXPECT_EQ(bad_walk.status, 400u);
  EXPECT_EQ(json::parse(bad_walk.body)["field"], "matrix.batch_sizes") << bad_walk.body;
  EXPECT_EQ(coord.post("/api/v1/schedules", {{"cron", "0 2 * * *"}, {"matrix", one_cell_matrix("x")}}, "wrong").status,
            401u);

  const auto created = coord.post("/api/v1/schedules", {{"cron", "0 2 * * *"}, {"matrix", one_cell_matrix("nightly")}});
  ASSERT_EQ(created.status, 201u) << created.body;
  const json schedule = json::parse(created.body);
  const std::string schedule_url = schedule["url"];
  const auto first_due = parse_time(schedule["next_due_at"].get<std::string>());
  ASSERT_TRUE(first_due.has_value()) << created.body;
  EXPECT_GT(*first_due, now);
  EXPECT_LE(*first_due, now + kDayMs);
  EXPECT_EQ(*first_due % kDayMs, 2 * 3'600'000) << "02:00 UTC";
  EXPECT_EQ(schedule["enabled"], true);
  EXPECT_EQ(coord.get_json("/api/v1/schedules")["schedules"].size(), 1u);

  // Not due yet: no run.
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(run_count(coord), 0);

  // Past 02:00: exactly one run, also after more checks and after a restart on the same clock.
  coord.set_clock(*first_due + 30'000);
  ASSERT_TRUE(eventually([&] { return run_count(coord) == 1; }, 10s)) << coord.get_json("/api/v1/runs").dump();
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(run_count(coord), 1);
  coord.stop();
  coord.start();
  std::this_thread::sleep_for(600ms);  // a dozen checks
  EXPECT_EQ(run_count(coord), 1);
  json fired = coord.get_json(schedule_url);
  EXPECT_EQ(fired["runs"], 1);
  EXPECT_EQ(fired["missed"], 0);
  EXPECT_EQ(fired["last_due_at"], format_time(*first_due));
  EXPECT_EQ(fired["next_due_at"], format_time(*first_due + kDayMs));
  EXPECT_EQ(fired["last_run_id"], coord.get_json("/api/v1/runs")["runs"][0]["id"]);

  // Eight nights: the schedule fires each night, the agent runs that night's nightly build.
  Agent agent(coord);
  for (int night = 1; night <= 8; ++night) {
    if (night > 1) {
      coord.set_clock(*first_due + (night - 1) * kDayMs + 30'000);
      ASSERT_TRUE(eventually([&] { return run_count(coord) == night; }, 10s)) << "night " << night;
    }
    agent.run_job(nightly(night), samples_around(level_of(night), 1000 + night));
  }
  std::this_thread::sleep_for(300ms);
  EXPECT_EQ(run_count(coord), 8) << "one run per night";
  EXPECT_EQ(coord.get_json(schedule_url)["runs"], 8);

  // The series: 8 points in version order.
  const json listed = coord.get_json(kSeriesQuery);
  ASSERT_EQ(listed["series"].size(), 1u) << listed.dump();
  const json& series = listed["series"][0];
  EXPECT_EQ(series["point_count"], 8);
  EXPECT_EQ(series["last_torch_version"], nightly(8));
  const json detail = coord.get_json(series["url"].get<std::string>());
  ASSERT_EQ(detail["points"].size(), 8u) << detail.dump();
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(detail["points"][i]["torch_version"], nightly(i + 1)) << i;
    EXPECT_EQ(detail["points"][i]["status"], "ok");
  }

  // One open regression: last good night 6, first bad night 7, ~1.15x.
  json open;
  ASSERT_TRUE(eventually(
      [&] {
        open = coord.get_json("/api/v1/regressions");
        return !open["regressions"].empty();
      },
      10s))
      << "no regression found";
  ASSERT_EQ(open["regressions"].size(), 1u) << open.dump();
  const json regression = open["regressions"][0];
  EXPECT_EQ(regression["series_id"], series["id"]);
  EXPECT_EQ(regression["direction"], "regression");
  EXPECT_EQ(regression["state"], "open");
  EXPECT_EQ(regression["first_bad"]["torch_version"], nightly(7));
  EXPECT_EQ(regression["last_good"]["torch_version"], nightly(6));
  EXPECT_NEAR(regression["ratio"].get<double>(), 1.15, 0.03);
  EXPECT_LT(regression["p_value"].get<double>(), 0.001);
  EXPECT_EQ(coord.get_json(regression["url"].get<std::string>()), regression);
  EXPECT_EQ(coord.get_json(series["url"].get<std::string>())["regressions"].size(), 1u);
  EXPECT_EQ(coord.metric("benchfleet_regressions{state=\"open\"}"), 1);

  // The webhook got it exactly once.
  ASSERT_TRUE(eventually([&] { return !receiver.received().empty(); }, 10s)) << "no webhook POST";
  std::this_thread::sleep_for(1500ms);
  const auto posts = receiver.received();
  ASSERT_EQ(posts.size(), 1u);
  EXPECT_EQ(posts[0].event, "regression.opened");
  EXPECT_EQ(posts[0].body["event"], "regression.opened");
  EXPECT_EQ(posts[0].body["delivery_id"].dump(), posts[0].delivery);
  EXPECT_EQ(posts[0].body["regression"]["id"], regression["id"]);
  EXPECT_EQ(posts[0].body["regression"]["first_bad"], regression["first_bad"]);
  EXPECT_EQ(coord.metric("benchfleet_alert_deliveries{state=\"pending\"}"), 0);

  // Acknowledge, then resolve.
  const std::string url = regression["url"];
  EXPECT_EQ(coord.post(url + "/acknowledge", json::object(), "wrong").status, 401u);
  const auto acked = coord.post(url + "/acknowledge", {{"note", "bisecting"}});
  ASSERT_EQ(acked.status, 200u) << acked.body;
  EXPECT_EQ(json::parse(acked.body)["state"], "acknowledged");
  EXPECT_EQ(json::parse(acked.body)["note"], "bisecting");
  EXPECT_EQ(coord.metric("benchfleet_regressions{state=\"open\"}"), 0);
  EXPECT_EQ(coord.metric("benchfleet_regressions{state=\"acknowledged\"}"), 1);
  EXPECT_TRUE(coord.get_json("/api/v1/regressions")["regressions"].empty());
  EXPECT_EQ(coord.get_json("/api/v1/regressions?state=acknowledged")["regressions"].size(), 1u);
  const auto resolved = coord.post(url + "/resolve", json::object());
  ASSERT_EQ(resolved.status, 200u) << resolved.body;
  EXPECT_EQ(json::parse(resolved.body)["state"], "resolved");
  EXPECT_FALSE(json::parse(resolved.body)["resolved_at"].is_null());
  EXPECT_EQ(coord.metric("benchfleet_regressions{state=\"acknowledged\"}"), 0);
  EXPECT_EQ(coord.get_json("/api/v1/regressions?state=all&direction=all")["regressions"].size(), 1u);
  EXPECT_EQ(coord.get("/api/v1/regressions?state=closed").status, 400u);

  // Missed windows: down for three due times, the coordinator creates one run, for the latest.
  coord.stop();
  coord.set_clock(*first_due + 10 * kDayMs + 30'000);
  coord.start();
  ASSERT_TRUE(eventually([&] { return run_count(coord) == 9; }, 10s));
  std::this_thread::sleep_for(400ms);
  EXPECT_EQ(run_count(coord), 9);
  const json caught_up = coord.get_json(schedule_url);
  EXPECT_EQ(caught_up["missed"], 2) << caught_up.dump();
  EXPECT_EQ(caught_up["last_due_at"], format_time(*first_due + 10 * kDayMs));
  EXPECT_EQ(caught_up["next_due_at"], format_time(*first_due + 11 * kDayMs));

  // Pause and resume; deleting keeps the runs.
  EXPECT_EQ(json::parse(coord.post(schedule_url + "/pause", json::object()).body)["next_due_at"], nullptr);
  EXPECT_EQ(json::parse(coord.post(schedule_url + "/resume", json::object()).body)["enabled"], true);
  auto deleted = coord.client().request(bhttp::verb::delete_, schedule_url, {},
                                        {{"Authorization", std::string("Bearer ") + kOperator}});
  ASSERT_TRUE(deleted.ok());
  EXPECT_EQ(deleted->status, 204u);
  EXPECT_EQ(coord.get(schedule_url).status, 404u);
  EXPECT_EQ(run_count(coord), 9);
  EXPECT_EQ(receiver.received().size(), 1u) << "still one webhook POST";
}

// GET /schedules/{id}/summary: per night's run, oldest first, the compiled mode's geomean speedup,
// pass rate, compile time and memory ratio, as each run's report has them.
TEST(History, TheScheduleSummaryFollowsEachNightsBuild) {
  Coordinator coord({});
  coord.start();
  json matrix = one_cell_matrix("nightly");
  matrix["modes"] = {"eager", "default"};
  const auto created = coord.post("/api/v1/schedules", {{"cron", "0 2 * * *"}, {"matrix", matrix}});
  ASSERT_EQ(created.status, 201u) << created.body;
  const json schedule = json::parse(created.body);
  const std::string url = schedule["url"];
  const auto first_due = parse_time(schedule["next_due_at"].get<std::string>());
  ASSERT_TRUE(first_due.has_value());
  EXPECT_EQ(coord.get_json(url + "/summary")["runs"], json::array()) << "no night yet";

  Agent agent(coord, {"eager", "default"});
  // Night n: eager 10 ms; default 5 ms, then 4 ms (speedup 2, then 2.5); the export 20 s, then 30 s.
  for (int night = 1; night <= 2; ++night) {
    coord.set_clock(*first_due + (night - 1) * kDayMs + 30'000);
    ASSERT_TRUE(eventually([&] { return run_count(coord) == night; }, 10s)) << "night " << night;
    for (int job = 0; job < 2; ++job) {
      std::string mode;
      agent.run_job(nightly(night), samples_around(job == 0 ? 10.0 : (night == 1 ? 5.0 : 4.0), 7 + night),
                    [&](const json& spec) {
                      mode = spec["mode"];
                      if (mode == "eager") return json::object();
                      return json{{"export_s", night == 1 ? 20.0 : 30.0},
                                  {"accuracy",
                                   {{"verdict", "pass"},
                                    {"compiled_error", 1e-6},
                                    {"eager_error", 4e-7},
                                    {"tolerance", 1.012e-4},
                                    {"output", "output0"},
                                    {"detail", ""}}}};
                    });
      ASSERT_EQ(mode, job == 0 ? "eager" : "default") << "a group's eager job leases first";
    }
  }

  const json summary = coord.get_json(url + "/summary?stat=median");
  EXPECT_EQ(summary["schedule"]["id"], schedule["id"]);
  EXPECT_EQ(summary["stat"], "median");
  ASSERT_EQ(summary["runs"].size(), 2u) << summary.dump(1);
  for (int night = 1; night <= 2; ++night) {
    const json& run = summary["runs"][night - 1];
    ASSERT_EQ(run["columns"].size(), 1u) << run.dump(1);
    const json& c = run["columns"][0];
    EXPECT_EQ(c["key"], "nightly/libtorch/default");
    EXPECT_EQ(c["torch_versions"], json({nightly(night)})) << "oldest first";
    const json report =
        coord.get_json("/api/v1/runs/" + std::to_string(run["run_id"].get<std::int64_t>()) + "/report?stat=median");
    EXPECT_DOUBLE_EQ(c["geomean_speedup"].get<double>(), report["tables"][0]["geomeans"][0]["value"].get<double>())
        << "as the run's report has it";
    EXPECT_NEAR(c["geomean_speedup"].get<double>(), night == 1 ? 2.0 : 2.5, 0.15);
    EXPECT_EQ(c["passed"], 1);
    EXPECT_EQ(c["attempted"], 1);
    EXPECT_DOUBLE_EQ(c["pass_rate"].get<double>(), 1.0);
    EXPECT_DOUBLE_EQ(c["compile_ms_median"].get<double>(), night == 1 ? 20'000 : 30'000);
    EXPECT_DOUBLE_EQ(c["memory_ratio_geomean"].get<double>(), 1.0) << "both peaks 123456789 bytes";
  }
  EXPECT_EQ(coord.get_json(url + "/summary?limit=1")["runs"][0]["run_id"], summary["runs"][1]["run_id"])
      << "the latest";
  EXPECT_EQ(coord.get("/api/v1/schedules/999/summary").status, 404u);
  EXPECT_EQ(coord.get(url + "/summary?stat=p50").status, 400u);
}

// Submits a one-cell run per night (no schedule) and posts its result.
void post_nights(Coordinator& coord, Agent& agent, int first, int last, std::vector<double>* took = nullptr) {
  for (int night = first; night <= last; ++night) {
    const auto run = coord.post("/api/v1/runs", one_cell_matrix("night " + std::to_string(night)));
    if (run.status != 201) throw std::runtime_error("submit answered " + run.body);
    const double ms = agent.run_job(nightly(night), samples_around(level_of(night), 2000 + night));
    if (took) took->push_back(ms);
  }
}

TEST(History, WebhookIsRetriedWithBackoffUntilTheReceiverAccepts) {
  WebhookReceiver receiver;
  receiver.fail_next(2);
  Coordinator coord({{"--alert-webhook-url", receiver.url()},
                     {"--alert-backoff-initial-ms", "300"},
                     {"--alert-backoff-max-ms", "5000"}});
  coord.set_clock(kJan1);
  coord.start();
  Agent agent(coord);
  post_nights(coord, agent, 1, 8);

  ASSERT_TRUE(eventually([&] { return receiver.received().size() >= 3; }, 15s))
      << receiver.received().size() << " webhook requests";
  std::this_thread::sleep_for(1500ms);
  const auto posts = receiver.received();
  ASSERT_EQ(posts.size(), 3u) << "two failures, then one success, then nothing";
  EXPECT_EQ(posts[0].answered, 500u);
  EXPECT_EQ(posts[1].answered, 500u);
  EXPECT_EQ(posts[2].answered, 200u);
  EXPECT_EQ(posts[0].delivery, posts[2].delivery) << "the same delivery, retried";
  EXPECT_EQ(posts[0].body, posts[2].body);
  // Backoff: 300 ms after the first failure, 600 ms after the second (a little slack below).
  EXPECT_GE(posts[1].at - posts[0].at, 250ms);
  EXPECT_GE(posts[2].at - posts[1].at, 550ms);
  EXPECT_EQ(coord.metric("benchfleet_alert_deliveries{state=\"pending\"}"), 0);
  EXPECT_EQ(coord.metric("benchfleet_alert_deliveries{state=\"failed\"}"), 0);
}

TEST(History, IngestDoesNotWaitForASlowWebhookWhichIsGivenUpAfterMaxAttempts) {
  WebhookReceiver receiver;
  receiver.set_delay(3s);  // longer than the alert timeout: every attempt times out
  Coordinator coord({{"--alert-webhook-url", receiver.url()},
                     {"--alert-timeout-ms", "1500"},
                     {"--alert-max-attempts", "2"},
                     {"--alert-backoff-initial-ms", "100"}});
  coord.set_clock(kJan1);
  coord.start();
  Agent agent(coord);
  post_nights(coord, agent, 1, 8);
  ASSERT_TRUE(eventually([&] { return receiver.started() >= 1; }, 10s)) << "the webhook was never called";

  // While the sender waits on the receiver, results are stored at once.
  std::vector<double> took;
  post_nights(coord, agent, 9, 9, &took);
  EXPECT_EQ(receiver.received().size(), 0u) << "the first attempt is still in flight";
  ASSERT_EQ(took.size(), 1u);
  EXPECT_LT(took[0], 1000.0) << "result ingest waited for the webhook";
  EXPECT_EQ(coord.metric("benchfleet_alert_deliveries{state=\"pending\"}"), 1);

  // Two attempts time out; the delivery is given up.
  ASSERT_TRUE(eventually([&] { return coord.metric("benchfleet_alert_deliveries{state=\"failed\"}") == 1; }, 15s));
  EXPECT_EQ(coord.metric("benchfleet_alert_deliveries{state=\"pending\"}"), 0);
  EXPECT_EQ(receiver.started(), 2);
}

}  // namespace
}  // namespace benchfleet::testing
