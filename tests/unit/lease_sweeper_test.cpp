// The lease expiry sweeper against a real store: an expired lease is requeued without anybody
// asking, and stop() ends the loop.
#include "coordinator/services/lease_sweeper.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>

#include "common/catalog.h"
#include "common/matrix.h"
#include "coordinator/store/store.h"
#include "tests/support/temp_dir.h"
#include "tests/unit/store_test_results.h"

namespace benchfleet {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class LeaseSweeperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store::StoreOptions options;
    options.path = (dir_ / "bf.db").string();
    options.lease_ttl_ms = 10'000;
    options.max_attempts = 3;
    auto s = store::Store::open(options, clock_);
    ASSERT_TRUE(s.ok()) << s.error().message;
    store_ = std::move(*s);
  }
  void TearDown() override { store_.reset(); }

  // A run of one job, leased by a fresh agent; returns the run id.
  std::int64_t leased_job() {
    auto agent = store_->agents().enroll_agent(store::testing::one_slot_agent("a", "a100", {Mode::kEager}),
                                               {"salt", "hash"}, store::EnrolmentClaim::anyone());
    EXPECT_TRUE(agent.ok());
    const MatrixSpec spec = store::testing::stable_a100_matrix("sweep", {"torchvision/resnet18"}, {1}, {Mode::kEager});
    auto catalog = Catalog::load_file(default_catalog_path());
    EXPECT_TRUE(catalog.ok());
    auto jobs = expand_matrix(spec, *catalog, {});
    EXPECT_TRUE(jobs.ok());
    auto run = store_->runs().create_run(spec, *jobs);
    EXPECT_TRUE(run.ok());
    auto lease = store_->leases().lease(*agent, "gpu0");
    EXPECT_TRUE(lease.ok() && lease->grant);
    return run->run_id;
  }

  std::int64_t queued(std::int64_t run) {
    auto info = store_->runs().get_run(run);
    EXPECT_TRUE(info.ok());
    return info.ok() ? info->jobs_by_status[JobStatus::kQueued] : -1;
  }

  testing::TempDir tmp_{"bf-sweeper"};
  const fs::path dir_ = tmp_.path();
  ManualClock clock_;
  std::unique_ptr<store::Store> store_;
};

TEST_F(LeaseSweeperTest, RequeuesAnExpiredLeaseOnItsOwnAndStops) {
  const auto run = leased_job();
  ASSERT_EQ(queued(run), 0);

  boost::asio::io_context ioc;
  boost::asio::thread_pool blocking(1);
  services::LeaseSweeper sweeper(ioc, blocking.get_executor(), store_->leases(), 20ms);
  sweeper.start();
  std::thread io([&] { ioc.run(); });

  // Live leases are left alone.
  const auto deadline = std::chrono::steady_clock::now() + 10s;
  while (sweeper.sweeps() < 3 && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(5ms);
  EXPECT_GE(sweeper.sweeps(), 3);
  EXPECT_EQ(queued(run), 0);
  EXPECT_EQ(sweeper.expired(), 0);

  clock_.advance_ms(10'001);  // past the lease's TTL
  // The sweep's count is taken after its transaction returns: wait for both.
  while ((queued(run) == 0 || sweeper.expired() == 0) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(5ms);
  }
  EXPECT_EQ(queued(run), 1) << "the expired lease's job went back to the queue";
  EXPECT_EQ(sweeper.expired(), 1);

  sweeper.stop();
  io.join();  // run() returns only when the loop has ended
  blocking.join();
}

TEST(LeaseSweeperPeriod, IsAQuarterOfTheTtlWithinBounds) {
  EXPECT_EQ(services::LeaseSweeper::period_for(60), std::chrono::milliseconds(5000));
  EXPECT_EQ(services::LeaseSweeper::period_for(8), std::chrono::milliseconds(2000));
  EXPECT_EQ(services::LeaseSweeper::period_for(0), std::chrono::milliseconds(200));
}

}  // namespace
}  // namespace benchfleet
