// What the benchmark fills share: draining a store's queue the way agents would, in process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "common/result.h"
#include "common/types.h"
#include "coordinator/store/store.h"

namespace benchfleet::bench {

// Every agent's slot "gpu0" leases (Store::lease) until nothing is left for it, and posts the
// verdict `verdict(agent index, grant)` makes at once (Store::record_result), agents taking turns.
// Returns the results stored; an Error when the store refuses one.
Result<std::int64_t> drain_queue(store::Store& store, const std::vector<std::int64_t>& agent_ids,
                                 const std::function<JobResult(std::size_t, const store::LeaseGrant&)>& verdict);

}  // namespace benchfleet::bench
