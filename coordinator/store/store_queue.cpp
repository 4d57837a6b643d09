// Store: the queue by GPU class and torch build (GET /api/v1/queue, the Slurm launcher's input).
#include <map>
#include <utility>

#include "coordinator/store/store.h"

namespace benchfleet::store {

Result<std::vector<QueueCell>> Store::queue_summary() {
  return group_.run([&]() -> Result<std::vector<QueueCell>> {
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
      // The partial index jobs_queued_cells (migration 008) holds one entry per queued job in
      // (gpu_class, torch_build) order: one pass over it, no sort (SQLite 3.40 still reads each
      // row for the status its WHERE implies). Named, since without statistics the planner
      // prefers jobs_queue's status prefix and sorts what it read: 63 ms instead of 11-18 at
      // 100,000 queued (tests/unit/store_queue_test.cpp).
      BF_ASSIGN_OR_RETURN(auto s, db_->prepare("SELECT gpu_class, torch_build, COUNT(*) FROM jobs"
                                               " INDEXED BY jobs_queued_cells WHERE status = 'queued'"
                                               " GROUP BY gpu_class, torch_build"));
      while (true) {
        BF_ASSIGN_OR_RETURN(bool row, s->step());
        if (!row) break;
        cell(s->text(0), s->text(1)).queued = s->int64(2);
      }
    }
    {
      // Active jobs are at most one per slot: their rows are read through jobs_queue's status
      // prefix and counted here (no sort in SQLite).
      BF_ASSIGN_OR_RETURN(auto s,
                          db_->prepare("SELECT gpu_class, torch_build FROM jobs WHERE status IN ('leased','running')"));
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
