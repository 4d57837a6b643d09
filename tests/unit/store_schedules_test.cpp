// Schedules in the store. A run per due time, exactly once (also across a reopen and
// between racing callers); missed windows; pause and resume; delete. A real SQLite file, a
// manual clock.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "common/catalog.h"
#include "common/matrix.h"
#include "coordinator/store/sqlite.h"
#include "coordinator/store/store.h"
#include "tests/unit/store_fixture.h"
#include "tests/unit/store_test_results.h"

namespace benchfleet::store {
namespace {

constexpr TimestampMs kMinute = 60'000;
constexpr TimestampMs kDay = kMinute * 24 * 60;
// ManualClock's start, 2023-11-14 22:13:20 UTC; "30 2 * * *" is first due at 02:30 the next day.
constexpr TimestampMs kStart = 1'700'000'000'000;
constexpr TimestampMs kFirstNightly = 1'700'015'400'000;  // 2023-11-15 02:30 UTC

class StoreSchedulesTest : public StoreTest {
 protected:
  void SetUp() override {
    StoreTest::SetUp();
    clock_.set_ms(kStart);
    auto catalog = Catalog::load_file(default_catalog_path());
    ASSERT_TRUE(catalog.ok());
    catalog_ = std::move(*catalog);
  }

  static MatrixSpec nightly_matrix() {
    return testing::stable_a100_matrix("nightly", {"torchvision/resnet18"}, {1, 4}, {Mode::kEager});
  }
  ScheduleInfo create(const std::string& cron = "30 2 * * *", bool enabled = true) {
    auto s = store_->schedules().create_schedule(nightly_matrix(), cron, enabled);
    EXPECT_TRUE(s.ok()) << s.error().message;
    return s.ok() ? *s : ScheduleInfo{};
  }
  Result<std::vector<JobSpec>> expand(const MatrixSpec& spec) {
    ++expansions_;
    return expand_matrix(spec, catalog_, {});
  }
  ScheduleStore::FireOutcome fire(TimestampMs now) {
    auto out = store_->schedules().fire_due_schedules(now, [this](const MatrixSpec& spec) { return expand(spec); });
    EXPECT_TRUE(out.ok()) << out.error().message;
    return out.ok() ? *out : ScheduleStore::FireOutcome{};
  }
  // runs.(schedule_id, schedule_due_at) of every run, by id.
  std::vector<std::pair<std::optional<std::int64_t>, std::optional<std::int64_t>>> run_schedule_columns() {
    auto db = Database::open(options_.path);
    EXPECT_TRUE(db.ok());
    std::vector<std::pair<std::optional<std::int64_t>, std::optional<std::int64_t>>> out;
    auto s = (*db)->prepare("SELECT schedule_id, schedule_due_at FROM runs ORDER BY id");
    EXPECT_TRUE(s.ok());
    while ((*s)->step().value()) out.emplace_back((*s)->opt_int64(0), (*s)->opt_int64(1));
    return out;
  }

  Catalog catalog_;
  std::atomic<int> expansions_{0};
};

TEST_F(StoreSchedulesTest, AScheduleIsStoredWithItsFirstDueTime) {
  const auto s = create();
  EXPECT_EQ(s.name, "nightly");
  EXPECT_EQ(s.spec, nightly_matrix());
  EXPECT_EQ(s.cron, "30 2 * * *");
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(s.created_at, kStart);
  EXPECT_EQ(s.next_due_at, kFirstNightly);
  EXPECT_FALSE(s.last_due_at.has_value());
  EXPECT_FALSE(s.last_run_id.has_value());
  EXPECT_EQ(s.missed, 0);
  EXPECT_EQ(s.runs, 0);
  EXPECT_EQ(store_->schedules().get_schedule(s.id).value().next_due_at, kFirstNightly);
  const auto hourly = create("@hourly", /*enabled=*/false);
  EXPECT_FALSE(hourly.enabled);
  const auto all = store_->schedules().list_schedules().value();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, s.id);
  EXPECT_EQ(all[1].id, hourly.id);
  EXPECT_EQ(store_->schedules().next_schedule_due().value(), kFirstNightly) << "a paused schedule is never next";

