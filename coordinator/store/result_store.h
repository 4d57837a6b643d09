// Results: the verdict an agent posts for its lease's attempt, and what is read back of them
// (listings, one result with its samples, the cells of a report).
// Thread-safe: every method is one operation of the store's group commit (store_core.h): it
// runs alone on the one connection and returns once what it wrote is committed.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "common/agent_protocol.h"
#include "common/cell_result.h"
#include "common/result.h"
#include "common/types.h"
#include "coordinator/store/agent_types.h"
#include "coordinator/store/page.h"
#include "coordinator/store/run_types.h"

namespace benchfleet::store {

class SeriesStore;
class RunStore;
class StoreCore;

class ResultStore {
 public:
  // `series` takes each stored result's series point; `runs` answers whether a run exists.
  ResultStore(StoreCore& core, RunStore& runs, SeriesStore& series) : core_(core), runs_(runs), series_(series) {}
  ResultStore(const ResultStore&) = delete;
  ResultStore& operator=(const ResultStore&) = delete;

  // Stores the verdict of `attempt` for the holder of `lease` (kLost / kCancelled as for
  // LeaseStore::renew): one row per attempt (kDuplicate for the same result again, kMismatch for
  // another one), with its noise flags, its series point (SeriesStore::list_series), and the
  // OOM pruning it implies. `arrived_at`: when the post arrived (LeaseStore::Arrivals); the lease
  // is judged as of then, so a result that came in time is stored however late the coordinator
  // comes to it. 0: now.
  Result<RecordOutcome> record_result(std::int64_t agent_id, const LeaseRef& lease, int attempt,
                                      const JobResult& result, TimestampMs arrived_at = 0);

  // Most bytes of samples text in one page of list_results(with_samples): a page stops before
  // the result that would pass it, and next_cursor goes on from there; a result whose samples
  // alone are more comes without them (ResultRow::samples_omitted).
  // A result holds at most 10^6 samples (max_iterations), about 9-20 MB of text.
  static constexpr std::size_t kSamplesPageBytes = 4U << 20U;

  // The run's results with id > `after_id`, ascending, at most `limit`; without their samples
  // unless `with_samples`, and then also at most kSamplesPageBytes of them (in samples_json).
  // Bodies are parsed after the store lock is released, so a big read never stalls agents.
  // kNotFound when the run does not exist.
  Result<Page<ResultRow>> list_results(std::int64_t run_id, const ResultFilter& filter,
                                       std::optional<std::int64_t> after_id, int limit, bool with_samples = false);
  // One result with its samples (in samples_json). kNotFound.
  // One result; with its samples (samples_json) unless `with_samples` is false.
  Result<ResultRow> get_result(std::int64_t result_id, bool with_samples = true);
  // One entry per job of the run, with its result when there is one (for reports), including
  // the torch version the result recorded (results.torch_version, from its fingerprint).
  Result<std::vector<CellResult>> report_cells(std::int64_t run_id);

 private:
  StoreCore& core_;
  RunStore& runs_;
  SeriesStore& series_;
};

}  // namespace benchfleet::store
