// How busy the host was with work other than a job while the job ran: what a comparison needs to
// know to warn that one side was measured on a contended machine (the fingerprint's high_load).
//
//   HostSample before = HostSample::now();
//   ... the worker runs and is reaped ...
//   HostLoad load = other_load(before, HostSample::now());
//   // load.other_fraction: the share of the host's CPU time that went to other processes
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace benchfleet::agent {

// The host's CPU time from /proc/stat's aggregate "cpu" line, in clock ticks over all CPUs.
struct CpuTimes {
  std::uint64_t busy = 0;   // user + nice + system + irq + softirq + steal
  std::uint64_t total = 0;  // busy + idle + iowait
};
// nullopt when `proc_stat` has no well-formed "cpu " line.
std::optional<CpuTimes> parse_proc_stat(std::string_view proc_stat);

// The host's CPU times and the CPU time of this process's reaped children (getrusage
// RUSAGE_CHILDREN: the job's worker and its children once it has been waited for).
struct HostSample {
  std::optional<CpuTimes> cpu;
  double children_cpu_s = 0;
  static HostSample now();
};

// A fraction of the host's CPU capacity above which a job counts as measured under high load:
// a quarter of every CPU busy with other work.
inline constexpr double kHighLoadFraction = 0.25;

struct HostLoad {
  double other_fraction = 0;  // 0..1 of the host's CPU time between the samples
  bool high = false;          // other_fraction >= kHighLoadFraction
};

// The share of the host's CPU time between `before` and `after` that its children did not use
// (other processes, this agent's other slots' jobs still running among them), with `ticks_per_s`
// clock ticks a second. nullopt without /proc/stat readings or when no time passed.
std::optional<HostLoad> other_load(const HostSample& before, const HostSample& after, long ticks_per_s);
// The same with this host's clock tick rate.
std::optional<HostLoad> other_load(const HostSample& before, const HostSample& after);

}  // namespace benchfleet::agent
