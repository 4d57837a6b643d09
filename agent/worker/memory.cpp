#include "agent/worker/memory.h"

#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <ATen/TensorIterator.h>  // at::internal::GRAIN_SIZE
#include <sys/resource.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "agent/worker/cuda.h"

namespace benchfleet::worker {
namespace {

// Starts LibTorch's intra-op threads (an OpenMP team) if they are not running yet. Their stacks
// (8 MiB of address space each) are LibTorch's, not the model's; and libgomp, when it cannot
// create a thread under the cap, exits the process (code 1, no verdict) instead of failing.
// An op LibTorch runs in parallel (more elements than its grain size) starts the whole team;
// at::parallel_for here would run serially, as this file is not built with OpenMP.
void start_intra_op_threads() {
  if (at::get_num_threads() > 1) (void)at::ones({2 * at::internal::GRAIN_SIZE});
}

// One matrix product large enough to leave BLAS's small-matrix path: OpenBLAS maps a 128 MiB work
// buffer at its first such call and keeps it for the next ones. It is the library's, like the
// thread stacks, so it is counted before the cap, not against the model; and under the cap
// OpenBLAS cannot fail an allocation: it retries it forever, so a job would hang, not OOM.
void start_blas() {
  const at::Tensor m = at::ones({512, 512});
  (void)at::mm(m, m);
}

}  // namespace

std::int64_t virtual_size_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmSize:", 0) == 0) {
      std::istringstream fields(line.substr(7));
      std::int64_t kb = 0;
      fields >> kb;
      return kb * 1024;
    }
  }
  return 0;
}

Status apply_memory_limit(const std::string& device, std::int64_t limit_mb) {
  const std::int64_t limit = limit_mb * 1024 * 1024;
  if (device == "cuda") return cuda::set_memory_fraction_for(limit);
  start_intra_op_threads();
  start_blas();
  const std::int64_t base = virtual_size_bytes();
  if (base <= 0) return Error::internal("cannot read VmSize from /proc/self/status to apply the memory limit");
  rlimit rl{};
  if (getrlimit(RLIMIT_AS, &rl) != 0) return Error::internal("getrlimit(RLIMIT_AS) failed");
  const auto wanted = static_cast<rlim_t>(base + limit);
  rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, rl.rlim_max);
  if (setrlimit(RLIMIT_AS, &rl) != 0) return Error::internal("setrlimit(RLIMIT_AS) failed");
  return Status::Ok();
}

void lift_memory_limit() {
  rlimit rl{};
  if (getrlimit(RLIMIT_AS, &rl) != 0) return;
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_AS, &rl);
}

MemoryInfo peak_memory(const std::string& device) {
  MemoryInfo m;
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0) m.peak_rss_bytes = static_cast<std::int64_t>(usage.ru_maxrss) * 1024;
  if (device == "cuda") cuda::fill_peak_memory(m);
  return m;
}

}  // namespace benchfleet::worker
