// A process's resident memory as Linux reports it: for the tests and benchmarks that show a
// coordinator's memory curve.
#pragma once

#include <sys/types.h>

#include <fstream>
#include <string>

namespace benchfleet::testing {

// VmRSS of `pid` (/proc/<pid>/status) in MiB, or -1 when it cannot be read.
inline double resident_mib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  }
  return -1;
}

}  // namespace benchfleet::testing
