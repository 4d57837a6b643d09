#include "agent/worker/unsupported_dtype.h"

#include <array>

namespace benchfleet::worker {

std::optional<std::string> dtype_not_implemented(std::string_view what) {
  // LibTorch's wording (AT_DISPATCH: "\"op\" not implemented for 'Half'") and the dtype names
  // some kernels check by hand.
  static constexpr std::array<std::string_view, 6> kMarkers = {
      "not implemented for 'Half'", "not implemented for 'BFloat16'", "not implemented for 'ComplexHalf'",
      "does not support Half",      "does not support BFloat16",      "Unsupported dtype Half"};
  std::size_t start = 0;
  while (start < what.size()) {
    std::size_t end = what.find('\n', start);
    if (end == std::string_view::npos) end = what.size();
    const std::string_view line = what.substr(start, end - start);
    for (const auto marker : kMarkers) {
      if (line.find(marker) != std::string_view::npos) return std::string(line.substr(0, 1000));
    }
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace benchfleet::worker
