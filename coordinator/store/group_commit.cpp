#include "coordinator/store/group_commit.h"

#include <thread>
#include <utility>

namespace benchfleet::store {
namespace {

constexpr std::uint64_t kFailuresKept = 1024;  // a waiter is never this many transactions late

}  // namespace

GroupCommit::GroupCommit(Database& db, GroupCommitOptions options, std::function<void(bool)> on_decided)
    : db_(db), options_(options), on_decided_(std::move(on_decided)) {}

GroupCommit::~GroupCommit() {
  std::lock_guard lock(mu_);
  if (open_) commit_locked();
}

thread_local bool GroupCommit::first_in_line_ = false;

Status GroupCommit::enter(Member& m) {
  arriving_.fetch_add(1, std::memory_order_relaxed);
  if (first_in_line_) {
    first_arriving_.fetch_add(1, std::memory_order_relaxed);
    mu_.lock();
    first_arriving_.fetch_sub(1, std::memory_order_relaxed);
  } else {
    // One other operation at a time contends for the lock, and it lets the agent lane's waiting
    // operations take it first (bounded: reads are slowed, never starved). So an agent's
    // operation waits for at most the one holding the lock and the one at the gate, not for
    // every read queued.
    std::unique_lock gate(others_gate_);
    const auto until = std::chrono::steady_clock::now() + kYieldAtMost;
    while (first_arriving_.load(std::memory_order_relaxed) > 0 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    mu_.lock();
  }
  arriving_.fetch_sub(1, std::memory_order_relaxed);
  if (files_lost_) {
    Error lost = *files_lost_;
    mu_.unlock();
    return lost;
  }
  if (!open_) {
    // IMMEDIATE: the write lock up front, so another process's writer makes this wait
    // (busy timeout) instead of failing half-way.
    if (Status begun = db_.exec_cached("BEGIN IMMEDIATE"); !begun.ok()) {
      mu_.unlock();
      return begun;
    }
    open_ = true;
    opened_at_ = std::chrono::steady_clock::now();
    ops_in_group_ = 0;
  }
  if (Status saved = db_.exec_cached("SAVEPOINT operation"); !saved.ok()) {
    commit_locked();  // what the group did so far is whole; this operation did nothing
    mu_.unlock();
    return saved;
  }
  m.group = group_;
  owner_.store(std::this_thread::get_id(), std::memory_order_relaxed);
  return Status::Ok();
}

void GroupCommit::leave(bool kept) {
  if (kept) kept = db_.exec_cached("RELEASE operation").ok();
  if (!kept) {
    (void)db_.exec_cached("ROLLBACK TO operation");
    (void)db_.exec_cached("RELEASE operation");
  }
  ++ops_in_group_;
  {
    std::lock_guard lock(decided_mu_);
    ++stats_.operations;
  }
  const bool nobody_waiting = arriving_.load(std::memory_order_relaxed) == 0;
  if (nobody_waiting || ops_in_group_ >= options_.max_ops ||
      std::chrono::steady_clock::now() - opened_at_ >= options_.max_age) {
    commit_locked();
  }
  owner_.store(std::thread::id(), std::memory_order_relaxed);
  mu_.unlock();
}

void GroupCommit::commit_locked() {
  Status committed = files_lost_ ? Status(*files_lost_) : db_.check_files_unchanged();
  const bool newly_lost = !files_lost_ && !committed.ok();
  if (newly_lost) files_lost_ = committed.error();
  if (committed.ok()) committed = db_.exec_cached("COMMIT");
  // A failed COMMIT may leave the transaction open (e.g. SQLITE_FULL): nothing of it is kept.
  if (!committed.ok()) (void)db_.exec("ROLLBACK");
  open_ = false;
  const std::uint64_t group = group_++;
  {
    std::lock_guard lock(decided_mu_);
    decided_ = group;
    if (committed.ok()) {
      ++stats_.commits;
    } else {
      ++stats_.failed_commits;
      failed_.emplace(group,
                      Error{committed.error().code, "the store could not commit: " + committed.error().message, {}});
      while (!failed_.empty() && failed_.begin()->first + kFailuresKept < group) failed_.erase(failed_.begin());
    }
  }
  if (on_decided_) on_decided_(committed.ok());
  decided_cv_.notify_all();
  if (newly_lost && files_lost_listener_) files_lost_listener_(*files_lost_);
}

Status GroupCommit::wait_durable(const Member& m) {
  std::unique_lock lock(decided_mu_);
  decided_cv_.wait(lock, [&] { return decided_ >= m.group; });
  if (auto it = failed_.find(m.group); it != failed_.end()) return it->second;
  return Status::Ok();
}

void GroupCommit::yield_to_waiting(std::chrono::milliseconds at_most) {
  // Until nobody has asked for the lock for kQuiet: a request's next operation (a heartbeat makes
  // three) follows its last within that, so it goes before the caller's next one too.
  constexpr auto kQuiet = std::chrono::milliseconds(1);
  const auto start = std::chrono::steady_clock::now();
  auto quiet_since = start;
  for (auto now = start; now - start < at_most; now = std::chrono::steady_clock::now()) {
    if (arriving_.load(std::memory_order_relaxed) > 0) {
      quiet_since = now;
    } else if (now - quiet_since >= kQuiet) {
      return;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

GroupCommitStats GroupCommit::stats() const {
  std::lock_guard lock(decided_mu_);
  return stats_;
}

}  // namespace benchfleet::store
