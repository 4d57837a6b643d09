// Where the launcher reads the coordinator's queue: GET /api/v1/queue. An interface so the
// reconcile loop is tested without a coordinator.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/http/client.h"
#include "common/result.h"
#include "slurm/planner.h"

namespace benchfleet::slurm {

class QueueSource {
 public:
  virtual ~QueueSource() = default;
  // The queue's cells, or an error saying why the queue could not be read.
  virtual Result<std::vector<QueueCell>> fetch() = 0;
};

// GET <coordinator>/api/v1/queue with an optional bearer token. Thread safety: none.
class HttpQueueSource final : public QueueSource {
 public:
  HttpQueueSource(const std::string& coordinator, std::string bearer_token,
                  std::chrono::milliseconds timeout = std::chrono::seconds(30));
  Result<std::vector<QueueCell>> fetch() override;

 private:
  http::Client client_;
  std::string token_;
  std::chrono::milliseconds timeout_;
};

// The first line of `path` (api_token_file); "" for an empty path; an error naming
// api_token_file when it cannot be read or is empty.
Result<std::string> read_api_token(const std::string& path);

}  // namespace benchfleet::slurm
