// What simulated agents post: a plausible "ok" result, shared by the coordinator load benchmark
// (bench/load_agent.cpp) and the coordinator kill fault test (tests/fault/sim_fleet.cpp).
#pragma once

#include <cstdint>

#include "common/types.h"

namespace benchfleet::testing {

// 30 latencies around 12 ms drawn from `seed`, with the statistics computed from them (so the
// coordinator's consistency checks pass), a 250 ms first call and a fixed-count stop.
JobResult plausible_ok_result(std::uint64_t seed);

}  // namespace benchfleet::testing
