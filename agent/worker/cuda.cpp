// CUDA support (compiled only when LibTorch has CUDA). Targets LibTorch 2.x; where its API
// changed between versions, agent/worker/CMakeLists.txt probes the headers at configure time
// (cmake/TorchApi.cmake) and says which form to use:
//   BENCHFLEET_CUDA_STAT_TYPE        the allocator's StatType (c10::CachingDeviceAllocator from 2.6,
//                                    c10::cuda::CUDACachingAllocator before)
//   BENCHFLEET_HAVE_LAZY_INIT_DEVICE at::Context::lazyInitDevice (2.6+; lazyInitCUDA before)
#include "agent/worker/cuda.h"

#include <ATen/Context.h>
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/cuda.h>

#include <cstdio>
#include <vector>

#include "agent/worker/nvml.h"

namespace benchfleet::worker::cuda {
namespace {

constexpr std::size_t kAggregate = static_cast<std::size_t>(BENCHFLEET_CUDA_STAT_TYPE::AGGREGATE);

// CUDA and LibTorch's CUDA state (hooks, caching allocator) for the visible devices. Recent
// allocators refuse setMemoryFraction and report no stats before this ("Allocator not
// initialized"); a first CUDA tensor would do it too, but would leave a cached block behind.
void init_device() {
#if BENCHFLEET_HAVE_LAZY_INIT_DEVICE
  at::globalContext().lazyInitDevice(c10::DeviceType::CUDA);
#else
  at::globalContext().lazyInitCUDA();
#endif
}

std::string uuid_string(const cudaUUID_t& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  char out[64];
  std::snprintf(out, sizeof out, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return out;
}

// Event pairs from a pool created up front: creating a CUDA event inside the timed window
// (at::cuda::CUDAEvent creates its event at the first record) would add host work between a
// stop event and the work it follows.
class EventTimer final : public IterationTimer {
 public:
  explicit EventTimer(std::size_t batch) { grow(batch == 0 ? 1 : batch); }
  ~EventTimer() override {
    for (auto& [start, stop] : pool_) {
      cudaEventDestroy(start);  // at exit: a failure here has no one to tell
      cudaEventDestroy(stop);
    }
  }
  EventTimer(const EventTimer&) = delete;
  EventTimer& operator=(const EventTimer&) = delete;

  void time(const std::function<void()>& fn) override {
    if (used_ == pool_.size()) grow(pool_.size());  // a batch ran longer: more, before the window
    const auto& [start, stop] = pool_[used_++];
    const cudaStream_t stream = at::cuda::getCurrentCUDAStream().stream();
    C10_CUDA_CHECK(cudaEventRecord(start, stream));
    fn();
    C10_CUDA_CHECK(cudaEventRecord(stop, stream));
  }
  void harvest(std::vector<double>& samples_ms) override {
    if (used_ == 0) return;
    C10_CUDA_CHECK(cudaEventSynchronize(pool_[used_ - 1].second));  // one wait for the whole batch
    for (std::size_t i = 0; i < used_; ++i) {
      float ms = 0;
      C10_CUDA_CHECK(cudaEventElapsedTime(&ms, pool_[i].first, pool_[i].second));
      samples_ms.push_back(static_cast<double>(ms));
    }
    used_ = 0;
  }

 private:
  void grow(std::size_t more) {
    for (std::size_t i = 0; i < more; ++i) {
      cudaEvent_t start = nullptr, stop = nullptr;
      C10_CUDA_CHECK(cudaEventCreate(&start));
      if (const cudaError_t e = cudaEventCreate(&stop); e != cudaSuccess) {
        cudaEventDestroy(start);
        C10_CUDA_CHECK(e);
      }
      pool_.emplace_back(start, stop);
    }
  }

  std::vector<std::pair<cudaEvent_t, cudaEvent_t>> pool_;
  std::size_t used_ = 0;  // pairs recorded since the last harvest
};

// Ends a stream capture that a failed step or capture_end left open, so the stream (and, in
// the global capture mode, every other stream of the process) can be used again, and clears
// the sticky error the failure left. The caller rethrows the original failure.
void abandon_capture(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &status) == cudaSuccess && status != cudaStreamCaptureStatusNone) {
    cudaGraph_t partial = nullptr;
    if (cudaStreamEndCapture(stream, &partial) == cudaSuccess && partial != nullptr) cudaGraphDestroy(partial);
  }
  (void)cudaGetLastError();
}

class CapturedGraph final : public Graph {
 public:
  void replay() override { graph_.replay(); }
  at::cuda::CUDAGraph graph_;
};

}  // namespace

