#include "coordinator/api/report_cache.h"

#include <utility>

namespace benchfleet::api {

std::optional<RenderedReport> ReportCache::find(const std::string& key, Clock::time_point now) {
  std::lock_guard lock(mu_);
  for (auto it = entries_.begin(); it != entries_.end(); ++it) {
    if (it->key != key) continue;
    if (it->until && *it->until <= now) return std::nullopt;  // stale: the caller builds and puts it again
    entries_.splice(entries_.begin(), entries_, it);
    return entries_.front().report;
  }
  return std::nullopt;
}

void ReportCache::put(const std::string& key, RenderedReport report, std::optional<Clock::time_point> until) {
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
  entries_.push_front({key, std::move(report), until});
  bytes_ += size;
  while (entries_.size() > max_entries_ || bytes_ > max_bytes_) {
    bytes_ -= entries_.back().report.body.size();
    entries_.pop_back();
  }
}

}  // namespace benchfleet::api
