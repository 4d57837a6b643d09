#include "slurm/queue_source.h"

#include <fstream>

namespace benchfleet::slurm {

HttpQueueSource::HttpQueueSource(const std::string& coordinator, std::string bearer_token,
                                 std::chrono::milliseconds timeout)
    : client_(coordinator), token_(std::move(bearer_token)), timeout_(timeout) {}

Result<std::vector<QueueCell>> HttpQueueSource::fetch() {
  BF_ASSIGN_OR_RETURN(auto response, client_.get("/api/v1/queue", token_, timeout_));
  if (response.status != 200) return http::error_for_response(response, "GET /api/v1/queue");
  auto cells = parse_queue_summary(response.body);
  if (!cells.ok()) {
    return Error{ErrorCode::kUnavailable, "GET /api/v1/queue: unexpected answer: " + cells.error().describe(), {}};
  }
  return cells;
}

Result<std::string> read_api_token(const std::string& path) {
  if (path.empty()) return std::string();
  std::ifstream in(path);
  std::string token;
  if (!in || !std::getline(in, token)) return Error::invalid("api_token_file", "cannot read " + path);
  while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
  if (token.empty()) return Error::invalid("api_token_file", path + " holds no token on its first line");
  return token;
}

}  // namespace benchfleet::slurm
