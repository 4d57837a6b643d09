// What the store tests put in a store: agents, matrices and results (minimal bodies, valid as a
// worker posts them: the store records a result through rules::plan_ingest, which checks them).
// Shared by the tests that open a real store (store_test, store_query_plan_test,
// lease_sweeper_test, agent_protocol_test).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "common/stats.h"
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
  r.stop_reason = StopReason::kMaxTime;  // any count may stop at the time bound
  return r;
}

// An "ok" result of `n` samples spread evenly over ms x (1 -/+ `spread`), mirrored around `ms`
// (their median), with the statistics they give: its CV is about spread / sqrt(3), its CI of the
// median wide. A loop the time bound stopped before its CI target: ci_not_met, and high_cv
// above the run's max_cv.
inline JobResult spread_result(double ms, double spread, int n = 12) {
  JobResult r;
  r.status = ResultStatus::kOk;
  for (int i = 1; i <= n / 2; ++i) {
    const double d = spread * i / (n / 2);
    r.samples_ms.push_back(ms * (1 + d));
    r.samples_ms.push_back(ms * (1 - d));
  }
  r.stats = compute_statistics(r.samples_ms);
  r.stop_reason = StopReason::kMaxTime;
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
