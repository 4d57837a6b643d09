// Number formatting shared by the report builder and renderers and the CLI.
// Locale-independent (std::to_chars), so a host's locale never turns "9.325" into "9,325".
#pragma once

#include <string>

namespace benchfleet {

// Fixed notation with `decimals` digits: format_fixed(9.3249, 3) == "9.325".
std::string format_fixed(double value, int decimals);

// Shortest text that reads back as the same double: format_shortest(1.5) == "1.5".
std::string format_shortest(double value);

// `digits` significant digits, fixed or scientific as is shorter: format_significant(0.04912, 3)
// == "0.0491", format_significant(1.234e-5, 3) == "1.23e-05".
std::string format_significant(double value, int digits);

}  // namespace benchfleet
