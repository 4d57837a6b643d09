// Everything CUDA-specific in one place. cuda.cpp is compiled when LibTorch has CUDA,
// cuda_absent.cpp otherwise (then every query says "no CUDA", nothing pretends).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/worker/timing.h"
#include "common/result.h"
#include "common/types.h"

namespace benchfleet::worker::cuda {

// True when this worker was built with CUDA support.
bool compiled();
// True when a CUDA device is usable (compiled() and a visible device).
bool available();
// Caps the caching allocator of device 0 at `bytes` (per-process memory fraction). Initialises
// CUDA and the allocator first (recent LibTorch refuses a fraction before that).
Status set_memory_fraction_for(std::int64_t bytes);
// Allocator peaks (allocated, reserved) of device 0.
void fill_peak_memory(MemoryInfo& m);
void reset_peak_memory();
// How many allocations the caching allocator of device 0 has refused so far (its num_ooms
// counter; 0 without CUDA). An out-of-memory is recognised by this counter growing, also where
// a runtime (AOTInductor) reports only a generic failure.
std::int64_t oom_count();
// Event pairs recorded on the current stream; one synchronize per harvest(). The events of
// `batch` iterations are created up front, outside any timed window (more are created at a
// harvest if a batch runs longer).
std::unique_ptr<IterationTimer> make_event_timer(std::size_t batch);
// Waits for all work on the device.
void synchronize();
// Device name, UUID, compute capability, CUDA/cuDNN versions (flat map for the fingerprint).
nlohmann::json fingerprint();
// Clocks, temperature, power and throttle reasons where readable (NVML), else empty.
nlohmann::json telemetry();

// A CUDA graph captured from `step` (which must use static input/output buffers) and replayed.
class Graph {
 public:
  virtual ~Graph() = default;
  virtual void replay() = 0;
};
// Captures `step` on a side stream after the caller has warmed it up.
Result<std::unique_ptr<Graph>> capture(const std::function<void()>& step);

}  // namespace benchfleet::worker::cuda
