// A lane: a pool of threads for one kind of request, so kinds do not queue behind each other.
// The agent protocol has its own lane, and so do the reads, whose threads run at a lower CPU
// priority (nice): a flood of reads then slows reads, not heartbeats.
//   Lane reads("read", 2, /*nice=*/10);
//   co_await run_blocking(reads.executor(), [&] { return build_report(); });
#pragma once

#include <string>
#include <thread>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

namespace benchfleet::services {

class Lane {
 public:
  // Starts `threads` threads (at least 1), each at `nice` (0: unchanged; a thread that may not
  // lower its priority keeps the process's and logs nothing: it still works).
  Lane(const std::string& name, int threads, int nice = 0);
  // join()s.
  ~Lane();
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

  boost::asio::any_io_executor executor() { return ioc_.get_executor(); }
  // Lets the threads return once nothing is queued, and waits for them. Idempotent.
  void join();

 private:
  boost::asio::io_context ioc_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard_;
  std::vector<std::thread> threads_;
};

}  // namespace benchfleet::services
