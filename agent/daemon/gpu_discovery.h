// Which GPUs this host has, and what class each belongs to (docs/design.md §10: a100, v100, ...).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "common/types.h"

namespace benchfleet::agent {

// The query the agent runs; its CSV output is what parse_nvidia_smi reads.
inline constexpr std::string_view kNvidiaSmiQuery =
    "--query-gpu=index,uuid,name,memory.total,driver_version,compute_cap --format=csv,noheader,nounits";

// Parses `nvidia-smi <kNvidiaSmiQuery>` output: one GPU per line,
// "0, GPU-5d5a..., NVIDIA A100-SXM4-40GB, 40960, 535.104.05, 8.0". Errors name the line.
Result<std::vector<GpuInfo>> parse_nvidia_smi(std::string_view csv);

// The GPU class of a device name: "NVIDIA A100-SXM4-80GB" -> "a100", "Tesla V100-SXM2-16GB" ->
// "v100", "Tesla T4" -> "t4", "NVIDIA H100 80GB HBM3" -> "h100", "NVIDIA A10G" -> "a10g".
// Unknown names keep a sanitized class: lower case, [a-z0-9-] only, vendor words dropped
// ("NVIDIA GeForce RTX 4090" -> "geforce-rtx-4090").
std::string gpu_class_for(std::string_view device_name);

struct Discovery {
  std::vector<GpuInfo> gpus;
  std::string note;  // why there are none ("nvidia-smi not found", its error...), for the log
};

// Runs nvidia-smi (found on PATH) and parses it. Never fails: no driver means no GPUs, with a
// note saying why.
Discovery discover_gpus();

// Slots for the GPUs (ids "gpu<index>", classes from gpu_class_for), restricted to
// `selected` (UUIDs or indices) when it is not empty; one "cpu" slot when there are none.
std::vector<SlotDescriptor> slots_for(const std::vector<GpuInfo>& gpus, const std::vector<std::string>& selected,
                                      std::optional<std::int64_t> memory_limit_mb);

}  // namespace benchfleet::agent