  auto bad = store_->schedules().create_schedule(nightly_matrix(), "61 * * * *", true);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(bad.error().field, "cron");
  EXPECT_EQ(store_->schedules().get_schedule(hourly.id + 1).error().code, ErrorCode::kNotFound);
}

TEST_F(StoreSchedulesTest, ADueTimeCreatesOneRunExactlyOnceAlsoAcrossAReopen) {
  const auto s = create();
  EXPECT_TRUE(fire(kFirstNightly - 1).fired.empty()) << "not due yet";
  const TimestampMs now = kFirstNightly + 5 * kMinute;
  const auto first = fire(now);
  ASSERT_EQ(first.fired.size(), 1u);
  EXPECT_TRUE(first.errors.empty());
  const FiredSchedule& f = first.fired[0];
  EXPECT_EQ(f.schedule_id, s.id);
  EXPECT_EQ(f.due_at, kFirstNightly);
  EXPECT_EQ(f.skipped, 0);
  EXPECT_EQ(f.job_count, 2);
  const auto run = store_->runs().get_run(f.run_id).value();
  EXPECT_EQ(run.name, "nightly");
  EXPECT_EQ(run.job_count, 2);

  EXPECT_TRUE(fire(now).fired.empty()) << "the same due time, a second call";
  reopen();
  EXPECT_TRUE(fire(now).fired.empty()) << "the same due time after a restart";
  EXPECT_EQ(store_->runs().list_runs(10, std::nullopt).value().size(), 1u);

  const auto after = store_->schedules().get_schedule(s.id).value();
  EXPECT_EQ(after.next_due_at, kFirstNightly + kDay);
  EXPECT_EQ(after.last_due_at, kFirstNightly);
  EXPECT_EQ(after.last_run_id, f.run_id);
  EXPECT_EQ(after.runs, 1);
  EXPECT_EQ(after.missed, 0);
  EXPECT_EQ(store_->schedules().next_schedule_due().value(), kFirstNightly + kDay);
  EXPECT_EQ(run_schedule_columns(),
            (std::vector<std::pair<std::optional<std::int64_t>, std::optional<std::int64_t>>>{{s.id, kFirstNightly}}));

  // The next night: one more.
  const auto second = fire(kFirstNightly + kDay);
  ASSERT_EQ(second.fired.size(), 1u);
  EXPECT_EQ(second.fired[0].due_at, kFirstNightly + kDay);
  EXPECT_EQ(store_->schedules().get_schedule(s.id).value().runs, 2);
}

TEST_F(StoreSchedulesTest, RacingCallersCreateOneRun) {
  create();
  create("*/5 * * * *");
  std::atomic<int> fired{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] { fired += static_cast<int>(fire(kFirstNightly).fired.size()); });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(fired.load(), 2) << "one run per schedule";
  EXPECT_EQ(store_->runs().list_runs(10, std::nullopt).value().size(), 2u);
}

TEST_F(StoreSchedulesTest, MissedWindowsGetOneRunForTheLatestDueTime) {
  const auto s = create();
  // The coordinator was down for three nights: one run, for the last of them.
  const TimestampMs now = kFirstNightly + 2 * kDay + kMinute * 180;
  const auto out = fire(now);
  ASSERT_EQ(out.fired.size(), 1u);
  EXPECT_EQ(out.fired[0].due_at, kFirstNightly + 2 * kDay);
  EXPECT_EQ(out.fired[0].skipped, 2);
  const auto after = store_->schedules().get_schedule(s.id).value();
  EXPECT_EQ(after.missed, 2);
  EXPECT_EQ(after.runs, 1);
  EXPECT_EQ(after.next_due_at, kFirstNightly + 3 * kDay);
  EXPECT_TRUE(fire(now).fired.empty());
  EXPECT_EQ(store_->runs().list_runs(10, std::nullopt).value().size(), 1u);
}

