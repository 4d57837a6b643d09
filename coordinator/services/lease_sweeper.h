// The lease expiry sweeper: every `period` it requeues (or fails, after max attempts) the jobs
// whose lease expired (LeaseStore::expire_leases), so work held by a vanished agent goes back to the
// queue even when nobody asks for it. Leases found expired by their own holder's request are
// expired there (LeaseStore::renew, ResultStore::record_result); the sweeper catches the rest.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/io_context.hpp>

#include "coordinator/services/periodic_task.h"
#include "coordinator/store/lease_store.h"

namespace benchfleet::services {

class LeaseSweeper {
 public:
  // The timer runs on `ioc` (its own strand); the sweep itself on `blocking`, off the I/O threads.
  // `leases` must outlive the loop (until `ioc` stops).
  LeaseSweeper(boost::asio::io_context& ioc, boost::asio::any_io_executor blocking, store::LeaseStore& leases,
               std::chrono::milliseconds period);
  LeaseSweeper(const LeaseSweeper&) = delete;
  LeaseSweeper& operator=(const LeaseSweeper&) = delete;

  // The sweep period for a lease TTL: a quarter of it, within 0.2-5 s.
  static std::chrono::milliseconds period_for(std::int64_t lease_ttl_s);

  void start();
  // Thread-safe; the loop ends before its next sweep (one in progress finishes).
  void stop();

  // Sweeps completed and jobs they requeued or failed, for logs and tests.
  std::int64_t sweeps() const;
  std::int64_t expired() const;

  struct Counts;  // shared with the sweep loop, which may outlive this object by one step

 private:
  std::shared_ptr<Counts> counts_;
  PeriodicTask task_;
};

}  // namespace benchfleet::services
