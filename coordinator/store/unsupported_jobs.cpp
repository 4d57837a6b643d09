// Queued jobs an enrolled slot's builds declare unsupported get that verdict when it is cheap (a
// run submitted, an agent enrolled), instead of on each lease. Each reads only what it acts on,
// whatever the queue's depth.
#include "coordinator/store/unsupported_jobs.h"

#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/codecs.h"
#include "coordinator/store/rows.h"

namespace benchfleet::store {

Result<bool> mark_unsupported(StoreCore& core_, const rules::SlotOffer& offer, std::size_t max_verdicts) {
  // Candidates: queued jobs of this class and of a build/runtime the slot has, in a mode it lacks.
  // One seek of jobs_queued_cells per build/runtime, each row one verdict.
  std::map<std::pair<std::string, Runtime>, std::set<Mode>> offered;
  for (const auto& b : offer.builds) {
    for (const auto& rt : b.runtimes) offered[{b.name, rt.runtime}].insert(rt.modes.begin(), rt.modes.end());
  }
  BF_ASSIGN_OR_RETURN(
      auto q,
      core_.db().prepare("SELECT j.id, j.run_id, " + job_spec_columns("j") +
                         " FROM jobs j INDEXED BY jobs_queued_cells"
                         " WHERE j.status = 'queued' AND j.gpu_class = ?1 AND j.torch_build = ?2 AND j.runtime = ?3"
                         " AND j.mode IN (SELECT value FROM json_each(?4))"));
  std::vector<std::tuple<std::int64_t, std::int64_t, std::string>> verdicts;
  for (const auto& [build_runtime, modes] : offered) {
    nlohmann::json missing = nlohmann::json::array();
    for (Mode m : all_modes()) {
      if (!modes.contains(m)) missing.push_back(to_string(m));
    }
    if (missing.empty()) continue;
    q->bind(1, offer.gpu_class).bind(2, build_runtime.first).bind(3, to_string(build_runtime.second));
    q->bind(4, missing.dump());
    while (max_verdicts == 0 || verdicts.size() < max_verdicts) {
      BF_ASSIGN_OR_RETURN(bool row, q->step());
      if (!row) break;
      if (auto reason = rules::unsupported_reason(offer, job_spec_at(*q, 2))) {
        verdicts.emplace_back(q->int64(0), q->int64(1), std::move(*reason));
      }
    }
    q->reset();  // bound again for the next build and runtime
    if (max_verdicts != 0 && verdicts.size() >= max_verdicts) break;
  }
  const bool more = max_verdicts != 0 && verdicts.size() >= max_verdicts;
  const TimestampMs now = core_.clock().now_ms();
  std::set<std::int64_t> runs;
  for (const auto& [job_id, run_id, reason] : verdicts) {
    BF_RETURN_IF_ERROR(core_.db().run(
        "UPDATE jobs SET status = 'done', finished_at = ?1, updated_at = ?1 WHERE id = ?2 AND status = 'queued'", now,
        job_id));
    JobResult verdict;
    verdict.status = ResultStatus::kUnsupported;
    verdict.error = reason;
    BF_RETURN_IF_ERROR(
        core_.db().run("INSERT INTO results (job_id, run_id, attempt, status, error, body, body_sha256, created_at)"
                       " VALUES (?, ?, 0, 'unsupported', ?, ?, 'scheduler', ?)",
                       job_id, run_id, reason, nlohmann::json(verdict).dump(), now));
    runs.insert(run_id);
  }
  for (auto run_id : runs) BF_RETURN_IF_ERROR(core_.update_run_finished(run_id));
  return more;
}

Result<bool> mark_unsupported_for_run(StoreCore& core_, const MatrixSpec& spec, std::size_t max_verdicts) {
  // Every enrolled slot judges the run's cells; slots alike (GPU class and builds) judge once.
  // Agents are few next to jobs: one read of their descriptors per submitted run.
  const std::set<std::string> gpus(spec.gpus.begin(), spec.gpus.end());
  const std::set<std::string> builds(spec.torch_builds.begin(), spec.torch_builds.end());
  const std::set<Runtime> runtimes(spec.runtimes.begin(), spec.runtimes.end());
  std::vector<AgentDescriptor> fleet;
  BF_ASSIGN_OR_RETURN(auto agents, core_.db().prepare("SELECT descriptor FROM agents"));
  while (true) {
    BF_ASSIGN_OR_RETURN(bool row, agents->step());
    if (!row) break;
    if (auto d = decode<AgentDescriptor>(nlohmann::json::parse(agents->text(0), nullptr, false)); d.ok()) {
      fleet.push_back(std::move(*d));
    }
  }
  std::set<std::string> judged;
  for (const auto& agent : fleet) {
    rules::SlotOffer offer;
    for (const auto& b : agent.torch_builds) {
      if (!builds.contains(b.name)) continue;
      TorchBuildDescriptor relevant{b.name, b.version, {}};
      for (const auto& rt : b.runtimes) {
        if (runtimes.contains(rt.runtime)) relevant.runtimes.push_back(rt);
      }
      if (!relevant.runtimes.empty()) offer.builds.push_back(std::move(relevant));
    }
    if (offer.builds.empty()) continue;
    for (const auto& slot : agent.slots) {
      if (!gpus.contains(slot.gpu_class)) continue;
      if (!judged.insert(slot.gpu_class + '\n' + nlohmann::json(offer.builds).dump()).second) continue;
      offer.gpu_class = slot.gpu_class;
      BF_ASSIGN_OR_RETURN(const bool more, mark_unsupported(core_, offer, max_verdicts));
      if (more) return true;  // the caller comes back for the rest
    }
  }
  return false;
}

}  // namespace benchfleet::store