TEST_F(StoreSchedulesTest, APausedScheduleDoesNotFireAndResumingSkipsWhatPassed) {
  const auto s = create();
  const auto paused = store_->schedules().set_schedule_enabled(s.id, false).value();
  EXPECT_FALSE(paused.enabled);
  EXPECT_FALSE(store_->schedules().next_schedule_due().value().has_value());
  const TimestampMs now = kFirstNightly + kDay + kMinute;  // two due times passed while paused
  clock_.set_ms(now);
  EXPECT_TRUE(fire(now).fired.empty());
  EXPECT_EQ(expansions_.load(), 0);

  const auto resumed = store_->schedules().set_schedule_enabled(s.id, true).value();
  EXPECT_TRUE(resumed.enabled);
  EXPECT_EQ(resumed.next_due_at, kFirstNightly + 2 * kDay) << "the next due time after now";
  EXPECT_EQ(resumed.missed, 2);
  EXPECT_EQ(resumed.updated_at, now);
  EXPECT_TRUE(fire(now).fired.empty()) << "what passed while paused is skipped";
  EXPECT_EQ(store_->schedules().set_schedule_enabled(s.id, true).value().missed, 2) << "resuming twice changes nothing";

  // Paused and resumed before anything was due: nothing missed.
  const auto other = create("0 12 * * *");
  ASSERT_TRUE(store_->schedules().set_schedule_enabled(other.id, false).ok());
  const auto back = store_->schedules().set_schedule_enabled(other.id, true).value();
  EXPECT_EQ(back.missed, 0);
  EXPECT_EQ(back.next_due_at, other.next_due_at);
  EXPECT_EQ(store_->schedules().set_schedule_enabled(other.id + 1, true).error().code, ErrorCode::kNotFound);
}

TEST_F(StoreSchedulesTest, DeletingAScheduleKeepsItsRuns) {
  const auto s = create();
  const auto out = fire(kFirstNightly);
  ASSERT_EQ(out.fired.size(), 1u);
  ASSERT_TRUE(store_->schedules().delete_schedule(s.id).ok());
  EXPECT_EQ(store_->schedules().get_schedule(s.id).error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(store_->schedules().list_schedules().value().empty());
  EXPECT_EQ(store_->schedules().delete_schedule(s.id).error().code, ErrorCode::kNotFound);
  EXPECT_EQ(store_->runs().get_run(out.fired[0].run_id).value().job_count, 2);
  EXPECT_EQ(run_schedule_columns(), (std::vector<std::pair<std::optional<std::int64_t>, std::optional<std::int64_t>>>{
                                        {std::nullopt, kFirstNightly}}));
  EXPECT_TRUE(fire(kFirstNightly + kDay).fired.empty());
}

TEST_F(StoreSchedulesTest, AMatrixThatNoLongerExpandsMissesItsDueTime) {
  const auto s = create();
  auto out = store_->schedules().fire_due_schedules(
      kFirstNightly,
      [](const MatrixSpec&) -> Result<std::vector<JobSpec>> { return Error::invalid("models[0]", "unknown model"); });
  ASSERT_TRUE(out.ok());
  EXPECT_TRUE(out->fired.empty());
  ASSERT_EQ(out->errors.size(), 1u);
  EXPECT_EQ(out->errors[0].first, s.id);
  EXPECT_EQ(out->errors[0].second.field, "models[0]");
  const auto after = store_->schedules().get_schedule(s.id).value();
  EXPECT_EQ(after.missed, 1);
  EXPECT_EQ(after.runs, 0);
  EXPECT_EQ(after.next_due_at, kFirstNightly + kDay) << "tried again at the next due time, not in a loop";
  EXPECT_TRUE(store_->runs().list_runs(10, std::nullopt).value().empty());
}

}  // namespace
}  // namespace benchfleet::store
