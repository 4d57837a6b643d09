// The raw durable-commit rate of SQLite on a given disk: the ceiling for anything that commits
// every state change before acknowledging it (as the coordinator does).
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace benchfleet::bench {

struct CommitProbe {
  std::int64_t commits = 0;
  double seconds = 0;
  double per_second = 0;
  double p50_ms = 0;
  double p99_ms = 0;
};

// Creates a fresh database at `path` (removing any old one and its -wal/-shm), sets
// journal_mode=WAL and synchronous=FULL (as the coordinator's store does), then commits one
// small INSERT per transaction for `seconds`. The files are removed afterwards.
Result<CommitProbe> probe_durable_commits(const std::string& path, double seconds);

}  // namespace benchfleet::bench