bool compiled() { return true; }
bool available() { return torch::cuda::is_available() && torch::cuda::device_count() > 0; }

Status set_memory_fraction_for(std::int64_t bytes) {
  if (bytes <= 0) return Error::invalid("memory_limit_mb", "must be positive");
  init_device();
  const auto* props = at::cuda::getDeviceProperties(0);
  const double total = static_cast<double>(props->totalGlobalMem);
  if (static_cast<std::uint64_t>(bytes) >= props->totalGlobalMem) return Status::Ok();  // above the card: no cap
  c10::cuda::CUDACachingAllocator::setMemoryFraction(static_cast<double>(bytes) / total, 0);
  return Status::Ok();
}

void fill_peak_memory(MemoryInfo& m) {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
  m.peak_allocated_bytes = stats.allocated_bytes[kAggregate].peak;
  m.peak_reserved_bytes = stats.reserved_bytes[kAggregate].peak;
}

void reset_peak_memory() { c10::cuda::CUDACachingAllocator::resetPeakStats(0); }

std::int64_t oom_count() {
  if (!available()) return 0;
  init_device();
  return c10::cuda::CUDACachingAllocator::getDeviceStats(0).num_ooms;
}

std::unique_ptr<IterationTimer> make_event_timer(std::size_t batch) { return std::make_unique<EventTimer>(batch); }

void synchronize() { c10::cuda::device_synchronize(); }

nlohmann::json fingerprint() {
  const auto* p = at::cuda::getDeviceProperties(0);
  int runtime = 0, driver_api = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver_api);
  nlohmann::json out = {{"gpu_name", p->name},
                        {"gpu_uuid", uuid_string(p->uuid)},
                        {"gpu_sm", std::to_string(p->major) + "." + std::to_string(p->minor)},
                        {"gpu_memory_mb", static_cast<std::int64_t>(p->totalGlobalMem / (std::size_t{1024} * 1024))},
                        {"cuda_runtime", runtime},
                        {"cuda_driver_api", driver_api},
                        {"cudnn", at::detail::getCUDAHooks().versionCuDNN()}};
  const nlohmann::json driver = nvml::driver_fingerprint(out["gpu_uuid"].get<std::string>());
  for (const auto& [k, v] : driver.items()) out[k] = v;
  return out;
}

nlohmann::json telemetry() {
  const auto* p = at::cuda::getDeviceProperties(0);
  return nvml::read_telemetry(uuid_string(p->uuid));
}

Result<std::unique_ptr<Graph>> capture(const std::function<void()>& step) {
  auto graph = std::make_unique<CapturedGraph>();
  auto side = at::cuda::getStreamFromPool();
  // The warm-up ran on the current stream: it must be done before the side stream reads the
  // same inputs and the allocator hands its freed blocks to the side stream.
  synchronize();
  {
    c10::cuda::CUDAStreamGuard guard(side);
    step();  // one more warm-up on the capture stream
    side.synchronize();
    try {
      graph->graph_.capture_begin();
      step();
      graph->graph_.capture_end();
    } catch (...) {
      abandon_capture(side.stream());
      throw;
    }
  }
  synchronize();
  return std::unique_ptr<Graph>(std::move(graph));
}

}  // namespace benchfleet::worker::cuda
