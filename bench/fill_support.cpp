#include "bench/fill_support.h"

#include <string>

namespace benchfleet::bench {

Result<std::int64_t> drain_queue(store::Store& store, const std::vector<std::int64_t>& agent_ids,
                                 const std::function<JobResult(std::size_t, const store::LeaseGrant&)>& verdict) {
  std::int64_t stored = 0;
  std::vector<bool> idle(agent_ids.size(), false);
  for (std::size_t busy = agent_ids.size(); busy > 0;) {
    for (std::size_t a = 0; a < agent_ids.size(); ++a) {
      if (idle[a]) continue;
      BF_ASSIGN_OR_RETURN(const auto answer, store.leases().lease(agent_ids[a], "gpu0"));
      if (!answer.grant) {
        idle[a] = true;
        --busy;
        continue;
      }
      const auto& grant = *answer.grant;
      BF_ASSIGN_OR_RETURN(const auto outcome,
                          store.results().record_result(agent_ids[a], {grant.job_id, grant.lease_id}, grant.attempt,
                                                        verdict(a, grant)));
      if (outcome.kind != store::RecordKind::kStored) {
        return Error::internal("job " + std::to_string(grant.job_id) + ": the store did not take its result");
      }
      ++stored;
    }
  }
  return stored;
}

}  // namespace benchfleet::bench
