#include "agent/worker/oom.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "common/shared_rules.h"

namespace benchfleet::worker {

bool is_oom_message(std::string_view m) {
  // The needles the python runtime uses too (common/rules/oom_messages.json).
  static const std::vector<std::string> needles = shared_rule("oom_messages.json").at("needles");
  return std::any_of(needles.begin(), needles.end(),
                     [&](const std::string& needle) { return m.find(needle) != std::string_view::npos; });
}

bool is_mapping_failure(std::string_view m) {
  return m.find("failed to map segment from shared object") != std::string_view::npos;
}

bool is_oom_failure(std::string_view message, bool allocator_counted_oom, bool under_cpu_cap) {
  return allocator_counted_oom || is_oom_message(message) || (under_cpu_cap && is_mapping_failure(message));
}

std::optional<std::int64_t> oom_bytes_requested(std::string_view m) {
  // CPU: "you tried to allocate 1234567 bytes."
  // CPU says "you tried to allocate", CUDA "Tried to allocate": compare case-insensitively.
  std::string lowered(m);
  for (auto& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (auto pos = lowered.find("tried to allocate "); pos != std::string::npos) {
    const std::string_view rest = m.substr(pos + 18);
    double value = 0;
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), value);
    if (ec != std::errc()) return std::nullopt;
    std::string_view unit = rest.substr(static_cast<std::size_t>(end - rest.data()));
    while (!unit.empty() && unit.front() == ' ') unit.remove_prefix(1);
    double scale = 1;
    if (unit.rfind("KiB", 0) == 0)
      scale = 1024.0;
    else if (unit.rfind("MiB", 0) == 0)
      scale = 1024.0 * 1024;
    else if (unit.rfind("GiB", 0) == 0)
      scale = 1024.0 * 1024 * 1024;
    else if (unit.rfind("TiB", 0) == 0)
      scale = 1024.0 * 1024 * 1024 * 1024;
    else if (unit.rfind("bytes", 0) != 0 && unit.rfind('B', 0) != 0)
      return std::nullopt;
    return static_cast<std::int64_t>(std::llround(value * scale));
  }
  return std::nullopt;
}

std::string_view oom_line(std::string_view message) {
  std::size_t start = 0;
  while (start < message.size()) {
    std::size_t end = message.find('\n', start);
    if (end == std::string_view::npos) end = message.size();
    const std::string_view line = message.substr(start, end - start);
    if (is_oom_message(line)) return line;
    start = end + 1;
  }
  return message;
}

}  // namespace benchfleet::worker
