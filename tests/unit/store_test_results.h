// What the store tests put in a store: agents, matrices and results (minimal, consistent
// bodies: the store does not check them; the API does). Shared by the tests that open a real
// store (store_test, store_query_plan_test, lease_sweeper_test, agent_protocol_test).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/types.h"

namespace benchfleet::store::testing {

// An agent with one slot, "gpu0" of `gpu_class`, offering build "stable" (2.11.0) with LibTorch
// in `modes`.
inline AgentDescriptor one_slot_agent(std::string name, std::string gpu_class = "a100",
                                      std::vector<Mode> modes = {Mode::kEager, Mode::kDefault, Mode::kReduceOverhead}) {
  AgentDescriptor d;
  d.name = std::move(name);
  d.slots = {{"gpu0", std::move(gpu_class), std::nullopt, std::nullopt}};
  d.torch_builds = {{"stable", "2.11.0", {{Runtime::kLibtorch, std::move(modes)}}}};
  return d;
}

// `models` x `batches` x `modes` on build "stable" and GPU class "a100".
inline MatrixSpec stable_a100_matrix(std::string name, std::vector<std::string> models, std::vector<int> batches,
                                     std::vector<Mode> modes) {
  MatrixSpec spec;
  spec.name = std::move(name);
  spec.models = std::move(models);
  spec.batch_sizes = std::move(batches);
  spec.modes = std::move(modes);
  spec.torch_builds = {"stable"};
  spec.gpus = {"a100"};
  return spec;
}

// An "ok" result of three samples of `ms`, with the statistics they give.
inline JobResult ok_result(double ms) {
  JobResult r;
  r.status = ResultStatus::kOk;
  r.samples_ms = {ms, ms, ms};
  r.stats = Statistics{ms, ms, ms, ms, ms, ms, 0, 0, ms, ms, 3};
  return r;
}

// Widens an ok result's CI of the median to median x (1 -/+ `fraction`), min and max with it: a
// loop a bound stopped before its CI target (ci_not_met).
inline void widen_ci(JobResult& r, double fraction) {
  r.stats->ci_low_ms = r.stats->min_ms = r.stats->median_ms * (1 - fraction);
  r.stats->ci_high_ms = r.stats->max_ms = r.stats->median_ms * (1 + fraction);
}

// An "oom" result in warm-up, 1 GiB requested.
inline JobResult oom_result() {
  JobResult r;
  r.status = ResultStatus::kOom;
  r.oom = OomInfo{OomPhase::kWarmup, 1 << 30};
  return r;
}

}  // namespace benchfleet::store::testing
