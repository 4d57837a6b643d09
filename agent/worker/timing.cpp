#include "agent/worker/timing.h"

#include <chrono>

namespace benchfleet::worker {
namespace {

class CpuTimer final : public IterationTimer {
 public:
  void time(const std::function<void()>& fn) override {
    const auto start = std::chrono::steady_clock::now();
    fn();
    pending_.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  void harvest(std::vector<double>& samples_ms) override {
    samples_ms.insert(samples_ms.end(), pending_.begin(), pending_.end());
    pending_.clear();
  }

 private:
  std::vector<double> pending_;
};

}  // namespace

std::unique_ptr<IterationTimer> make_cpu_timer() { return std::make_unique<CpuTimer>(); }

}  // namespace benchfleet::worker
