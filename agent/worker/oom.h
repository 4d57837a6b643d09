// Recognising out-of-memory failures across LibTorch versions and devices.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace benchfleet::worker {

// True for the messages LibTorch's allocators throw when memory runs out: CPU
// ("DefaultCPUAllocator: can't allocate memory"), CUDA ("CUDA out of memory", also
// c10::OutOfMemoryError on torch >= 2), and std::bad_alloc ("std::bad_alloc").
bool is_oom_message(std::string_view message);

// True for a shared library that could not be mapped ("failed to map segment from shared
// object", from dlopen: an AOTInductor package's model .so). Under a CPU memory cap that is the
// address space running out; without one it may be something else (a noexec mount), so callers
// count it as out-of-memory only under a cap.
bool is_mapping_failure(std::string_view message);

// Whether a failure is an out-of-memory: its `message` says so (is_oom_message); or the CUDA
// caching allocator counted a new out-of-memory while the job ran (`allocator_counted_oom`: its
// num_ooms grew), whatever the message, since a runtime may turn the allocator's error into a
// generic one (AOTInductor: "run_func_(...) API call failed"); or, only `under_cpu_cap`, a
// model library could not be mapped (is_mapping_failure).
bool is_oom_failure(std::string_view message, bool allocator_counted_oom, bool under_cpu_cap);

// The bytes the failed allocation asked for, when the message says: "you tried to allocate
// 123 bytes" (CPU) or "Tried to allocate 2.50 GiB" (CUDA).
std::optional<std::int64_t> oom_bytes_requested(std::string_view message);

// The line of `message` that reports the failed allocation (interpreter tracebacks dropped),
// or the whole message when no line does.
std::string_view oom_line(std::string_view message);

}  // namespace benchfleet::worker
