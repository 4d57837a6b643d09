// Group commit (coordinator/store/group_commit.h) on a real SQLite file: operations share
// transactions under load, none returns before its commit, a failing operation undoes only its
// own writes, and a failed commit fails every operation of its group. What is committed is
// checked through a second connection, as another process would see it.
#include "coordinator/store/group_commit.h"
#include "coordinator/store/store_core.h"
#include "tests/support/temp_dir.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace benchfleet::store {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

// A second connection: sees only what was committed.
class Observer {
 public:
  explicit Observer(const std::string& path) {
    sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr);
    sqlite3_busy_timeout(db_, 5000);
  }
  ~Observer() { sqlite3_close(db_); }
  Observer(const Observer&) = delete;
  Observer& operator=(const Observer&) = delete;

  std::int64_t count(const std::string& where) const {
    const std::string sql = "SELECT COUNT(*) FROM " + where;
    sqlite3_stmt* s = nullptr;
    std::int64_t n = -1;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
      n = sqlite3_column_int64(s, 0);
    }
    sqlite3_finalize(s);
    return n;
  }

 private:
  sqlite3* db_ = nullptr;
};

class GroupCommitTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (dir_ / "g.db").string();
    auto db = Database::open(path_);
    ASSERT_TRUE(db.ok()) << db.error().message;
    db_ = std::move(*db);
    // child.parent is checked at COMMIT (deferred), so a violation makes the commit itself fail.
    ASSERT_TRUE(db_->exec("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER NOT NULL);"
                          "CREATE TABLE child (id INTEGER PRIMARY KEY,"
                          " parent INTEGER REFERENCES t(id) DEFERRABLE INITIALLY DEFERRED);")
                    .ok());
    // No age limit: the tests that want two operations in one transaction hold it for 300 ms.
    make_group(GroupCommitOptions{256, std::chrono::seconds(60)});
  }
  void make_group(GroupCommitOptions options) {
    group_.reset();
    group_ = std::make_unique<GroupCommit>(
        *db_, options, [this](bool committed) { (committed ? commits_seen_ : failures_seen_).fetch_add(1); });
  }
  void TearDown() override {
    group_.reset();
    db_.reset();
  }

  Status insert(std::int64_t id) {
    auto s = db_->prepare("INSERT INTO t (id, v) VALUES (?, 1)");
    if (!s.ok()) return s.error();
    return (*s)->bind(1, id).run();
  }

  testing::TempDir tmp_{"bf-group"};
  const fs::path dir_ = tmp_.path();
  std::string path_;
  std::unique_ptr<Database> db_;
  std::unique_ptr<GroupCommit> group_;
  std::atomic<int> commits_seen_{0}, failures_seen_{0};
};

TEST_F(GroupCommitTest, AnOperationAloneIsCommittedWhenItReturns) {
  Observer other(path_);
  Status s = group_->run([&] { return insert(1); });
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(other.count("t WHERE id = 1"), 1);
  const auto stats = group_->stats();
  EXPECT_EQ(stats.operations, 1);
  EXPECT_EQ(stats.commits, 1);
  EXPECT_EQ(commits_seen_.load(), 1);
}

