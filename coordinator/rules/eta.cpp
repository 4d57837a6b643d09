#include "coordinator/rules/eta.h"

#include <algorithm>
#include <cstddef>
#include <functional>

namespace benchfleet::rules {
namespace {

// The mean duration of the finished jobs of the groups `pick` accepts; nullopt if none.
std::optional<double> mean_of(const std::vector<ModeTimes>& times, const std::function<bool(const ModeTimes&)>& pick) {
  int n = 0;
  double sum = 0;
  for (const ModeTimes& t : times) {
    if (t.timed <= 0 || !pick(t)) continue;
    n += t.timed;
    sum += t.timed_ms;
  }
  if (n == 0) return std::nullopt;
  return sum / n;
}

}  // namespace

std::optional<double> expected_ms(const std::vector<ModeTimes>& times, const ModeTimes& of) {
  const bool compiled = is_compiled(of.mode);
  if (of.timed > 0) return of.timed_ms / of.timed;
  if (auto m = mean_of(
          times, [&](const ModeTimes& t) { return t.runtime == of.runtime && is_compiled(t.mode) == compiled; })) {
    return m;
  }
  if (auto m = mean_of(times, [&](const ModeTimes& t) { return is_compiled(t.mode) == compiled; })) return m;
  return mean_of(times, [](const ModeTimes&) { return true; });
}

std::optional<double> seconds_left(const std::vector<ModeTimes>& times) {
  double work_ms = 0;
  std::size_t running = 0;
  for (const ModeTimes& t : times) {
    if (t.queued == 0 && t.running_elapsed_ms.empty()) continue;
    const std::optional<double> expected = expected_ms(times, t);
    if (!expected) return std::nullopt;
    work_ms += *expected * t.queued;
    for (double elapsed : t.running_elapsed_ms) {
      work_ms += elapsed < *expected ? *expected - elapsed : elapsed / 2;
    }
    running += t.running_elapsed_ms.size();
  }
  return work_ms / 1000 / static_cast<double>(std::max<std::size_t>(1, running));
}

}  // namespace benchfleet::rules
