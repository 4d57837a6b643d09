// SeriesStore: series (one per matrix cell across runs), their points, and the change detector's
// steps over them. Thread-safe: every method is one operation of the store's group commit
// (store_core.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/result.h"
#include "common/types.h"
#include "coordinator/rules/change_detector.h"
#include "coordinator/rules/ingest.h"
#include "coordinator/store/history_types.h"
#include "coordinator/store/page.h"
#include "coordinator/store/store_core.h"

namespace benchfleet::store {

class RegressionStore;
// A point's place in series order: (version_key, recorded_at, id). The default is before every
// point.
struct OrderKey {
  std::string version_key;
  TimestampMs recorded_at = std::numeric_limits<TimestampMs>::min();
  std::int64_t id = 0;

  friend bool operator<(const OrderKey& a, const OrderKey& b) {
    return std::tie(a.version_key, a.recorded_at, a.id) < std::tie(b.version_key, b.recorded_at, b.id);
  }
};

// What the detector's walk over one series needs (SeriesStore::read_detection), walked without
// the store's lock (rules::walk_level over `runs`) and written back if the series is still as
// read (SeriesStore::write_detection).
struct DetectionRead {
  // A run's ok points in the current level (consecutive points of one run: its repetitions),
  // with the samples texts of its results for the runs a window of the walk holds.
  struct Run : rules::LevelRun {
    std::int64_t run_id = 0;
    std::vector<std::int64_t> result_ids;
    OrderKey first;  // its first point's place in series order
    bool pending = false;
  };
  std::optional<std::int64_t> level_start;
  std::vector<Run> runs;
  std::ptrdiff_t first_pending = 0;  // the first run with an unseen point (runs.size(): none)
  std::ptrdiff_t stop = 0;           // the walk judges the runs [first_pending, stop)
  // The series' unseen points (every status) as read, and those the walk judges: all of them
  // when it reaches the last run, else those ordered before runs[stop].
  std::map<std::int64_t, OrderKey> pending;
  std::vector<std::int64_t> judged;
  // An unseen point ordered before this that was not read means the series changed under the
  // walk; nullopt: no ok point was read (there was nothing to walk).
  std::optional<OrderKey> bound;
};

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
  // The change detector's steps, each one operation, which the history service runs
  // (services/change_detection.h): the series with points it has not seen, by id, at most
  // `limit`; one series' current level read for a walk (the level's runs in series order, the
  // samples of the runs the walk's windows hold, for up to 16 runs per call); and the walk's
  // findings written if the series is still as read: its changes as regressions or improvements
  // (an alert enqueued for each new regression when `enqueue_alerts`), the level start moved,
  // the points judged seen. Whether it was still as read (false: nothing written, its points
  // stay unseen).
  Result<std::vector<std::int64_t>> series_with_unseen_points(int limit);
  Result<DetectionRead> read_detection(std::int64_t series_id, const rules::DetectorOptions& options);
  Result<bool> write_detection(std::int64_t series_id, const DetectionRead& read,
                               const std::vector<rules::FoundChange>& found, bool enqueue_alerts,
                               std::vector<RegressionInfo>& changes);

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
  Result<SeriesInfo> series_info_locked(std::int64_t series_id) BF_REQUIRES(core_.lock());
  Result<DetectionRead> read_detection_locked(std::int64_t series_id, const rules::DetectorOptions& options)
      BF_REQUIRES(core_.lock());
  Result<bool> write_detection_locked(std::int64_t series_id, const DetectionRead& read,
                                      const std::vector<rules::FoundChange>& found, bool enqueue_alerts,
                                      std::vector<RegressionInfo>& changes) BF_REQUIRES(core_.lock());

  StoreCore& core_;
  RegressionStore& regressions_;
};

}  // namespace benchfleet::store