TEST_F(GroupCommitTest, ConcurrentOperationsShareCommitsAndEachIsCommittedWhenItReturns) {
  constexpr int kThreads = 8, kPerThread = 50;
  std::atomic<int> not_visible{0}, failed{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      Observer other(path_);
      for (int i = 0; i < kPerThread; ++i) {
        const std::int64_t id = t * 1000 + i;
        Status s = group_->run([&] {
          std::this_thread::sleep_for(200us);  // long enough for the others to queue up
          return insert(id);
        });
        if (!s.ok()) ++failed;
        if (other.count("t WHERE id = " + std::to_string(id)) != 1) ++not_visible;
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(not_visible.load(), 0) << "an operation returned before its transaction was committed";
  Observer other(path_);
  EXPECT_EQ(other.count("t"), kThreads * kPerThread);
  const auto stats = group_->stats();
  EXPECT_EQ(stats.operations, kThreads * kPerThread);
  EXPECT_LT(stats.commits, stats.operations / 2) << "operations waiting together should share commits";
  EXPECT_EQ(stats.failed_commits, 0);
}

// `first` runs first and holds the lock until `second` has started waiting for it, so both run
// in one transaction; returns their outcomes.
std::pair<Status, Status> in_one_group(GroupCommit& group, std::function<Status()> first,
                                       std::function<Status()> second) {
  std::promise<void> inside;
  auto a = std::async(std::launch::async, [&] {
    return group.run([&] {
      Status s = first();
      inside.set_value();
      std::this_thread::sleep_for(300ms);  // the second operation queues up meanwhile
      return s;
    });
  });
  inside.get_future().wait();
  auto b = std::async(std::launch::async, [&] { return group.run([&] { return second(); }); });
  return {a.get(), b.get()};
}

TEST_F(GroupCommitTest, AFailingOperationUndoesOnlyItsOwnWrites) {
  auto [a, b] = in_one_group(
      *group_,
      [&]() -> Status {
        if (Status s = insert(1); !s.ok()) return s;
        return Error::invalid("test", "the first operation fails after writing");
      },
      [&] { return insert(2); });
  EXPECT_FALSE(a.ok());
  EXPECT_TRUE(b.ok()) << b.error().message;
  Observer other(path_);
  EXPECT_EQ(other.count("t WHERE id = 1"), 0);
  EXPECT_EQ(other.count("t WHERE id = 2"), 1);
  const auto stats = group_->stats();
  EXPECT_EQ(stats.operations, 2);
  EXPECT_EQ(stats.commits, 1) << "the two operations should have shared one transaction";
}

TEST_F(GroupCommitTest, AFailedCommitFailsEveryOperationOfItsGroupAndKeepsNothingOfIt) {
  ASSERT_TRUE(group_->run([&] { return insert(1); }).ok());
  auto [a, b] = in_one_group(
      *group_, [&] { return insert(2); },
      [&]() -> Status {
        auto s = db_->prepare("INSERT INTO child (id, parent) VALUES (1, 999)");  // no t 999: COMMIT fails
        if (!s.ok()) return s.error();
        return (*s)->run();
      });
  ASSERT_FALSE(a.ok()) << "an operation was acknowledged though its transaction failed to commit";
  ASSERT_FALSE(b.ok());
  EXPECT_NE(a.error().message.find("could not commit"), std::string::npos) << a.error().message;
  Observer other(path_);
  EXPECT_EQ(other.count("t"), 1);
  EXPECT_EQ(other.count("child"), 0);
  EXPECT_EQ(failures_seen_.load(), 1);
  EXPECT_EQ(group_->stats().failed_commits, 1);

  // The next operation starts a new transaction and is stored.
  ASSERT_TRUE(group_->run([&] { return insert(3); }).ok());
  EXPECT_EQ(other.count("t WHERE id = 3"), 1);
}

TEST_F(GroupCommitTest, ATransactionPastItsAgeCommitsThoughOthersWait) {
  make_group(GroupCommitOptions{256, std::chrono::milliseconds(20)});
  auto [a, b] = in_one_group(
      *group_, [&] { return insert(1); }, [&] { return insert(2); });
  EXPECT_TRUE(a.ok());
  EXPECT_TRUE(b.ok());
  EXPECT_EQ(group_->stats().commits, 2) << "the first transaction was 300 ms old when its operation ended";
}

TEST_F(GroupCommitTest, ATransactionOfMaxOpsCommitsThoughOthersWait) {
  make_group(GroupCommitOptions{1, std::chrono::seconds(60)});
  auto [a, b] = in_one_group(
      *group_, [&] { return insert(1); }, [&] { return insert(2); });
  EXPECT_TRUE(a.ok());
  EXPECT_TRUE(b.ok());
  EXPECT_EQ(group_->stats().commits, 2);
}

TEST_F(GroupCommitTest, AnExceptionUndoesTheOperationAndReleasesTheLock) {
  EXPECT_THROW(group_->run([&]() -> Status {
    (void)insert(1);
    throw std::runtime_error("boom");
  }),
               std::runtime_error);
  auto next = std::async(std::launch::async, [&] { return group_->run([&] { return insert(2); }); });
  ASSERT_EQ(next.wait_for(10s), std::future_status::ready) << "the lock was not released";
  EXPECT_TRUE(next.get().ok());
  Observer other(path_);
  EXPECT_EQ(other.count("t WHERE id = 1"), 0);
  EXPECT_EQ(other.count("t WHERE id = 2"), 1);
}

// What StoreCore::assert_held checks: the lock is held by the thread running an operation, by no
// other thread meanwhile, and by nobody once it returned (an exception included).
TEST_F(GroupCommitTest, OnlyTheThreadRunningAnOperationHoldsTheLock) {
  EXPECT_FALSE(group_->held_by_this_thread());
  std::promise<void> inside, leave;
  auto op = std::async(std::launch::async, [&] {
    return group_->run([&]() -> Result<bool> {
      const bool held = group_->held_by_this_thread();
      inside.set_value();
      leave.get_future().wait();
      return held;
    });
  });
  inside.get_future().wait();
  EXPECT_FALSE(group_->held_by_this_thread()) << "another thread's operation is not this thread's";
  leave.set_value();
  auto held = op.get();
  ASSERT_TRUE(held.ok());
  EXPECT_TRUE(*held);
  EXPECT_FALSE(group_->held_by_this_thread());
  EXPECT_THROW(group_->run([]() -> Status { throw std::runtime_error("boom"); }), std::runtime_error);
  EXPECT_FALSE(group_->held_by_this_thread());
}

// A step a narrow store offers to the others' operations asserts that it runs inside one: called
// outside, it stops the process rather than write outside a transaction.
TEST(StoreCoreDeathTest, AStepCalledOutsideAnOperationAborts) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  testing::TempDir tmp{"bf-core"};
  auto db = Database::open((tmp.path() / "c.db").string());
  ASSERT_TRUE(db.ok()) << db.error().message;
  SystemClock clock;
  StoreCore core(StoreOptions{}, clock, std::move(*db));
  EXPECT_TRUE(core.run([&]() BF_REQUIRES(core.lock()) -> Status {
                    core.assert_held();
                    return Status::Ok();
                  })
                  .ok());
  EXPECT_DEATH(core.assert_held(), "outside an operation");
}

// The agent lane goes first: with the lock held and eight other operations waiting for it, an
// operation run inside FirstInLine gets it next, not after them.
TEST_F(GroupCommitTest, AnOperationFirstInLineGoesAheadOfTheWaitingOthers) {
  std::atomic<bool> release{false};
  std::atomic<int> order{0};
  std::atomic<int> agent_position{-1};
  std::vector<int> other_positions(8, -1);
  auto holder = std::async(std::launch::async, [&] {
    return group_->run([&]() -> Status {
      while (!release.load()) std::this_thread::sleep_for(1ms);
      return insert(1);
    });
  });
  std::this_thread::sleep_for(50ms);  // the holder has the lock
  std::vector<std::future<Status>> others;
  for (int i = 0; i < 8; ++i) {
    others.push_back(std::async(std::launch::async, [&, i] {
      return group_->run([&]() -> Status {
        other_positions[static_cast<std::size_t>(i)] = order.fetch_add(1);
        return insert(100 + i);
      });
    }));
  }
  std::this_thread::sleep_for(50ms);  // they wait for the lock
  auto agent = std::async(std::launch::async, [&] {
    const GroupCommit::FirstInLine first;
    return group_->run([&]() -> Status {
      agent_position = order.fetch_add(1);
      return insert(2);
    });
  });
  std::this_thread::sleep_for(20ms);  // the agent's operation waits too
  release = true;
  ASSERT_TRUE(holder.get().ok());
  ASSERT_TRUE(agent.get().ok());
  for (auto& o : others) ASSERT_TRUE(o.get().ok());
  // The others had already asked for the lock when the agent came: at most one of them can have
  // taken it in the moment the holder let it go.
  EXPECT_LE(agent_position.load(), 1) << "the agent's operation waited behind the others";
}

TEST_F(GroupCommitTest, ValuesComeBackWithTheirType) {
  Result<std::int64_t> n = group_->run([&]() -> Result<std::int64_t> {
    if (Status s = insert(7); !s.ok()) return s.error();
    return db_->last_insert_rowid();
  });
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 7);
  Result<int> refused = group_->run([&]() -> Result<int> { return Error::not_found("nothing here"); });
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace benchfleet::store
