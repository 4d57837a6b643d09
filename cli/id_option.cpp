#include "cli/id_option.h"

#include <string>

namespace benchfleet::cli {

CLI::Validator positive_id() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        if (value.empty() || value.size() > 18 || value.find_first_not_of("0123456789") != std::string::npos ||
            std::stoll(value) < 1) {
          return "must be a positive integer id, got \"" + value + "\"";
        }
        return {};
      },
      "ID");
}

}  // namespace benchfleet::cli
