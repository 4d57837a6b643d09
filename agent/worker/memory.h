// Memory caps and peaks for one worker process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/result.h"
#include "common/types.h"

namespace benchfleet::worker {

// Caps what the job may use, emulating a smaller card.
//  cpu:  the address space may grow by at most `limit_mb` beyond what it is now (after
//        LibTorch has loaded and started its intra-op threads, and before the model is
//        loaded), via RLIMIT_AS; an allocation past it fails like a real out-of-memory (see
//        native_oom.h for the code that crashes instead).
//  cuda: the caching allocator's per-process memory fraction = limit / device total.
Status apply_memory_limit(const std::string& device, std::int64_t limit_mb);

// Lifts the CPU address-space cap again (after measuring), so reporting the verdict cannot
// itself run out of memory. No-op on CUDA and when no cap was applied.
void lift_memory_limit();

// Peak memory so far: RSS (always) and the CUDA caching allocator's peaks on cuda.
MemoryInfo peak_memory(const std::string& device);

// Current virtual size of this process in bytes (/proc/self/status VmSize), 0 if unknown.
std::int64_t virtual_size_bytes();

}  // namespace benchfleet::worker
