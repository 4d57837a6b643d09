// Group commit for the store: its operations run one at a time on one SQLite connection, inside
// a write transaction they share. The transaction is committed (one WAL fsync, synchronous=FULL)
// when no other operation is waiting to join it, or once it holds `max_ops` operations or is
// `max_age` old. So under load one fsync covers many requests, and alone an operation commits at
// once. Each operation runs in its own savepoint: one that fails undoes only its own writes.
// An operation that succeeded returns only after the transaction holding it is durable, so its
// caller may acknowledge what it wrote; if that commit fails, every operation in the group gets
// the error (and nothing of the group is stored).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <type_traits>

#include "common/result.h"
#include "common/thread_safety.h"
#include "coordinator/store/sqlite.h"

namespace benchfleet::store {

struct GroupCommitOptions {
  int max_ops = 256;                          // operations per transaction, at most
  std::chrono::microseconds max_age{20'000};  // a transaction older than this commits
};

struct GroupCommitStats {
  std::int64_t operations = 0;      // operations run (each in a savepoint)
  std::int64_t commits = 0;         // transactions committed (one fsync each when they wrote)
  std::int64_t failed_commits = 0;  // transactions whose COMMIT failed (rolled back)
};

// The store's lock, as a capability (common/thread_safety.h): what is used only inside an
// operation is GUARDED_BY it, and each operation's body REQUIRES it.
class BF_CAPABILITY("the store's lock") GroupCommit {
 public:
  // `on_decided(committed)` runs with the lock held after each transaction is committed
  // (true) or rolled back (false), before its operations return; it must be quick and must not
  // call run(). `db` must outlive this object and be used only through run().
  GroupCommit(Database& db, GroupCommitOptions options, std::function<void(bool committed)> on_decided);
  GroupCommit(const GroupCommit&) = delete;
  GroupCommit& operator=(const GroupCommit&) = delete;
  // REQUIRES: no run() in progress. Commits an open transaction.
  ~GroupCommit();

  // Runs `op` (returning a Result<T> or a Status) under the lock, in the shared transaction.
  // Thread-safe. Returns op's error as is, or its value once it is durable, or the commit's
  // error. Reads see the writes of operations before them, committed or not; they wait for the
  // same commit, so nothing read is answered before it is durable.
  // Not inside another operation (the lock is not recursive: that would deadlock). The analysis
  // does not follow the lock into op; op's body says it REQUIRES it.
  template <class F>
  std::invoke_result_t<F&> run(F&& op) BF_EXCLUDES(this) BF_NO_THREAD_SAFETY_ANALYSIS;

  GroupCommitStats stats() const;
  // Whether the calling thread is inside an operation (holds the lock).
  bool held_by_this_thread() const { return owner_.load(std::memory_order_relaxed) == std::this_thread::get_id(); }

  // Operations run on a thread inside a FirstInLine scope (the agent lane: leases, heartbeats,
  // progress, results) go ahead of the others: the others contend for the lock one at a time,
  // and that one waits while any FirstInLine operation is waiting (at most `kYieldAtMost` a time,
  // so reads are slowed under a flood of agent requests but never starved). So a heartbeat waits
  // for the operation holding the lock and at most one other, not for every read queued.
  class FirstInLine {
   public:
    FirstInLine() : was_(first_in_line_) { first_in_line_ = true; }
    ~FirstInLine() { first_in_line_ = was_; }
    FirstInLine(const FirstInLine&) = delete;
    FirstInLine& operator=(const FirstInLine&) = delete;

   private:
    bool was_;
  };
  static constexpr std::chrono::milliseconds kYieldAtMost{50};

  // Before each COMMIT the database's files are checked (Database::check_files_unchanged): when
  // one was replaced or removed, the transaction is rolled back, its operations and every later
  // one fail with that error, and `listener` is told once (the coordinator stops). Set before
  // the first run().
  void on_files_lost(std::function<void(const Error&)> listener) { files_lost_listener_ = std::move(listener); }

  // For a caller about to run another of a series of long operations (a big submit's chunks):
  // lets the operations waiting for the lock, and those that follow them at once, go first, so
  // a request waits for one operation of the series and not for all of it (the lock is not fair:
  // a thread that releases it and asks again at once would usually get it back). Returns once
  // nobody has asked for the lock for a millisecond, or after `at_most`.
  // REQUIRES: not called inside run().
  void yield_to_waiting(std::chrono::milliseconds at_most = std::chrono::milliseconds(200)) BF_EXCLUDES(this);

 private:
  struct Member {
    std::uint64_t group = 0;  // the transaction this operation ran in
  };
  // Takes the lock, opens the transaction if none is open and a savepoint for the operation.
  // On failure the lock is released again.
  Status enter(Member& m);
  // Releases (kept) or rolls back the savepoint, commits when it is time, releases the lock.
  void leave(bool kept);
  // Waits until m's transaction was decided; its commit error, if any.
  Status wait_durable(const Member& m);
  // With the lock held.
  void commit_locked();

  Database& db_;
  const GroupCommitOptions options_;
  const std::function<void(bool)> on_decided_;

  static thread_local bool first_in_line_;
  std::mutex mu_;                       // the store's lock: one operation at a time
  std::atomic<std::thread::id> owner_;  // the thread holding mu_ in an operation; none otherwise
  std::atomic<int> arriving_{0};        // threads between wanting the lock and holding it
  std::atomic<int> first_arriving_{0};  // of them, those in a FirstInLine scope
  std::mutex others_gate_;              // held by the one other operation contending for mu_
  bool open_ = false;                   // a transaction is open (under mu_)
  std::chrono::steady_clock::time_point opened_at_;
  int ops_in_group_ = 0;
  std::uint64_t group_ = 1;          // id of the open (or next) transaction (under mu_)
  std::optional<Error> files_lost_;  // sticky, under mu_: the files changed under the connection
  std::function<void(const Error&)> files_lost_listener_;

  mutable std::mutex decided_mu_;
  std::condition_variable decided_cv_;
  std::uint64_t decided_ = 0;              // every transaction up to this id is decided
  std::map<std::uint64_t, Error> failed_;  // recent transactions whose commit failed
  GroupCommitStats stats_;                 // under decided_mu_
};

template <class F>
std::invoke_result_t<F&> GroupCommit::run(F&& op) BF_NO_THREAD_SAFETY_ANALYSIS {
  using Out = std::invoke_result_t<F&>;
  Member m;
  if (Status entered = enter(m); !entered.ok()) return Out(entered.error());
  std::optional<Out> out;
  try {
    out.emplace(op());
  } catch (...) {
    leave(/*kept=*/false);
    throw;
  }
  const bool kept = out->ok();
  leave(kept);
  if (!kept) return std::move(*out);
  if (Status durable = wait_durable(m); !durable.ok()) return Out(durable.error());
  return std::move(*out);
}

}  // namespace benchfleet::store
