#include "agent/worker/timing.h"

#include <utility>

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

HarvestSchedule::HarvestSchedule(std::size_t batch, Clock::duration interval, Now now)
    : batch_(batch == 0 ? 1 : batch), interval_(interval), now_(std::move(now)), last_harvest_(now_()) {}

bool HarvestSchedule::iteration_timed() {
  if (batch_ == 1) return true;  // every iteration: no need for the clock
  ++pending_;
  const Clock::time_point now = now_();
  if (pending_ < batch_ && now - last_harvest_ < interval_) return false;
  pending_ = 0;
  last_harvest_ = now;
  return true;
}

}  // namespace benchfleet::worker
