#include "common/number_format.h"

#include <array>
#include <charconv>

namespace benchfleet {

std::string format_fixed(double value, int decimals) {
  std::array<char, 512> buf{};  // fixed notation of DBL_MAX needs 309 digits
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), value, std::chars_format::fixed, decimals);
  if (ec != std::errc()) return "nan";
  return std::string(buf.data(), end);
}

std::string format_shortest(double value) {
  std::array<char, 64> buf{};
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), value);
  if (ec != std::errc()) return "nan";
  return std::string(buf.data(), end);
}

std::string format_significant(double value, int digits) {
  std::array<char, 64> buf{};
  auto [end, ec] = std::to_chars(buf.data(), buf.data() + buf.size(), value, std::chars_format::general, digits);
  if (ec != std::errc()) return "nan";
  return std::string(buf.data(), end);
}

}  // namespace benchfleet
