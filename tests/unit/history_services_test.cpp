// The history services: webhook retry backoff, webhook URL splitting, the schedule runner's
// test clock file and its loop on a real store, the detector woken early, and the JSON shapes of
// history_json.h.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include "common/catalog.h"
#include "coordinator/api/history_json.h"
#include "coordinator/services/history_worker.h"
#include "coordinator/services/schedule_runner.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/store_test_results.h"

namespace benchfleet {
namespace {

TEST(AlertRetry, DoublesFromTheInitialDelayCapsAtTheMaxAndGivesUpAfterMaxAttempts) {
  services::HistoryWorkerOptions o;
  o.alert_backoff_initial = std::chrono::milliseconds(100);
  o.alert_backoff_max = std::chrono::milliseconds(1000);
  o.alert_max_attempts = 6;
  const TimestampMs now = 1'000'000;
  EXPECT_EQ(services::alert_retry_at(now, 1, o), now + 100);
  EXPECT_EQ(services::alert_retry_at(now, 2, o), now + 200);
  EXPECT_EQ(services::alert_retry_at(now, 3, o), now + 400);
  EXPECT_EQ(services::alert_retry_at(now, 4, o), now + 800);
  EXPECT_EQ(services::alert_retry_at(now, 5, o), now + 1000);
  EXPECT_EQ(services::alert_retry_at(now, 6, o), std::nullopt);
  o.alert_max_attempts = 100;
  EXPECT_EQ(services::alert_retry_at(now, 90, o), now + 1000) << "no overflow on many attempts";
  o.alert_max_attempts = 1;
  EXPECT_EQ(services::alert_retry_at(now, 1, o), std::nullopt);
}

TEST(WebhookUrl, SplitsIntoBaseAndTarget) {
  auto a = split_webhook_url("http://hooks.example:9000/alerts/bf?token=x");
  ASSERT_TRUE(a.ok()) << a.error().describe();
  EXPECT_EQ(a->base_url, "http://hooks.example:9000");
  EXPECT_EQ(a->target, "/alerts/bf?token=x");
  auto b = split_webhook_url("http://127.0.0.1:81");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->base_url, "http://127.0.0.1:81");
  EXPECT_EQ(b->target, "/");
  auto c = split_webhook_url("http://h?x=1");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->target, "/?x=1");
  for (const char* bad : {"https://h/x", "h/x", "http://", "http:///x", "http://:80/x", "http://h/x#frag"}) {
    auto r = split_webhook_url(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().field, "alert_webhook_url") << bad;
  }
}

TEST(ScheduleClockFile, HoldsMillisecondsAndIsReReadEachTime) {
  const testing::TempDir tmp("bf-clock");
  const auto path = tmp.path() / "clock";
  std::ofstream(path) << "1767312000000\n";
  auto t = services::read_clock_file(path.string());
  ASSERT_TRUE(t.ok()) << t.error().describe();
  EXPECT_EQ(*t, 1767312000000);
  std::ofstream(path) << "  1767398400000 ";
  EXPECT_EQ(*services::read_clock_file(path.string()), 1767398400000);
  for (const char* bad : {"", "soon", "12x", "-5"}) {
    std::ofstream(path) << bad;
    auto r = services::read_clock_file(path.string());
    EXPECT_FALSE(r.ok()) << bad;
  }
  std::filesystem::remove(path);
  auto missing = services::read_clock_file(path.string());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().describe().find(path.string()), std::string::npos);
}

// Polls `condition` every 10 ms for up to `limit`.
template <class F>
bool eventually(F condition, std::chrono::milliseconds limit = std::chrono::seconds(5)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

class HistoryServicesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreOptions options;
    options.path = (dir_ / "bf.db").string();
    auto s = store::Store::open(options, clock_);
    ASSERT_TRUE(s.ok()) << s.error().message;
    store_ = std::move(*s);
    auto catalog = Catalog::load_file(default_catalog_path());
    ASSERT_TRUE(catalog.ok()) << catalog.error().describe();
    catalog_ = std::move(*catalog);
  }
  void TearDown() override { store_.reset(); }

  testing::TempDir tmp_{"bf-history-services"};
  const std::filesystem::path dir_ = tmp_.path();
  ManualClock clock_{1'767'312'000'000};  // 2026-01-02T00:00:00Z
  std::unique_ptr<store::Store> store_;
  Catalog catalog_;
};

