// The store against a real SQLite file: its schema and migrations, and agents sharing commits.
#include "coordinator/store/store.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <time.h>
#include <cstdio>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "common/codecs.h"
#include "common/matrix.h"
#include "coordinator/store/migrations.h"
#include "tests/unit/store_fixture.h"
#include "tests/unit/store_test_results.h"

namespace benchfleet::store {
namespace {

TEST_F(StoreTest, MigratesOnceAndRefusesANewerSchema) {
  store_.reset();
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(options_.path.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
    sqlite3_close(db);
  }
  auto s = Store::open(options_, clock_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("schema version 99 is newer"), std::string::npos) << s.error().message;
}

TEST_F(StoreTest, ABaselineDatabaseCarriesTheApplicationId) {
  store_.reset();
  auto db = Database::open(options_.path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ((*db)->query_one("PRAGMA application_id").value()->int64(0), kApplicationId);
  EXPECT_EQ((*db)->query_one("PRAGMA user_version").value()->int64(0),
            static_cast<std::int64_t>(embedded_migrations().size()));
}

// A database made before the schema baseline (a version, no application id) is refused with the
// reason and left as it was: nothing folded into the baseline can be replayed on it.
TEST_F(StoreTest, RefusesADatabaseMadeBeforeTheBaselineAndLeavesItAlone) {
  store_.reset();
  std::filesystem::remove(options_.path);
  {
    auto db = Database::open(options_.path);
    ASSERT_TRUE(db.ok());
    ASSERT_TRUE((*db)
                    ->exec("CREATE TABLE runs (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO runs VALUES (7, 'old');"
                           " PRAGMA user_version = 11;")
                    .ok());
  }
  auto s = Store::open(options_, clock_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("schema version 11 was made before benchfleet's schema baseline"), std::string::npos)
      << s.error().message;
  auto db = Database::open(options_.path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ((*db)->query_one("PRAGMA user_version").value()->int64(0), 11);
  EXPECT_EQ((*db)->query_one("PRAGMA application_id").value()->int64(0), 0);
  EXPECT_EQ((*db)->query_one("SELECT name FROM runs WHERE id = 7").value()->text(0), "old");
  EXPECT_FALSE((*db)->query_one("SELECT 1 FROM sqlite_master WHERE name = 'jobs'").value().found());
}

// Later schema changes are new numbered files after the baseline: applied once, in order, and a
// coordinator that lacks one refuses the database instead of using it.
TEST_F(StoreTest, AMigrationAfterTheBaselineIsAppliedOnceAndAnOlderBinaryRefusesIt) {
  const auto run = submit({"torchvision/resnet18"}, {1}, {Mode::kEager});
  store_.reset();
  auto later = embedded_migrations();
  const int next = static_cast<int>(later.size()) + 1;
  char name[32];
  std::snprintf(name, sizeof name, "%03d_note.sql", next);
  later.push_back({name, "ALTER TABLE runs ADD COLUMN note TEXT; UPDATE runs SET note = 'kept';"});
  {
    auto db = Database::open(options_.path);
    ASSERT_TRUE(db.ok());
    EXPECT_EQ(migrate(**db, later).value(), next);
    EXPECT_EQ(migrate(**db, later).value(), next) << "nothing applied twice";
    EXPECT_EQ((*db)->query_one("SELECT note FROM runs WHERE id = ?", run).value()->text(0), "kept");
  }
  auto s = Store::open(options_, clock_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("schema version " + std::to_string(next) + " is newer"), std::string::npos)
      << s.error().message;
}

TEST_F(StoreTest, ReopeningAppliesNothingTwice) {
  const auto run = submit({"torchvision/resnet18"}, {1}, {Mode::kEager});
  reopen();
  auto info = store_->runs().get_run(run);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(info->job_count, 1);
  auto db = Database::open(options_.path);
  ASSERT_TRUE(db.ok());
  EXPECT_EQ(migrate(**db, embedded_migrations()).value(), static_cast<int>(embedded_migrations().size()));
}

// Agents leasing and posting at the same time share commits (one fsync for many
// requests), and every job still ends with exactly one result.
TEST_F(StoreTest, ConcurrentAgentsShareCommitsAndEveryJobGetsOneResult) {
  constexpr int kAgents = 8;
  std::vector<std::int64_t> agents;
  for (int i = 0; i < kAgents; ++i) agents.push_back(enroll("agent" + std::to_string(i)));
  const auto run = submit({"torchvision/resnet18", "google/vit-base-patch16-224", "microsoft/resnet-50"},
                          {1, 2, 4, 8, 16}, {Mode::kEager, Mode::kDefault});
  const auto before = store_->gauges(60'000);
  ASSERT_TRUE(before.ok());

  std::atomic<int> errors{0}, stored{0};
  std::vector<std::thread> threads;
  for (auto agent : agents) {
    threads.emplace_back([&, agent] {
      while (true) {
        auto a = store_->leases().lease(agent, "gpu0");
        if (!a.ok()) {
          ++errors;
          return;
        }
        if (!a->grant) return;
        auto r = store_->results().record_result(agent, {a->grant->job_id, a->grant->lease_id}, a->grant->attempt,
                                                 ok_result(2));
        if (!r.ok() || r->kind != RecordKind::kStored) ++errors;
        if (r.ok() && r->kind == RecordKind::kStored) ++stored;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(errors.load(), 0);
  auto info = store_->runs().get_run(run);
  ASSERT_TRUE(info.ok());
  EXPECT_EQ(stored.load(), info->job_count);
  EXPECT_EQ(info->jobs_by_status[JobStatus::kDone], info->job_count);
  EXPECT_EQ(info->results_by_status[ResultStatus::kOk], info->job_count);

  const auto after = store_->gauges(60'000);
  ASSERT_TRUE(after.ok());
  const auto operations = after->store.operations - before->store.operations;
  const auto commits = after->store.commits - before->store.commits;
  EXPECT_GE(operations, 2 * info->job_count);
  EXPECT_LT(commits, operations) << "no two of " << operations << " concurrent operations shared a commit";
  std::cout << operations << " store operations in " << commits << " commits\n";
}

}  // namespace
}  // namespace benchfleet::store
