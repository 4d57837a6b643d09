#include "agent/worker/memory.h"

#include <ATen/Functions.h>
#include <ATen/Parallel.h>
#include <ATen/TensorIterator.h>  // at::internal::GRAIN_SIZE
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "agent/worker/cuda.h"
#include "common/shared_rules.h"

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

// The cap this process runs under, as its result's memory names it: process state, like the
// limit itself (one job per worker process).
struct AppliedCap {
  std::string kind;  // empty: none
  std::int64_t bytes = 0;
  bool lifted = false;
};
AppliedCap& applied_cap() {
  static AppliedCap cap;
  return cap;
}

// The directory the agent named for the job's memory cgroup (common/rules/memory_cgroup.json),
// or empty: no cgroup, the worker caps its own address space.
std::string agent_directory() {
  const char* dir = std::getenv(memory_cgroup_protocol().environment.c_str());
  return dir != nullptr ? dir : "";
}

void write_whole(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".tmp";
  {
    std::ofstream out(temporary, std::ios::trunc);
    out << text << '\n';
  }
  std::rename(temporary.c_str(), path.c_str());  // the agent never reads half a request
}

// Sends "cap" or "lift"; the agent's answer, or "" when none came in time.
std::string ask_agent(const std::string& request) {
  const MemoryCgroupProtocol& protocol = memory_cgroup_protocol();
  const std::string dir = agent_directory();
  const std::string answer_path = dir + "/" + protocol.answer_file;
  std::remove(answer_path.c_str());  // the answer to an earlier request
  write_whole(dir + "/" + protocol.request_file, request);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(protocol.answer_timeout_s);
  while (std::chrono::steady_clock::now() < deadline) {
    std::string answer;
    std::getline(std::ifstream(answer_path), answer);
    if (!answer.empty()) return answer;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return "";
}

}  // namespace

void note_phase(OomPhase phase) {
  const std::string dir = agent_directory();
  if (!dir.empty()) write_whole(dir + "/" + memory_cgroup_protocol().phase_file, std::string(to_string(phase)));
}

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
  applied_cap() = {};
  if (device == "cuda") {
    if (auto s = cuda::set_memory_fraction_for(limit); !s) return s;
    applied_cap() = {"cuda-allocator", limit, false};
    return Status::Ok();
  }
  start_intra_op_threads();
  start_blas();
  if (!agent_directory().empty()) {
    std::istringstream answer(ask_agent("cap"));
    std::string word;
    std::string kind;
    std::int64_t bytes = 0;
    if (answer >> word >> kind >> bytes && word == "capped") {
      applied_cap() = {kind, bytes, false};
      return Status::Ok();
    }
    std::cerr << "memory cgroup: " << (answer.str().empty() ? "the agent did not answer" : answer.str())
              << "; capping the address space instead" << std::endl;
  }
  const std::int64_t base = virtual_size_bytes();
  if (base <= 0) return Error::internal("cannot read VmSize from /proc/self/status to apply the memory limit");
  rlimit rl{};
  if (getrlimit(RLIMIT_AS, &rl) != 0) return Error::internal("getrlimit(RLIMIT_AS) failed");
  const auto wanted = static_cast<rlim_t>(base + limit);
  rl.rlim_cur = rl.rlim_max == RLIM_INFINITY ? wanted : std::min(wanted, rl.rlim_max);
  if (setrlimit(RLIMIT_AS, &rl) != 0) return Error::internal("setrlimit(RLIMIT_AS) failed");
  applied_cap() = {"address-space", limit, false};
  return Status::Ok();
}

void lift_memory_limit() {
  AppliedCap& cap = applied_cap();
  if (cap.kind.rfind("cgroup", 0) == 0) {
    if (cap.lifted) return;
    const std::string answer = ask_agent("lift");
    cap.lifted = answer == "lifted";
    if (!cap.lifted) std::cerr << "memory cgroup: lifting the cap: " << answer << std::endl;
    return;
  }
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
  if (!applied_cap().kind.empty()) {
    m.cap = applied_cap().kind;
    m.cap_bytes = applied_cap().bytes;
  }
  return m;
}

}  // namespace benchfleet::worker
