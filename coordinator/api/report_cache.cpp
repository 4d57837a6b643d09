#include "coordinator/api/report_cache.h"

#include <utility>

namespace benchfleet::api {

std::optional<RenderedReport> ReportCache::find(const std::string& key) {
  std::lock_guard lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->key != key) continue;
    entries_.splice(entries_.begin(), entries_, it);
    return entries_.front().report;
  }
  return std::nullopt;
}

void ReportCache::put(const std::string& key, RenderedReport report) {
  const std::size_t size = report.body.size();
  if (size > max_bytes_) return;
  std::lock_guard lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->key == key) {
      bytes_ -= it->report.body.size();
      entries_.erase(it);
      break;
    }
  }
  entries_.push_front({key, std::move(report)});
  bytes_ += size;
  while (entries_.size() > max_entries_ || bytes_ > max_bytes_) {
    bytes_ -= entries_.back().report.body.size();
    entries_.pop_back();
  }
}

}  // namespace benchfleet::api
