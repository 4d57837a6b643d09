// CUDA support for a LibTorch without CUDA: nothing is available, and callers that need it
// report `unsupported` (see capabilities.h) instead of reaching these functions.
#include "agent/worker/cuda.h"

namespace benchfleet::worker::cuda {

bool compiled() { return false; }
bool available() { return false; }
Status set_memory_fraction_for(std::int64_t) { return Error::internal("this worker was built without CUDA"); }
void fill_peak_memory(MemoryInfo&) {}
void reset_peak_memory() {}
std::int64_t oom_count() { return 0; }
std::unique_ptr<IterationTimer> make_event_timer(std::size_t) { return make_cpu_timer(); }
void synchronize() {}
nlohmann::json fingerprint() { return nlohmann::json::object(); }
nlohmann::json telemetry() { return nlohmann::json::object(); }
Result<std::unique_ptr<Graph>> capture(const std::function<void()>&) {
  return Error::internal("this worker was built without CUDA");
}

}  // namespace benchfleet::worker::cuda
