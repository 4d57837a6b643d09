// Wakes long-polling lease requests when work may have appeared (a run was submitted, a lease
// expired or was released). Waiters poll a generation counter on their own timer, so nothing is
// shared across threads but one atomic.
#pragma once

#include <atomic>
#include <cstdint>

namespace benchfleet::services {

class WorkSignal {
 public:
  std::uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  void notify() { generation_.fetch_add(1, std::memory_order_acq_rel); }

 private:
  std::atomic<std::uint64_t> generation_{0};
};

}  // namespace benchfleet::services
