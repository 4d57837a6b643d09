// Recognising a failure that means "this dtype cannot run here" (docs/design.md §11): a kernel,
// compiler or device without the job's reduced-precision dtype (e.g. 1.13's CPU conv2d:
// "slow_conv2d_cpu" not implemented for 'Half'). Such a job is `unsupported` with that line, in
// whichever phase it failed, not an `error`.
//
// The rule lives in common/rules/unsupported_dtype.json, embedded here at build time and read
// by the python exporter and runner too (agent/python/benchfleet_unsupported_dtype.py), so both
// runtimes judge a message alike; tests/data/unsupported_dtype_cases.json holds the messages
// both are tested on.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace benchfleet {

// The first line of `message` (split at '\n', each cut to the rule's max_line_chars and
// stripped of surrounding blanks) that says this build or device lacks `dtype`, or nullopt; always
// nullopt for a dtype the rule does not judge (float32). Thread-safe; the patterns are compiled
// once, at the first call.
std::optional<std::string> unsupported_dtype_line(std::string_view dtype, std::string_view message);

}  // namespace benchfleet