TEST_F(HistoryServicesTest, ScheduleRunnerSkipsChecksWithoutATimeAndCreatesADueRunOnce) {
  const MatrixSpec spec = store::testing::stable_a100_matrix("nightly", {"torchvision/resnet18"}, {1}, {Mode::kEager});
  auto schedule = store_->schedules().create_schedule(spec, "0 2 * * *", true);
  ASSERT_TRUE(schedule.ok()) << schedule.error().describe();
  const TimestampMs due = schedule->next_due_at;
  EXPECT_EQ(due, clock_.now_ms() + std::int64_t{2} * 3'600'000);

  std::atomic<int> calls{0};
  // The first two checks have no time (an unreadable clock file); then it is past the due time.
  services::ScheduleRunner::NowSource now = [&]() -> Result<TimestampMs> {
    if (calls.fetch_add(1) < 2) return Error::invalid("clock", "cannot read the clock file");
    return due + 1000;
  };
  boost::asio::io_context ioc;
  boost::asio::thread_pool blocking(1);
  services::WorkSignal work;
  const auto generation = work.generation();
  services::ModelRegistry models(store_->models(), {});
  ASSERT_TRUE(models.start(catalog_).ok());
  services::ScheduleRunner runner(ioc, blocking.get_executor(), store_->schedules(), models, work, now,
                                  {std::chrono::milliseconds(10), 1000});
  runner.start();
  std::thread io([&] { ioc.run(); });
  EXPECT_TRUE(eventually([&] { return runner.runs_created() == 1; }));
  EXPECT_TRUE(eventually([&] { return runner.checks() >= 5; }));
  runner.stop();
  io.join();
  blocking.join();
  EXPECT_GE(calls.load(), 7);
  EXPECT_EQ(runner.runs_created(), 1) << "one run per due time, however many checks";
  EXPECT_GT(work.generation(), generation) << "waiting lease requests were woken";
  auto after = store_->schedules().get_schedule(schedule->id);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->runs, 1);
  EXPECT_EQ(after->last_due_at, due);
  auto runs = store_->runs().list_runs(10, std::nullopt);
  ASSERT_TRUE(runs.ok());
  ASSERT_EQ(runs->size(), 1u);
  EXPECT_EQ(runs->front().name, "nightly");
}

TEST_F(HistoryServicesTest, HistoryWorkerDetectsSoonAfterAWakeAndStops) {
  services::HistoryWorkerOptions options;
  options.detect_interval = std::chrono::hours(1);
  boost::asio::io_context ioc;
  boost::asio::thread_pool blocking(1);
  services::HistoryWorker worker(ioc, blocking.get_executor(), store_->series(), store_->regressions(), clock_,
                                 options);
  worker.start();
  std::thread io([&] { ioc.run(); });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(worker.detection_passes(), 0) << "nothing before the interval or a wake";
  const auto woken = std::chrono::steady_clock::now();
  worker.wake();
  worker.wake();  // wakes close together share a pass
  EXPECT_TRUE(eventually([&] { return worker.detection_passes() >= 1; }));
  EXPECT_LT(std::chrono::steady_clock::now() - woken, std::chrono::seconds(2));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(worker.detection_passes(), 1);
  worker.stop();
  io.join();  // both loops ended: run() returns
  blocking.join();
}

TEST(HistoryJson, RegressionHasTheContractShape) {
  store::RegressionInfo r;
  r.id = 7;
  r.series_id = 3;
  r.key.model = "microsoft/resnet-50";
  r.key.gpu = "a100";
  r.key.torch_build = "nightly";
  r.direction = rules::ChangeDirection::kRegression;
  r.ratio = 1.15;
  r.first_bad.point_id = 11;
  r.first_bad.torch_version = "2.7.0.dev20250107";
  r.detected_at = 1767312000000;
  const auto j = services::regression_json(r);
  EXPECT_EQ(j["direction"], "regression");
  EXPECT_EQ(j["state"], "open");
  EXPECT_EQ(j["series"]["model"], "microsoft/resnet-50");
  EXPECT_EQ(j["series"]["mode"], "eager");
  EXPECT_EQ(j["first_bad"]["torch_version"], "2.7.0.dev20250107");
  EXPECT_TRUE(j["first_bad"]["torch_git"].is_null());
  EXPECT_TRUE(j["last_good"].is_null());
  EXPECT_TRUE(j["note"].is_null());
  EXPECT_EQ(j["url"], "/api/v1/regressions/7");
  EXPECT_EQ(j["series_url"], "/api/v1/series/3");
  EXPECT_EQ(j["detected_at"], "2026-01-02T00:00:00.000Z");
  const auto event = services::regression_opened_event(r, 5);
  EXPECT_EQ(event["event"], "regression.opened");
  EXPECT_EQ(event["delivery_id"], 5);
  EXPECT_EQ(event["regression"], j);

  store::ScheduleInfo s;
  s.id = 2;
  s.enabled = false;
  s.next_due_at = 1767312000000;
  EXPECT_TRUE(api::schedule_json(s)["next_due_at"].is_null()) << "null while paused";
  s.enabled = true;
  EXPECT_EQ(api::schedule_json(s)["next_due_at"], "2026-01-02T00:00:00.000Z");
  EXPECT_EQ(rules::parse_change_direction("improvement"), rules::ChangeDirection::kImprovement);
  EXPECT_EQ(rules::parse_change_direction("worse"), std::nullopt);
}

}  // namespace
}  // namespace benchfleet
