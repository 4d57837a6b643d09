#include "coordinator/services/lease_sweeper.h"

#include <algorithm>
#include <atomic>

#include <spdlog/spdlog.h>

namespace benchfleet::services {

struct LeaseSweeper::Counts {
  std::atomic<std::int64_t> sweeps{0}, expired{0};
};

LeaseSweeper::LeaseSweeper(boost::asio::io_context& ioc, boost::asio::any_io_executor blocking,
                           store::LeaseStore& leases, std::chrono::milliseconds period)
    : counts_(std::make_shared<Counts>()),
      task_(ioc, std::move(blocking), "lease expiry sweeper", period, [&leases, counts = counts_, period] {
        auto n = leases.expire_leases();
        if (!n.ok()) {
          spdlog::warn("lease expiry sweep failed: {}", n.error().message);
          return period;
        }
        counts->sweeps.fetch_add(1);
        counts->expired.fetch_add(*n);
        if (*n > 0) spdlog::info("expired leases requeued_or_failed={}", *n);
        return period;
      }) {}

std::chrono::milliseconds LeaseSweeper::period_for(std::int64_t lease_ttl_s) {
  return std::chrono::milliseconds(std::clamp<std::int64_t>(lease_ttl_s * 1000 / 4, 200, 5000));
}

void LeaseSweeper::start() { task_.start(); }
void LeaseSweeper::stop() { task_.stop(); }

std::int64_t LeaseSweeper::sweeps() const { return counts_->sweeps.load(); }
std::int64_t LeaseSweeper::expired() const { return counts_->expired.load(); }

}  // namespace benchfleet::services
