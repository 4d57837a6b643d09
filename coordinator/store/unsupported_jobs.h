// Verdicts of `unsupported` for queued jobs no enrolled slot's builds can run in their mode
// (rules::unsupported_reason), given inside the caller's operation of the store.
#pragma once

#include <cstddef>

#include "common/result.h"
#include "common/thread_safety.h"
#include "common/types.h"
#include "coordinator/rules/scheduler.h"
#include "coordinator/store/store_core.h"

namespace benchfleet::store {

// The queued jobs of `offer`'s GPU class that its builds declare unsupported: for each slot class
// of an agent that enrols (its capabilities may have changed). At most `max_verdicts` of them (0:
// all); returns whether more may remain (call again, in another operation).
Result<bool> mark_unsupported(StoreCore& core, const rules::SlotOffer& offer, std::size_t max_verdicts = 0)
    BF_REQUIRES(core.lock());
// A new run's queued cells judged by every enrolled slot (RunStore::create_run); slots alike (GPU
// class and builds) judge once. `max_verdicts` as above.
Result<bool> mark_unsupported_for_run(StoreCore& core, const MatrixSpec& spec, std::size_t max_verdicts = 0)
    BF_REQUIRES(core.lock());

}  // namespace benchfleet::store
