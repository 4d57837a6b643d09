// What the narrow stores (RunStore, AgentStore, ResultStore, ScheduleStore, SeriesStore,
// RegressionStore) share: the one database connection and its group commit, the caches read on the lease path, and the
// steps of a job's life that more than one of them takes. Internal to coordinator/store/: callers hold a Store
// (store.h) and its narrow stores.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/agent_protocol.h"
#include "common/clock.h"
#include "common/result.h"
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

// Every member below `group` is used under the group's lock (inside group.run), the
// credentials also under credentials_mu. The methods run inside an operation of `group`.
class StoreCore {
 public:
  StoreCore(StoreOptions options, const Clock& clock, std::unique_ptr<Database> db);
  StoreCore(const StoreCore&) = delete;
  StoreCore& operator=(const StoreCore&) = delete;

  const StoreOptions options;
  const Clock& clock;
  std::unique_ptr<Database> db;

  std::map<std::int64_t, MatrixSpec> run_specs;              // immutable once stored; cached for leases
  std::map<std::int64_t, AgentDescriptor> descriptors;       // decoded agents.descriptor, by agent id
  std::unordered_map<std::string, std::int64_t> series_ids;  // series id by key (series_key_text)
  std::function<void()> work_listener;                       // see Store::on_work_available
  bool work_appeared = false;                                // set by an operation, consumed when its group commits
  std::set<std::int64_t> submitting_runs;                    // runs whose jobs are still being stored (never finished)
  // Agents' credentials, read on every agent request.
  std::mutex credentials_mu;
  std::map<std::int64_t, AgentCredentials> credentials;

  // The run's matrix (cached: it never changes once stored).
  Result<MatrixSpec> run_spec_locked(std::int64_t run_id);
  // Marks the queued jobs of `job_id`'s cell (its run's jobs of the same model, mode, build, GPU
  // class, runtime and dtype) that an OOM at a smaller batch implies; returns how many. Pruning
  // relates only jobs of one cell, and runs whenever a cell changes (an OOM stored, a job
  // requeued), so the rest of the run needs no look.
  Result<std::int64_t> mark_implied_oom(std::int64_t run_id, std::int64_t job_id);
  // Closes the attempt's row with `outcome` ("result", "expired", "released", ...).
  Status end_attempt(std::int64_t job_id, int attempt, std::string_view outcome);
  // Sets the run's finished_at once none of its jobs is queued, leased or running.
  Status update_run_finished(std::int64_t run_id);
  // Ends a lease that will not produce a result: requeue, or fail after max attempts; then
  // applies OOM pruning and the run's completion. Sets work_appeared.
  Status requeue_or_fail(std::int64_t job_id, int attempt, int max_attempts, std::int64_t run_id,
                         std::string_view outcome);

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
                                                     std::optional<int> attempt = std::nullopt);

  // Last, so it is destroyed (committing what is open) while the members above still exist.
  GroupCommit group;

 private:
  // After each group's commit (GroupCommit's callback): tells the listener if work appeared;
  // after a failed one, forgets what was cached from the lost writes.
  void on_group_decided(bool committed);
};

}  // namespace benchfleet::store
