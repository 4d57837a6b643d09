// The agent's result spool: a result is on disk (fsynced) before it is uploaded, and leaves
// the disk only once the coordinator acknowledged it (or refused it for good, e.g. 409).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "common/types.h"

namespace benchfleet::agent {

struct SpoolEntry {
  std::int64_t job_id = 0;
  std::string lease_id;
  int attempt = 0;
  JobResult result;
};

// Thread-safe for distinct entries (each entry is its own file).
class Spool {
 public:
  explicit Spool(std::string dir);

  // Creates the directory if needed.
  Status open();
  // Writes the entry durably: temp file, fsync, rename, fsync of the directory.
  Status put(const SpoolEntry& entry);
  // Every entry, oldest job first. Unreadable files are renamed *.bad and reported in
  // `skipped`, never retried forever and never crash the agent.
  std::vector<SpoolEntry> list(std::vector<std::string>* skipped = nullptr) const;
  Status remove(std::int64_t job_id, int attempt);

 private:
  std::string path_of(std::int64_t job_id, int attempt) const;
  std::string dir_;
};

}  // namespace benchfleet::agent
