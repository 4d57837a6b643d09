// Read-only GPU telemetry through NVML, loaded at run time (dlopen), so the worker runs on
// hosts without the driver. Never changes clocks, power limits or modes.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace benchfleet::worker::nvml {

// The fingerprint's driver version, and of the GPU with this UUID its SM application clock
// (sm_app_clock_mhz) and enforced power limit (power_limit_w); {} when NVML is not loadable,
// without the GPU's keys when it is not found.
nlohmann::json driver_fingerprint(const std::string& gpu_uuid);
// sm/mem clocks (MHz), temperature (C), power (W) and the throttle-reason bitmask of the GPU
// with this UUID; {} when NVML is not loadable or the GPU is not found.
nlohmann::json read_telemetry(const std::string& gpu_uuid);

}  // namespace benchfleet::worker::nvml
