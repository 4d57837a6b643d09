// RegressionStore: the changes the detector confirmed (regressions, improvements), their states,
// and the webhook deliveries they owe (SeriesStore::write_detection stores them).
// Thread-safe: every method is one operation of the store's group commit (store_core.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/types.h"
#include "coordinator/store/history_types.h"
#include "coordinator/store/page.h"
#include "coordinator/store/store_core.h"

namespace benchfleet::store {

class RegressionStore {
 public:
  explicit RegressionStore(StoreCore& core) : core_(core) {}
  RegressionStore(const RegressionStore&) = delete;
  RegressionStore& operator=(const RegressionStore&) = delete;

  // Newest first, from the first before `before_id`, at most `limit`.
  Result<Page<RegressionInfo>> list_regressions(const RegressionFilter& filter, std::optional<std::int64_t> before_id,
                                                int limit);
  Result<RegressionInfo> get_regression(std::int64_t regression_id);
  // open -> acknowledged -> resolved (open -> resolved too); back to open reopens a resolved one
  // or takes back an acknowledgement (both forget their times); resolved -> acknowledged is
  // kConflict. Setting the state it already has is a no-op; `note`, when given, replaces the
  // note. kNotFound.
  Result<RegressionInfo> set_regression_state(std::int64_t regression_id, RegressionState state,
                                              const std::optional<std::string>& note);
  // Deliveries whose next attempt is due at `now`, oldest first.
  Result<std::vector<AlertDelivery>> due_alerts(TimestampMs now, int limit);
  // The earliest next attempt of an undelivered delivery.
  Result<std::optional<TimestampMs>> next_alert_due();
  Status alert_delivered(std::int64_t delivery_id, TimestampMs at);
  // Records a failed attempt; retried at `retry_at`, or given up when nullopt.
  Status alert_attempt_failed(std::int64_t delivery_id, const std::string& error, std::optional<TimestampMs> retry_at);

 private:
  // Inside an operation: one regression as stored (SeriesStore's detection write reads back what
  // it stored).
  Result<RegressionInfo> regression_info_locked(std::int64_t regression_id);
  friend class SeriesStore;

  StoreCore& core_;
};

}  // namespace benchfleet::store
