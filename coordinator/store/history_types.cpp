#include "coordinator/store/history_types.h"

namespace benchfleet::store {

std::string_view to_string(RegressionState s) {
  switch (s) {
    case RegressionState::kOpen:
      return "open";
    case RegressionState::kAcknowledged:
      return "acknowledged";
    case RegressionState::kResolved:
      return "resolved";
  }
  return "open";
}

std::optional<RegressionState> parse_regression_state(std::string_view s) {
  for (auto state : {RegressionState::kOpen, RegressionState::kAcknowledged, RegressionState::kResolved}) {
    if (to_string(state) == s) return state;
  }
  return std::nullopt;
}

}  // namespace benchfleet::store
