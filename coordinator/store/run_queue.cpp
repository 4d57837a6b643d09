// RunStore: the queue by GPU class and torch build (GET /api/v1/queue, the Slurm launcher's input).
#include "coordinator/store/run_store.h"

#include <map>
#include <utility>

#include "coordinator/store/store_core.h"

namespace benchfleet::store {

Result<std::vector<QueueCell>> RunStore::queue_summary() {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<std::vector<QueueCell>> {
    std::map<std::pair<std::string, std::string>, QueueCell> cells;
    auto cell = [&](std::string gpu_class, std::string torch_build) -> QueueCell& {
      auto key = std::make_pair(std::move(gpu_class), std::move(torch_build));
      auto [it, inserted] = cells.try_emplace(key);
      if (inserted) {
        it->second.gpu_class = key.first;
        it->second.torch_build = key.second;
      }
      return it->second;
    };
    {
      // The partial index jobs_queued_cells holds one entry per queued job in
      // (gpu_class, torch_build) order: one pass over it, no sort (SQLite 3.40 still reads each
      // row for the status its WHERE implies, and so the run id comes at no extra seek). Named,
      // since without statistics the planner prefers jobs_queue's status prefix and sorts what it
      // read (tests/unit/store_queue_test.cpp). The counts per run are summed here rather than by
      // a GROUP BY, which would sort on run_id.
      BF_ASSIGN_OR_RETURN(auto s, core_.db().prepare("SELECT gpu_class, torch_build, run_id FROM jobs"
                                                     " INDEXED BY jobs_queued_cells WHERE status = 'queued'"));
      QueueCell* current = nullptr;
      std::map<std::int64_t, std::int64_t> per_run;
      std::map<std::int64_t, int> timeouts;  // run id -> its timeout_s, read once per call
      auto close_cell = [&]() BF_REQUIRES(core_.lock()) -> Status {
        if (current == nullptr) return Status::Ok();
        std::map<int, std::int64_t> by_timeout;
        for (const auto& [run_id, n] : per_run) {
          auto t = timeouts.find(run_id);
          if (t == timeouts.end()) {
            BF_ASSIGN_OR_RETURN(const MatrixSpec spec, core_.run_spec_locked(run_id));
            t = timeouts.emplace(run_id, spec.timeout_s).first;
          }
          by_timeout[t->second] += n;
          current->queued += n;
        }
        current->queued_by_timeout.assign(by_timeout.begin(), by_timeout.end());
        per_run.clear();
        return Status::Ok();
      };
      std::int64_t last_run = 0;
      std::int64_t* last_count = nullptr;
      while (true) {
        BF_ASSIGN_OR_RETURN(bool row, s->step());
        if (!row) break;
        std::string gpu_class = s->text(0);  // short: no allocation
        std::string torch_build = s->text(1);
        if (current == nullptr || current->gpu_class != gpu_class || current->torch_build != torch_build) {
          BF_RETURN_IF_ERROR(close_cell());
          current = &cell(std::move(gpu_class), std::move(torch_build));
          last_count = nullptr;
        }
        const std::int64_t run_id = s->int64(2);
        if (last_count == nullptr || run_id != last_run) {
          last_run = run_id;
          last_count = &per_run[run_id];
        }
        ++*last_count;
      }
      BF_RETURN_IF_ERROR(close_cell());
    }
    {
      // Active jobs are at most one per slot: their rows are read through jobs_queue's status
      // prefix and counted here (no sort in SQLite).
      BF_ASSIGN_OR_RETURN(
          auto s, core_.db().prepare("SELECT gpu_class, torch_build FROM jobs WHERE status IN ('leased','running')"));
      while (true) {
        BF_ASSIGN_OR_RETURN(bool row, s->step());
        if (!row) break;
        ++cell(s->text(0), s->text(1)).active;
      }
    }
    std::vector<QueueCell> out;
    out.reserve(cells.size());
    for (auto& [key, c] : cells) out.push_back(std::move(c));
    return out;
  });
}

}  // namespace benchfleet::store
