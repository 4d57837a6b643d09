// Memory caps and peaks for one worker process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/result.h"
#include "common/types.h"

namespace benchfleet::worker {

// Caps what the job may use, emulating a smaller card.
//  cpu:  the job may grow by at most `limit_mb` beyond what it is now (after LibTorch has loaded
//        and started its intra-op threads and BLAS, before the model is loaded): in RAM, held by
//        the memory cgroup the agent made for the job where it could (agent/daemon/
//        memory_cgroup.h; past it the kernel kills the worker and the agent reports the OOM);
//        else in address space, via RLIMIT_AS, where an allocation past it fails like a real
//        out-of-memory (see native_oom.h for the code that crashes instead).
//  cuda: the caching allocator's per-process memory fraction = limit / device total.
Status apply_memory_limit(const std::string& device, std::int64_t limit_mb);

// Lifts the CPU cap again (after measuring), so the accuracy check and reporting the verdict
// cannot themselves run out of memory. No-op on CUDA and when no cap was applied.
void lift_memory_limit();

// Keeps the job's current phase where the agent reads it when the kernel kills the worker at its
// memory cgroup's cap; nothing without one.
void note_phase(OomPhase phase);

// Peak memory so far: RSS (always) and the CUDA caching allocator's peaks on cuda; the cap applied.
MemoryInfo peak_memory(const std::string& device);

// Current virtual size of this process in bytes (/proc/self/status VmSize), 0 if unknown.
std::int64_t virtual_size_bytes();

}  // namespace benchfleet::worker
