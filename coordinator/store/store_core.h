// What the narrow stores (RunStore, AgentStore, LeaseStore, ResultStore, ScheduleStore,
// SeriesStore, RegressionStore, ModelStore) share: the one database connection and its group
// commit, the caches read on the lease path, and the steps of a job's life that more than one of
// them takes. Internal to coordinator/store/: callers hold a Store
// (store.h) and its narrow stores.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>

#include "common/agent_protocol.h"
#include "common/clock.h"
#include "common/result.h"
#include "common/thread_safety.h"
#include "common/types.h"
#include "coordinator/store/agent_types.h"
#include "coordinator/store/group_commit.h"
#include "coordinator/store/sqlite.h"

namespace benchfleet::store {

struct StoreOptions {
  std::string path;  // SQLite file; created if missing
  int busy_timeout_ms = 5000;
  int max_attempts = 3;                   // leases a job gets before it fails
  TimestampMs lease_ttl_ms = 60'000;      // a lease lives this long unless renewed
  TimestampMs restart_grace_ms = 60'000;  // live leases get this long after open()
  GroupCommitOptions group_commit;
};

// The store's state is used only inside an operation of its group commit (run()): the compiler
// checks it (common/thread_safety.h) where clang builds it. The credentials are also read outside
// operations, on every agent request, under their own mutex.
class StoreCore {
 public:
  StoreCore(StoreOptions options, const Clock& clock, std::unique_ptr<Database> db);
  StoreCore(const StoreCore&) = delete;
  StoreCore& operator=(const StoreCore&) = delete;

  const StoreOptions& options() const { return options_; }
  const Clock& clock() const { return clock_; }

  // Runs `op` as one operation of the group commit (GroupCommit::run). Its body names the lock:
  // `core_.run([&]() BF_REQUIRES(core_.lock()) { ... })`.
  template <class F>
  std::invoke_result_t<F&> run(F&& op) BF_EXCLUDES(group_) {
    return group_.run(std::forward<F>(op));
  }
  // Between the chunks of a long series of operations (GroupCommit::yield_to_waiting).
  void yield_to_waiting() BF_EXCLUDES(group_) { group_.yield_to_waiting(); }
  GroupCommit& lock() BF_RETURN_CAPABILITY(group_) { return group_; }
  // For a step one narrow store offers to another's operations: the analysis cannot see that two
  // stores share this lock, so the step asserts it at its start. A thread outside an operation
  // of this store is a bug: it aborts here.
  void assert_held() BF_ASSERT_CAPABILITY(group_);
  GroupCommitStats stats() const { return group_.stats(); }
  void on_files_lost(std::function<void(const Error&)> listener) { group_.on_files_lost(std::move(listener)); }
  // Set before serving; called (with the lock held) after a commit when work appeared.
  void on_work_available(std::function<void()> listener) { work_listener_ = std::move(listener); }

  Database& db() BF_REQUIRES(group_) { return *db_; }
  // What an operation saw appear: waiting polls are told once its group commits.
  void work_appeared() BF_REQUIRES(group_) { work_appeared_ = true; }

  // The series ids by key, cached (a series never changes its id).
  std::unordered_map<std::string, std::int64_t>& series_ids() BF_REQUIRES(group_) { return series_ids_; }
  // Runs whose jobs are still being stored (never finished meanwhile).
  std::set<std::int64_t>& submitting_runs() BF_REQUIRES(group_) { return submitting_runs_; }

  // An agent's credentials, cached; read on every agent request, inside an operation or not.
  std::optional<AgentCredentials> cached_credentials(std::int64_t agent_id) BF_EXCLUDES(credentials_mu_);
  void cache_credentials(std::int64_t agent_id, const AgentCredentials& credentials) BF_EXCLUDES(credentials_mu_);
  // What is cached of an agent that enrols again (its descriptor, its credentials).
  void forget_agent(std::int64_t agent_id) BF_REQUIRES(group_) BF_EXCLUDES(credentials_mu_);

  // The run's matrix (cached: it never changes once stored).
  Result<MatrixSpec> run_spec_locked(std::int64_t run_id) BF_REQUIRES(group_);
  // The agent's row with its (cached) descriptor. kNotFound.
  Result<AgentInfo> agent_info_locked(std::int64_t agent_id) BF_REQUIRES(group_);
  // Marks the queued jobs of `job_id`'s cell (its run's jobs of the same model, mode, build, GPU
  // class, runtime and dtype) that an OOM at a smaller batch implies; returns how many. Pruning
  // relates only jobs of one cell, and runs whenever a cell changes (an OOM stored, a job
  // requeued), so the rest of the run needs no look.
  Result<std::int64_t> mark_implied_oom(std::int64_t run_id, std::int64_t job_id) BF_REQUIRES(group_);
  // Closes the attempt's row with `outcome` ("result", "expired", "released", ...).
  Status end_attempt(std::int64_t job_id, int attempt, std::string_view outcome) BF_REQUIRES(group_);
  // Sets the run's finished_at once none of its jobs is queued, leased or running.
  Status update_run_finished(std::int64_t run_id) BF_REQUIRES(group_);
  // Ends a lease that will not produce a result: requeue, or fail after max attempts; then
  // applies OOM pruning and the run's completion. Notes work_appeared.
  Status requeue_or_fail(std::int64_t job_id, int attempt, int max_attempts, std::int64_t run_id,
                         std::string_view outcome) BF_REQUIRES(group_);

  // A job's lease as a holder's request finds it, judged by the one rule for such requests:
  // kActive only for the current holder (`agent_id` and the lease id, and `attempt` when
  // given) of a leased or running job; kCancelled for that holder of a cancelled run's job;
  // kLost otherwise. nullopt when the job does not exist.
  struct HeldLease {
    LeaseState state = LeaseState::kLost;
    int attempt = 0;
    int max_attempts = 0;
    std::int64_t run_id = 0;
    TimestampMs expires_at = 0;
    std::string slot;
  };
  Result<std::optional<HeldLease>> held_lease_locked(std::int64_t agent_id, const LeaseRef& lease,
                                                     std::optional<int> attempt = std::nullopt) BF_REQUIRES(group_);

 private:
  // After each group's commit (GroupCommit's callback, the lock held): tells the listener if work
  // appeared; after a failed one, forgets what was cached from the lost writes.
  void on_group_decided(bool committed) BF_REQUIRES(group_);

  const StoreOptions options_;
  const Clock& clock_;
  std::unique_ptr<Database> db_ BF_GUARDED_BY(group_);

  std::map<std::int64_t, MatrixSpec> run_specs_ BF_GUARDED_BY(group_);
  std::map<std::int64_t, AgentDescriptor> descriptors_ BF_GUARDED_BY(group_);       // decoded agents.descriptor
  std::unordered_map<std::string, std::int64_t> series_ids_ BF_GUARDED_BY(group_);  // by series_key_text
  std::function<void()> work_listener_;               // set before serving, then only read (on_work_available)
  bool work_appeared_ BF_GUARDED_BY(group_) = false;  // consumed when the operation's group commits
  std::set<std::int64_t> submitting_runs_ BF_GUARDED_BY(group_);

  Mutex credentials_mu_;
  std::map<std::int64_t, AgentCredentials> credentials_ BF_GUARDED_BY(credentials_mu_);

  // Last, so it is destroyed (committing what is open) while the members above still exist.
  GroupCommit group_;
};

}  // namespace benchfleet::store
