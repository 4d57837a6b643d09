#include "coordinator/services/change_detection.h"

#include <utility>
#include <vector>

namespace benchfleet::services {

Result<store::DetectionPass> detect_changes(store::SeriesStore& series, const rules::DetectorOptions& options,
                                            bool enqueue_alerts, int max_series,
                                            const std::function<void(std::int64_t series_id)>& between_steps) {
  store::DetectionPass pass;
  BF_ASSIGN_OR_RETURN(std::vector<std::int64_t> pending, series.series_with_unseen_points(max_series + 1));
  if (static_cast<int>(pending.size()) > max_series) {
    pass.more = true;
    pending.pop_back();
  }
  for (std::int64_t series_id : pending) {
    BF_ASSIGN_OR_RETURN(const store::DetectionRead read, series.read_detection(series_id, options));
    std::vector<const rules::LevelRun*> runs;
    runs.reserve(read.runs.size());
    for (const auto& run : read.runs) runs.push_back(&run);
    const std::vector<rules::FoundChange> found = rules::walk_level(runs, read.first_pending, read.stop, options);
    if (between_steps) between_steps(series_id);
    std::vector<store::RegressionInfo> changes;
    BF_ASSIGN_OR_RETURN(const bool written, series.write_detection(series_id, read, found, enqueue_alerts, changes));
    ++pass.series_examined;
    // A series changed under the walk, or with runs left to judge, has unseen points still.
    if (!written || read.stop < static_cast<std::ptrdiff_t>(read.runs.size())) pass.more = true;
    for (auto& c : changes) pass.changes.push_back(std::move(c));
  }
  return pass;
}

}  // namespace benchfleet::services
