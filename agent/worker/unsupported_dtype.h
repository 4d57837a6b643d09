// Recognising a failure that means "this dtype cannot run here": a LibTorch kernel without an
// implementation for the job's dtype on its device (e.g. 1.13's CPU conv2d: "slow_conv2d_cpu" not
// implemented for 'Half'). Such a job is `unsupported` with that line, in whichever phase it
// failed, not an `error`.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace benchfleet::worker {

// The line of `what` that says a kernel lacks a reduced-precision dtype, or nullopt.
std::optional<std::string> dtype_not_implemented(std::string_view what);

}  // namespace benchfleet::worker
