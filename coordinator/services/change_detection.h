// The change detector's pass, run by the history service: for each series with points it has not
// seen, read its current level (one store operation), decide (rules::walk_level, without the
// store's lock: parsing and testing samples is the expensive part) and write what it found (one
// operation, only if the series is still as read; else its points stay unseen for the next pass).
//   auto pass = services::detect_changes(store.series(), rules::DetectorOptions{}, /*enqueue_alerts=*/true);
#pragma once

#include <cstdint>
#include <functional>

#include "common/result.h"
#include "coordinator/rules/change_detector.h"
#include "coordinator/store/history_types.h"
#include "coordinator/store/series_store.h"

namespace benchfleet::services {

// Over up to `max_series` series with unseen points; `more` when some are left, or a series
// changed under its walk, or has runs beyond the 16 a read holds. Points of non-ok results are
// shown, not tested. A new regression (direction regression) enqueues a webhook delivery when
// `enqueue_alerts`. `between_steps`, for tests: called with the series id between a read and its
// write, without the lock.
Result<store::DetectionPass> detect_changes(store::SeriesStore& series, const rules::DetectorOptions& options,
                                            bool enqueue_alerts, int max_series = 64,
                                            const std::function<void(std::int64_t series_id)>& between_steps = {});

}  // namespace benchfleet::services
