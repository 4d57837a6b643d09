// How report headers name the torch versions results recorded (internal to benchfleet_report).
//   std::vector<std::string> v = {"2.6.0+debian"};
//   torch_versions_label(v) == "torch 2.6.0"
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace benchfleet::rules {

// Version order: runs of digits compare as numbers, everything else byte by byte, so
// "2.5.1" < "2.6.0" < "2.10.0" and "1.13.0" < "1.13.0a0". A strict weak order on any strings.
bool version_less(std::string_view a, std::string_view b);

// "torch 2.6.0", or "torch 2.5.1, 2.6.0" for several; "" for none. `versions`: distinct and in
// version_less order. Each is shown without its PEP 440 local suffix ("2.6.0+debian",
// "2.6.0+cu126" -> "2.6.0"), which names how a build was packaged rather than which torch it is,
// unless two of them differ only there ("2.6.0+cu124", "2.6.0+cu126"): then all are shown exact.
std::string torch_versions_label(const std::vector<std::string>& versions);

}  // namespace benchfleet::rules
