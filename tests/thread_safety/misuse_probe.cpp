// Not built: scripts/thread_safety.py compiles this with clang's -Wthread-safety and expects each
// misuse below to be an error, so the annotations on the store are known to be checked (a typo in
// a macro, or an attribute clang ignores, would let every real unit pass unchecked).
#include "coordinator/store/store_core.h"

namespace benchfleet::store {

// expect: requires holding
std::int64_t reads_the_database_outside_an_operation(StoreCore& core) { return core.db().changes(); }

// expect: cannot call function 'run' while
Status runs_an_operation_inside_another(StoreCore& core) {
  return core.run([&]() BF_REQUIRES(core.lock()) { return core.run([] { return Status::Ok(); }); });
}

// expect: requires holding
Status calls_a_locked_step_from_an_unannotated_operation(StoreCore& core) {
  return core.run([&] { return core.update_run_finished(1); });
}

}  // namespace benchfleet::store
