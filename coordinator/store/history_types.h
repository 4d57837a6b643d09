// What the store holds of the history: schedules, series and their points, regressions and
// their alert deliveries (Store's schedules, series, regressions and alerts methods).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/agent_protocol.h"
#include "common/clock.h"
#include "common/types.h"
#include "coordinator/rules/change_detector.h"

namespace benchfleet::store {

// A recurring matrix. The coordinator creates its run when due.
struct ScheduleInfo {
  std::int64_t id = 0;
  std::string name;  // the matrix's name
  MatrixSpec spec;
  std::string cron;  // rules::CronSchedule text
  bool enabled = true;
  TimestampMs created_at = 0;
  TimestampMs updated_at = 0;
  TimestampMs next_due_at = 0;
  std::optional<TimestampMs> last_due_at;
  std::optional<std::int64_t> last_run_id;
  std::int64_t missed = 0;  // due times skipped (the coordinator was down, or it was paused)
  std::int64_t runs = 0;    // runs it created
};

// A run a schedule created (ScheduleStore::fire_due_schedules).
struct FiredSchedule {
  std::int64_t schedule_id = 0;
  std::int64_t run_id = 0;
  std::int64_t job_count = 0;
  TimestampMs due_at = 0;    // the due time the run stands for (the latest one <= now)
  std::int64_t skipped = 0;  // earlier due times it stands in for (missed windows)
};

// What identifies a series: a cell of the matrix, across runs.
struct SeriesKey {
  std::string model;
  int batch = 1;
  Mode mode = Mode::kEager;
  Dtype dtype = Dtype::kFloat32;
  Runtime runtime = Runtime::kLibtorch;
  std::string gpu;  // GPU class
  std::string torch_build;

  bool operator==(const SeriesKey&) const = default;
};

struct SeriesInfo {
  std::int64_t id = 0;
  SeriesKey key;
  std::int64_t points = 0;
  std::optional<TimestampMs> last_point_at;
  // The last point in series order (version, then time).
  std::optional<double> last_median_ms;
  std::optional<std::string> last_torch_version;
  std::optional<ResultStatus> last_status;
  std::int64_t open_regressions = 0;  // state open or acknowledged, direction regression
};

struct SeriesFilter {
  std::optional<std::string> model, mode, dtype, runtime, gpu, torch_build;
  std::optional<int> batch;
};

// One stored result of a series (every status but unsupported, invalid and oom_implied).
struct SeriesPoint {
  std::int64_t id = 0;
  std::int64_t result_id = 0;
  std::int64_t run_id = 0;
  ResultStatus status = ResultStatus::kOk;
  std::optional<double> median_ms, ci_low_ms, ci_high_ms;
  std::optional<std::string> torch_version, torch_git;
  TimestampMs recorded_at = 0;
  std::vector<std::string> flags;
  std::optional<std::string> accuracy;
};

struct SeriesPoints {
  SeriesInfo series;
  std::vector<SeriesPoint> points;          // in series order
  std::optional<std::int64_t> next_cursor;  // a point id: pass as `after_point` for the next page
};

enum class RegressionState { kOpen, kAcknowledged, kResolved };
std::string_view to_string(RegressionState s);
std::optional<RegressionState> parse_regression_state(std::string_view s);

// A point named by a regression: where the change starts, or the last point before it.
struct PointRef {
  std::int64_t point_id = 0;
  std::int64_t result_id = 0;
  std::int64_t run_id = 0;
  std::optional<std::string> torch_version, torch_git;
  TimestampMs recorded_at = 0;
  std::optional<double> median_ms;
};

// A change the detector confirmed (rules::Change as stored).
struct RegressionInfo {
  std::int64_t id = 0;
  std::int64_t series_id = 0;
  SeriesKey key;
  rules::ChangeDirection direction = rules::ChangeDirection::kRegression;
  RegressionState state = RegressionState::kOpen;
  PointRef first_bad;                 // the first run of the new level
  std::optional<PointRef> last_good;  // the last run before it (the range to bisect)
  double before_median_ms = 0, after_median_ms = 0, ratio = 1, p_value = 1;
  int baseline_runs = 0, confirm_runs = 0;
  TimestampMs detected_at = 0;
  std::optional<TimestampMs> acknowledged_at, resolved_at;
  std::optional<std::string> note;
};

struct RegressionFilter {
  std::optional<RegressionState> state;             // nullopt: any
  std::optional<rules::ChangeDirection> direction;  // nullopt: any
  std::optional<std::int64_t> series_id;
};

// A webhook delivery owed (alert_deliveries): its JSON body, sent as is.
struct AlertDelivery {
  std::int64_t id = 0;
  std::int64_t regression_id = 0;
  std::string event;  // "regression.opened"
  std::string body;
  int attempts = 0;  // made so far
};

struct DetectionPass {
  std::int64_t series_examined = 0;
  std::vector<RegressionInfo> changes;  // confirmed in this pass (regressions and improvements)
  bool more = false;                    // series with unexamined points remain (call again)
};

}  // namespace benchfleet::store
