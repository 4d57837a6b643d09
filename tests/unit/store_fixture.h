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
    auto id = store_->agents().enroll_agent(descriptor, {"salt", "hash"}, store::EnrolmentClaim::anyone());
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
    auto run = store_->runs().create_run(spec, *jobs);
    EXPECT_TRUE(run.ok()) << run.error().message;
    return run.ok() ? run->run_id : 0;
  }

  LeaseGrant lease(std::int64_t agent) {
    auto a = store_->leases().lease(agent, "gpu0");
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

}  // namespace benchfleet::store
