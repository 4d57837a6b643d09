// SeriesStore: series (one per matrix cell across runs), their points, and the change detector's
// pass over them. Thread-safe: every method is one operation of the store's group commit
// (store_core.h), but detect_changes, which is several (see there).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/types.h"
#include "coordinator/rules/change_detector.h"
#include "coordinator/rules/ingest.h"
#include "coordinator/store/history_types.h"
#include "coordinator/store/page.h"

namespace benchfleet::store {

class RegressionStore;
class StoreCore;

class SeriesStore {
 public:
  // `regressions` reads back the changes a detection pass stores.
  SeriesStore(StoreCore& core, RegressionStore& regressions) : core_(core), regressions_(regressions) {}
  SeriesStore(const SeriesStore&) = delete;
  SeriesStore& operator=(const SeriesStore&) = delete;

  // ResultStore::record_result adds a point to the result's series (creating the series) in its
  // transaction, for the statuses rules::has_series_point names; the detector looks at it later.
  // By id, from the first after `after_id`, at most `limit`.
  Result<Page<SeriesInfo>> list_series(const SeriesFilter& filter, std::optional<std::int64_t> after_id, int limit);
  // The series with that key, if it has points.
  Result<std::optional<std::int64_t>> find_series(const SeriesKey& key);
  // A series and its points in series order, from the first after `after_point` (a point id),
  // at most `limit`. kNotFound when the series does not exist or `after_point` is not its own.
  Result<SeriesPoints> get_series(std::int64_t series_id, std::optional<std::int64_t> after_point, int limit);
  // Runs the change detector over up to `max_series` series that have points it has not seen:
  // groups the points of the current level by run (a run's repetitions pool their samples),
  // reads the samples of the last baseline + confirm runs (result_samples), and stores a
  // confirmed change (rules::change_at_tail) as a regression or improvement, moving the
  // series' level start to it. For each new regression (direction regression) it enqueues a
  // webhook delivery when `enqueue_alerts`. Points of non-ok results are skipped by the detector
  // (they are shown, not tested). Per series: one operation reads, the samples are parsed and
  // tested without the lock, one operation writes if the series is still as read (else its
  // points stay unseen, and `more` is set); at most 16 runs of a series are judged per call
  // (the rest: `more`).
  Result<DetectionPass> detect_changes(const rules::DetectorOptions& options, bool enqueue_alerts, int max_series = 64);

  // Inside a caller's operation (ResultStore::record_result):
  // A result's point in its series, as rules::plan_ingest planned it, with its ids.
  struct NewPoint {
    JobSpec job;
    std::int64_t result_id = 0;
    std::int64_t run_id = 0;
    TimestampMs recorded_at = 0;
    rules::SeriesPointPlan point;
  };
  // Adds `point` to its series (created on its first point; its count and last time bumped): two
  // statements. Returns the series' key and id when the core's series_ids does not hold them
  // yet: the caller caches them once its operation succeeded (a failed one rolls the series
  // back).
  Result<std::optional<std::pair<std::string, std::int64_t>>> add_series_point_locked(const NewPoint& point);

 private:
  Result<SeriesInfo> series_info_locked(std::int64_t series_id);
  // detect_changes for one series, in three steps so that the samples are parsed and tested
  // outside the lock: read (an operation: the level's runs, the samples texts of the runs its
  // windows hold, for up to a few runs per call), walk (no lock: rules::change_at_tail run by
  // run), write (an operation: if the series is still as read, its changes, alerts, level start
  // and the points judged seen; else nothing, and the next call walks it again).
  struct DetectionRead;
  struct FoundChange;
  Result<DetectionRead> read_detection_locked(std::int64_t series_id, const rules::DetectorOptions& options);
  static std::vector<FoundChange> walk_detection(const DetectionRead& read, const rules::DetectorOptions& options);
  // Whether the series was still as read (false: nothing written).
  Result<bool> write_detection_locked(std::int64_t series_id, const DetectionRead& read,
                                      const std::vector<FoundChange>& found, bool enqueue_alerts,
                                      std::vector<RegressionInfo>& changes);
  // For tests (store_history_test.cpp, through StoreTestAccess): called between a series'
  // detection read and its write, without the lock.
  std::function<void(std::int64_t series_id)> between_detection_steps_;
  friend struct StoreTestAccess;

  StoreCore& core_;
  RegressionStore& regressions_;
};

}  // namespace benchfleet::store
