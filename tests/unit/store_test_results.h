// Results the store tests record: minimal, consistent bodies (the store does not check them; the
// API does). Shared by store_test.cpp and store_query_plan_test.cpp.
#pragma once

#include "common/types.h"

namespace benchfleet::store::testing {

// An "ok" result of three samples of `ms`, with the statistics they give.
inline JobResult ok_result(double ms) {
  JobResult r;
  r.status = ResultStatus::kOk;
  r.samples_ms = {ms, ms, ms};
  r.stats = Statistics{ms, ms, ms, ms, ms, ms, 0, 0, ms, ms, 3};
  return r;
}

// An "oom" result in warm-up, 1 GiB requested.
inline JobResult oom_result() {
  JobResult r;
  r.status = ResultStatus::kOom;
  r.oom = OomInfo{OomPhase::kWarmup, 1 << 30};
  return r;
}

}  // namespace benchfleet::store::testing
