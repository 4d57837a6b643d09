// What the benchmark fills share: draining a store's queue the way agents would, in process.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "common/result.h"
#include "common/types.h"
#include "coordinator/store/store.h"

namespace benchfleet::bench {

// Per seed model (catalog order): latency at batch 1 on an A100, eager, and memory per image;
// the synthetic results of both fills are made from it.
struct ModelShape {
  double base_ms;
  double gb_per_image;
};
inline constexpr std::array<ModelShape, 12> kSeedShapes{{{5.0, 0.40},
                                                         {4.0, 0.60},
                                                         {9.0, 0.80},
                                                         {6.0, 0.45},
                                                         {12.0, 0.90},
                                                         {10.0, 0.70},
                                                         {3.0, 0.25},
                                                         {40.0, 2.40},
                                                         {35.0, 2.00},
                                                         {6.0, 0.50},
                                                         {18.0, 1.50},
                                                         {14.0, 1.00}}};

// Every agent's slot "gpu0" leases (Store::lease) until nothing is left for it, and posts the
// verdict `verdict(agent index, grant)` makes at once (Store::record_result), agents taking turns.
// Returns the results stored; an Error when the store refuses one.
Result<std::int64_t> drain_queue(store::Store& store, const std::vector<std::int64_t>& agent_ids,
                                 const std::function<JobResult(std::size_t, const store::LeaseGrant&)>& verdict);

}  // namespace benchfleet::bench
