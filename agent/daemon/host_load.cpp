#include "agent/daemon/host_load.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>
#include <string>

namespace benchfleet::agent {

std::optional<CpuTimes> parse_proc_stat(std::string_view proc_stat) {
  std::istringstream in{std::string(proc_stat)};
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("cpu ", 0) != 0) continue;
    std::istringstream fields(line.substr(4));
    // user nice system idle iowait irq softirq steal (guest time is counted in user already)
    std::array<std::uint64_t, 8> v{};
    std::size_t read = 0;
    while (read < v.size() && fields >> v[read]) ++read;
    if (read < 5) return std::nullopt;
    CpuTimes t;
    t.busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    t.total = t.busy + v[3] + v[4];
    return t;
  }
  return std::nullopt;
}

HostSample HostSample::now() {
  HostSample s;
  std::ifstream in("/proc/stat");
  std::stringstream text;
  text << in.rdbuf();
  s.cpu = parse_proc_stat(text.str());
  rusage usage{};
  if (getrusage(RUSAGE_CHILDREN, &usage) == 0) {
    const auto seconds = [](const timeval& t) {
      return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6;
    };
    s.children_cpu_s = seconds(usage.ru_utime) + seconds(usage.ru_stime);
  }
  return s;
}

std::optional<HostLoad> other_load(const HostSample& before, const HostSample& after, long ticks_per_s) {
  if (!before.cpu || !after.cpu || after.cpu->total <= before.cpu->total || ticks_per_s <= 0) return std::nullopt;
  const double total = static_cast<double>(after.cpu->total - before.cpu->total);
  const double busy = static_cast<double>(after.cpu->busy >= before.cpu->busy ? after.cpu->busy - before.cpu->busy : 0);
  const double ours = std::max(0.0, after.children_cpu_s - before.children_cpu_s) * static_cast<double>(ticks_per_s);
  HostLoad load;
  load.other_fraction = std::clamp((busy - ours) / total, 0.0, 1.0);
  load.high = load.other_fraction >= kHighLoadFraction;
  return load;
}

std::optional<HostLoad> other_load(const HostSample& before, const HostSample& after) {
  return other_load(before, after, sysconf(_SC_CLK_TCK));
}

}  // namespace benchfleet::agent
