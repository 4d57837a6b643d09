#include "slurm/timeline.h"

#include <cerrno>
#include <cstring>
#include <fstream>

namespace benchfleet::slurm {

Status Timeline::append(const nlohmann::ordered_json& event) {
  std::ofstream out(path_, std::ios::app);
  if (out) out << event.dump() << '\n' << std::flush;
  if (!out) return Error{ErrorCode::kUnavailable, "cannot append to " + path_ + ": " + std::strerror(errno), {}};
  return Status::Ok();
}

Result<std::vector<nlohmann::json>> Timeline::read(int* skipped) const {
  std::vector<nlohmann::json> events;
  if (skipped) *skipped = 0;
  std::ifstream in(path_);
  if (!in) {
    if (errno == ENOENT) return events;
    return Error{ErrorCode::kUnavailable, "cannot read " + path_ + ": " + std::strerror(errno), {}};
  }
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    auto event = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (event.is_discarded() || !event.is_object()) {
      if (skipped) ++*skipped;
      continue;
    }
    events.push_back(std::move(event));
  }
  return events;
}

}  // namespace benchfleet::slurm
