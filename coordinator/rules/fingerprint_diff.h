// What in a result's environment fingerprint changes its speed, and how the sides of a comparison
// (two torch builds of one table, two runs) differ in it. A comparison of builds should differ in
// the torch build only: thread count, CPU or GPU model, driver and a host under high load (other
// work on a quarter of its CPU time or more while the job ran, agent/daemon/host_load.h) are
// warned about, and so are a GPU's configured SM clock and power limit; the torch versions differ
// by design and are named by the headers instead. Pure.
//   speed_fingerprint(env)
//     -> {"cpu_model":"AMD EPYC","cpu_threads":2,"driver":null,"gpu_name":null,"high_load":false}
//   fingerprint_differences({{"stable", {fp1}}, {"debian12", {fp2}}})
//     -> [{key "cpu_threads", text "cpu_threads: stable 2; debian12 1"}]
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace benchfleet::rules {

// The fingerprint keys that change a measurement's speed are speed_keys() (common/shared_rules.h,
// common/rules/speed_fingerprint.json), in the order they are stored. sm_app_clock_mhz and
// power_limit_w are a GPU's configured clock and power limit (not the clock of the moment, which
// the clock_drop and throttled flags judge per result).

// Those keys of `environment` (null where absent, or not a string or number; high_load: not a
// boolean) as compact JSON, keys
// sorted: the text the store keeps per result (results.fingerprint) and reports compare.
std::string speed_fingerprint(const nlohmann::json& environment);

struct FingerprintDifference {
  std::string key;   // "cpu_threads"
  std::string text;  // "cpu_threads: stable 2; debian12 1" (each side's distinct values)
};

// The speed keys whose recorded values differ between `sides` (name -> the speed fingerprints of
// its results). A side that recorded none of a key is not compared on it; a side whose own results
// disagree (2 and 1) differs from any other. Ordered as speed_keys().
std::vector<FingerprintDifference> fingerprint_differences(
    const std::vector<std::pair<std::string, std::vector<std::string>>>& sides);

}  // namespace benchfleet::rules
