// RunStore::mode_times: what a run's ETA is estimated from.
#include <algorithm>
#include <map>
#include <tuple>

#include "coordinator/store/run_store.h"
#include "coordinator/store/store_core.h"

namespace benchfleet::store {

Result<std::vector<rules::ModeTimes>> RunStore::mode_times(std::int64_t run_id) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<std::vector<rules::ModeTimes>> {
    const TimestampMs now = core_.clock().now_ms();
    std::map<std::tuple<std::string, std::string, std::string>, rules::ModeTimes> groups;
    const auto group = [&](const Statement& s) -> rules::ModeTimes& {
      rules::ModeTimes& g = groups[{s.text(0), s.text(1), s.text(2)}];
      g.build = s.text(0);
      g.runtime = parse_runtime(s.text(1)).value_or(Runtime::kLibtorch);
      g.mode = parse_mode(s.text(2)).value_or(Mode::kEager);
      return g;
    };
    // A job judged without running (unsupported, or cancelled while queued) has no start.
    BF_ASSIGN_OR_RETURN(
        auto counts,
        core_.db().prepare("SELECT torch_build, runtime, mode, SUM(status = 'queued'),"
                           " SUM(status IN ('done','failed') AND started_at IS NOT NULL AND finished_at IS NOT NULL),"
                           " TOTAL(CASE WHEN status IN ('done','failed') AND started_at IS NOT NULL"
                           " THEN finished_at - started_at END)"
                           " FROM jobs WHERE run_id = ? GROUP BY torch_build, runtime, mode"));
    counts->bind(1, run_id);
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, counts->step());
      if (!row) break;
      rules::ModeTimes& g = group(*counts);
      g.queued = static_cast<int>(counts->int64(3));
      g.timed = static_cast<int>(counts->int64(4));
      g.timed_ms = counts->real(5);
    }
    BF_ASSIGN_OR_RETURN(auto running, core_.db().prepare("SELECT torch_build, runtime, mode, started_at FROM jobs"
                                                         " WHERE run_id = ? AND status IN ('leased','running')"
                                                         " AND started_at IS NOT NULL"));
    running->bind(1, run_id);
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, running->step());
      if (!row) break;
      group(*running).running_elapsed_ms.push_back(
          static_cast<double>(std::max<TimestampMs>(0, now - running->int64(3))));
    }
    std::vector<rules::ModeTimes> out;
    out.reserve(groups.size());
    for (auto& [key, g] : groups) out.push_back(std::move(g));
    return out;
  });
}

}  // namespace benchfleet::store
