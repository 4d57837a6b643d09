// Rendered reports, kept so that a report read again (a dashboard left open, a script in a loop,
// a flood of anonymous readers) costs a copy, not a rebuild: a finished run's for good (its report
// never changes), a running run's for a second (readers in a loop then cost one build a second,
// and what they read is at most a second old). Bounded in entries and bytes, least recently used
// first out.
//   if (auto hit = cache.find(key)) return *hit;  ...  cache.put(key, rendered);
// Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>

namespace benchfleet::api {

struct RenderedReport {
  std::string content_type;
  std::string content_disposition;  // empty: none
  std::string body;
};

class ReportCache {
 public:
  explicit ReportCache(std::size_t max_entries = 64, std::size_t max_bytes = std::size_t{64} << 20)
      : max_entries_(max_entries), max_bytes_(max_bytes) {}

  using Clock = std::chrono::steady_clock;
  // The report kept under `key`, unless it expired by `now`.
  std::optional<RenderedReport> find(const std::string& key, Clock::time_point now = Clock::now());
  // Keeps `report` under `key` (replacing one there) until `until` (nullopt: for good); one larger
  // than the byte bound is not kept.
  void put(const std::string& key, RenderedReport report, std::optional<Clock::time_point> until = std::nullopt);

 private:
  struct Entry {
    std::string key;
    RenderedReport report;
    std::optional<Clock::time_point> until;
  };
  const std::size_t max_entries_, max_bytes_;
  std::mutex mu_;
  std::list<Entry> entries_;  // most recently used first
  std::size_t bytes_ = 0;
};

}  // namespace benchfleet::api
