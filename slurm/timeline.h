// <state_dir>/timeline.jsonl: what the launcher did and saw, one JSON object per line
// ({"time", "event": submitted|started|ended, "gpu_class", "slurm_job_id", ...}). It is also the
// launcher's memory across restarts: allocations submitted and not yet seen ending are tracked
// again (squeue by job name adopts the rest).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/result.h"

namespace benchfleet::slurm {

// Appends events to one file. Thread safety: none (the reconcile loop owns it).
class Timeline {
 public:
  explicit Timeline(std::string path) : path_(std::move(path)) {}

  // Appends `event` as one line and flushes it; an error naming the file.
  Status append(const nlohmann::ordered_json& event);

  // The file's events in order; a missing file is no events. Lines that are not JSON objects
  // (a line cut short by a crash) are skipped and counted in `skipped` when given.
  Result<std::vector<nlohmann::json>> read(int* skipped = nullptr) const;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace benchfleet::slurm
