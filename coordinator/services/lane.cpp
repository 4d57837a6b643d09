#include "coordinator/services/lane.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

namespace benchfleet::services {

Lane::Lane(const std::string& name, int threads, int nice) : guard_(boost::asio::make_work_guard(ioc_)) {
  const int n = std::max(1, threads);
  threads_.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    threads_.emplace_back([this, nice, thread_name = name.substr(0, 12) + "-" + std::to_string(i)] {
      pthread_setname_np(pthread_self(), thread_name.substr(0, 15).c_str());
      // Linux keeps a nice value per thread: this one's, not the process's.
      if (nice > 0) (void)setpriority(PRIO_PROCESS, static_cast<id_t>(::syscall(SYS_gettid)), nice);
      ioc_.run();
    });
  }
}

void Lane::join() {
  guard_.reset();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
}

Lane::~Lane() { join(); }

}  // namespace benchfleet::services
