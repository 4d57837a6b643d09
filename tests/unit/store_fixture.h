// The fixture of the tests that open a real store (store_test, store_dtype_test): a SQLite file
// in a fresh directory, a manual clock for lease timing, and helpers that enrol, submit, lease
// and take the database back to an older schema.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/catalog.h"
#include "common/clock.h"
#include "common/matrix.h"
#include "coordinator/store/sqlite.h"
#include "coordinator/store/store.h"
#include "tests/unit/store_test_results.h"

namespace benchfleet::store {

class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("bf-store-" + std::to_string(::getpid()) + "-" +
                                                     ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    options_.path = (dir_ / "bf.db").string();
    options_.lease_ttl_ms = 10'000;
    options_.restart_grace_ms = 30'000;
    options_.max_attempts = 2;
    reopen();
  }
  void TearDown() override {
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  void reopen() {
    store_.reset();
    auto s = Store::open(options_, clock_);
    ASSERT_TRUE(s.ok()) << s.error().message;
    store_ = std::move(*s);
  }

  std::int64_t enroll(const std::string& name, const std::string& gpu_class = "a100",
                      std::vector<Mode> modes = {Mode::kEager, Mode::kDefault, Mode::kReduceOverhead}) {
    return enroll_agent(testing::one_slot_agent(name, gpu_class, std::move(modes)));
  }
  std::int64_t enroll_agent(const AgentDescriptor& descriptor) {
    auto id = store_->enroll_agent(descriptor, {"salt", "hash"});
    EXPECT_TRUE(id.ok()) << id.error().message;
    return id.ok() ? *id : 0;
  }

  std::int64_t submit(std::vector<std::string> models, std::vector<int> batches, std::vector<Mode> modes) {
    return submit_spec(testing::stable_a100_matrix("test", std::move(models), std::move(batches), std::move(modes)));
  }
  std::int64_t submit_spec(const MatrixSpec& spec) {
    auto catalog = Catalog::load_file(default_catalog_path());
    EXPECT_TRUE(catalog.ok());
    auto jobs = expand_matrix(spec, *catalog, {});
    EXPECT_TRUE(jobs.ok()) << jobs.error().message;
    auto run = store_->create_run(spec, *jobs);
    EXPECT_TRUE(run.ok()) << run.error().message;
    return run.ok() ? run->run_id : 0;
  }

  LeaseGrant lease(std::int64_t agent) {
    auto a = store_->lease(agent, "gpu0");
    EXPECT_TRUE(a.ok()) << a.error().message;
    EXPECT_TRUE(a->grant.has_value());
    return a->grant.value_or(LeaseGrant{});
  }

  static JobResult ok_result(double ms) { return testing::ok_result(ms); }
  static JobResult oom_result() { return testing::oom_result(); }

  std::filesystem::path dir_;
  ManualClock clock_;
  StoreOptions options_;
  std::unique_ptr<Store> store_;
};

// Takes the database back to schema 10: migration 011's tables (schedules, series, their points,
// regressions, alert deliveries) and the runs' schedule columns gone. Foreign keys off, so the
// drops cascade nowhere. The caller sets user_version.
inline void undo_migration_011(Database& db) {
  ASSERT_TRUE(db.exec("PRAGMA foreign_keys = OFF").ok());
  ASSERT_TRUE(db.exec("DROP TABLE alert_deliveries; DROP TABLE regressions; DROP TABLE series_points;"
                      " DROP TABLE series; DROP INDEX runs_schedule_due; ALTER TABLE runs DROP COLUMN schedule_due_at;"
                      " ALTER TABLE runs DROP COLUMN schedule_id; DROP TABLE schedules;")
                  .ok());
  ASSERT_TRUE(db.exec("PRAGMA foreign_keys = ON").ok());
}

// Takes the database back to schema 8 (011 undone first): the jobs table rebuilt as 001 and 006 made it (010's
// unique key with dtype and 009's dtype column gone, foreign keys off so nothing cascades),
// migration 009's result columns dropped (the index holding them first) and results_cells and
// jobs_cells as 004 and 008 left them.
inline void undo_migration_009(Database& db) {
  undo_migration_011(db);
  ASSERT_TRUE(db.exec("PRAGMA foreign_keys = OFF").ok());
  ASSERT_TRUE(db.exec(R"sql(
    DROP INDEX IF EXISTS results_cells;
    CREATE TABLE jobs_v8 (
      id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
      model TEXT NOT NULL, batch INTEGER NOT NULL CHECK (batch > 0), mode TEXT NOT NULL, torch_build TEXT NOT NULL,
      gpu_class TEXT NOT NULL, runtime TEXT NOT NULL, repetition INTEGER NOT NULL, group_key TEXT NOT NULL,
      owner_agent_id INTEGER REFERENCES agents(id), owner_slot TEXT,
      status TEXT NOT NULL CHECK (status IN ('queued','leased','running','done','failed','cancelled')),
      priority INTEGER NOT NULL, attempt INTEGER NOT NULL DEFAULT 0, max_attempts INTEGER NOT NULL, lease_id TEXT,
      lease_agent_id INTEGER REFERENCES agents(id), lease_slot TEXT, lease_expires_at INTEGER, started_at INTEGER,
      finished_at INTEGER, updated_at INTEGER NOT NULL, lease_acked INTEGER NOT NULL DEFAULT 1, lease_request_id TEXT,
      UNIQUE (run_id, model, batch, mode, torch_build, gpu_class, runtime, repetition));
    INSERT INTO jobs_v8 SELECT id, run_id, model, batch, mode, torch_build, gpu_class, runtime, repetition, group_key,
      owner_agent_id, owner_slot, status, priority, attempt, max_attempts, lease_id, lease_agent_id, lease_slot,
      lease_expires_at, started_at, finished_at, updated_at, lease_acked, lease_request_id FROM jobs;
    DROP TABLE jobs;
    ALTER TABLE jobs_v8 RENAME TO jobs;
    CREATE INDEX jobs_queue ON jobs (status, gpu_class, priority DESC, id);
    CREATE INDEX jobs_run_status ON jobs (run_id, status);
    CREATE INDEX jobs_leases ON jobs (lease_expires_at) WHERE lease_id IS NOT NULL;
    CREATE INDEX jobs_lease_holder ON jobs (lease_agent_id, lease_slot) WHERE lease_id IS NOT NULL;
    CREATE INDEX jobs_group ON jobs (group_key);
    CREATE INDEX jobs_queued_owned ON jobs (owner_agent_id, owner_slot, priority DESC, id) WHERE status = 'queued';
    CREATE INDEX jobs_run ON jobs (run_id, id);
    CREATE INDEX jobs_queued_cells ON jobs (gpu_class, torch_build, runtime, mode, priority DESC, id)
      WHERE status = 'queued';
    CREATE INDEX jobs_queued_unowned_cells ON jobs (gpu_class, torch_build, runtime, mode, priority DESC, id)
      WHERE status = 'queued' AND owner_agent_id IS NULL;
    CREATE INDEX jobs_cells ON jobs (run_id, model, mode, torch_build, gpu_class, runtime, batch);
    ALTER TABLE results DROP COLUMN accuracy; ALTER TABLE results DROP COLUMN accuracy_error;
    ALTER TABLE results DROP COLUMN accuracy_tolerance; ALTER TABLE results DROP COLUMN compile_ms;
    ALTER TABLE results DROP COLUMN compile_cache; ALTER TABLE results DROP COLUMN peak_memory_bytes;
    ALTER TABLE results DROP COLUMN recompiles; ALTER TABLE results DROP COLUMN flags;
    CREATE INDEX results_cells ON results (job_id, attempt, status, mean_ms, median_ms, p90_ms, p99_ms, min_ms, max_ms,
      stddev_ms, cv, ci_low_ms, ci_high_ms, iterations, oom_phase, oom_bytes, signal, error, torch_version);
    PRAGMA user_version = 8;)sql")
                  .ok());
  ASSERT_TRUE(db.exec("PRAGMA foreign_keys = ON").ok());
}

// Tests that take a database back to an older schema undo the later migrations they do not
// exercise, so reopening re-applies them cleanly: 009 and 010 (dtype, accuracy and flags), 006
// (lease hand-over columns), when present, 007 (the jobs_queued_cells index) and 008 (the
// lease's and OOM pruning's cell indexes). The caller sets user_version.
inline void undo_later_migrations(Database& db) {
  undo_migration_009(db);
  ASSERT_TRUE(db.exec("DROP INDEX IF EXISTS jobs_queued_cells; DROP INDEX IF EXISTS jobs_queued_unowned_cells;"
                      " DROP INDEX IF EXISTS jobs_cells;")
                  .ok());
  auto q = db.prepare("SELECT COUNT(*) FROM pragma_table_info('jobs') WHERE name = 'lease_acked'");
  ASSERT_TRUE(q.ok());
  ASSERT_TRUE((*q)->step().ok());
  const bool present = (*q)->int64(0) > 0;
  (*q)->reset();
  if (present) {
    ASSERT_TRUE(
        db.exec("ALTER TABLE jobs DROP COLUMN lease_acked; ALTER TABLE jobs DROP COLUMN lease_request_id;").ok());
  }
}

}  // namespace benchfleet::store
