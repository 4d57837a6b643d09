// Prometheus text exposition for the coordinator: request latency histogram per route and
// status class, plus store gauges rendered at scrape time.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "coordinator/store/store.h"

namespace benchfleet::api {

class Metrics {
 public:
  // Thread-safe.
  void observe_request(std::string_view route, unsigned status, double seconds);
  // The whole exposition: request histogram plus the given gauges.
  std::string render(const store::Gauges& gauges) const;

 private:
  static constexpr std::array<double, 13> kBuckets = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                      0.25,  0.5,    1,     2.5,  10,    30};
  struct Series {
    std::array<std::uint64_t, kBuckets.size()> buckets{};
    std::uint64_t count = 0;
    double sum = 0;
  };
  mutable std::mutex mu_;
  std::map<std::pair<std::string, std::string>, Series> series_;  // (route, "2xx") -> histogram
};

}  // namespace benchfleet::api
