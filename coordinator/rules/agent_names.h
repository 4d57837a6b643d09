// When two agent names are one name to a reader: the same after removing surrounding spaces,
// NFKC normalisation with case folding (upper case, fullwidth digits, NFD accents) and Unicode's
// confusable skeleton (UTS #39: a Cyrillic "е" for a Latin "e"). Enrolment refuses a new name
// whose key an enrolled agent's name has, so a look-alike cannot pass for that agent in the
// CLI's or the dashboard's lists.
//   if (agent_name_key(new_name) == agent_name_key(enrolled)) refuse(...);
// Pure (ICU).
#pragma once

#include <string>
#include <string_view>

namespace benchfleet::rules {

// The comparison key of a name that passed display_name_problem (valid UTF-8). Two names are one
// when their keys are equal; the key itself is not for display.
std::string agent_name_key(std::string_view name);

}  // namespace benchfleet::rules
