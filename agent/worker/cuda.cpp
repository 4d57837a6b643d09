// CUDA support (compiled only when LibTorch has CUDA). Targets the LibTorch 2.x API.
#include "agent/worker/cuda.h"

#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <ATen/detail/CUDAHooksInterface.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#include <torch/cuda.h>

#include <cstdio>
#include <vector>

#include "agent/worker/nvml.h"

namespace benchfleet::worker::cuda {
namespace {

constexpr std::size_t kAggregate = static_cast<std::size_t>(c10::CachingAllocator::StatType::AGGREGATE);

std::string uuid_string(const cudaUUID_t& uuid) {
  const auto* b = reinterpret_cast<const unsigned char*>(uuid.bytes);
  char out[64];
  std::snprintf(out, sizeof out, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14], b[15]);
  return out;
}

class EventTimer final : public IterationTimer {
 public:
  void time(const std::function<void()>& fn) override {
    auto& pair = pending_.emplace_back(at::cuda::CUDAEvent(cudaEventDefault), at::cuda::CUDAEvent(cudaEventDefault));
    const auto stream = at::cuda::getCurrentCUDAStream();
    pair.first.record(stream);
    fn();
    pair.second.record(stream);
  }
  void harvest(std::vector<double>& samples_ms) override {
    if (pending_.empty()) return;
    pending_.back().second.synchronize();  // one synchronize for the whole batch of iterations
    for (auto& [start, stop] : pending_) samples_ms.push_back(static_cast<double>(start.elapsed_time(stop)));
    pending_.clear();
  }

 private:
  std::vector<std::pair<at::cuda::CUDAEvent, at::cuda::CUDAEvent>> pending_;
};

class CapturedGraph final : public Graph {
 public:
  void replay() override { graph_.replay(); }
  at::cuda::CUDAGraph graph_;
};

}  // namespace

bool compiled() { return true; }
bool available() { return torch::cuda::is_available() && torch::cuda::device_count() > 0; }

Status set_memory_fraction_for(std::int64_t bytes) {
  const auto* props = at::cuda::getDeviceProperties(0);
  const double total = static_cast<double>(props->totalGlobalMem);
  if (bytes >= props->totalGlobalMem) return Status::Ok();  // a cap above the card is no cap
  c10::cuda::CUDACachingAllocator::setMemoryFraction(static_cast<double>(bytes) / total, 0);
  return Status::Ok();
}

void fill_peak_memory(MemoryInfo& m) {
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
  m.peak_allocated_bytes = stats.allocated_bytes[kAggregate].peak;
  m.peak_reserved_bytes = stats.reserved_bytes[kAggregate].peak;
}

void reset_peak_memory() { c10::cuda::CUDACachingAllocator::resetPeakStats(0); }

std::unique_ptr<IterationTimer> make_event_timer() { return std::make_unique<EventTimer>(); }

void synchronize() { c10::cuda::device_synchronize(); }

nlohmann::json fingerprint() {
  const auto* p = at::cuda::getDeviceProperties(0);
  int runtime = 0, driver = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  nlohmann::json out = {{"gpu_name", p->name},
                        {"gpu_uuid", uuid_string(p->uuid)},
                        {"gpu_sm", std::to_string(p->major) + "." + std::to_string(p->minor)},
                        {"gpu_memory_mb", static_cast<std::int64_t>(p->totalGlobalMem / (1024 * 1024))},
                        {"cuda_runtime", runtime},
                        {"cuda_driver_api", driver},
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
  {
    c10::cuda::CUDAStreamGuard guard(side);
    step();  // one more warm-up on the capture stream
    side.synchronize();
    graph->graph_.capture_begin();
    step();
    graph->graph_.capture_end();
  }
  synchronize();
  return std::unique_ptr<Graph>(std::move(graph));
}

}  // namespace benchfleet::worker::cuda
