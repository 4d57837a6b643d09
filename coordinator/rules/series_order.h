// How a series' points are ordered: by the torch version their result recorded, then by when it
// was recorded. Pure.
#pragma once

#include <string>
#include <string_view>

namespace benchfleet::rules {

// A key whose byte order is rules::version_less's order: every run of digits left-padded with
// zeros to 12 digits ("2.10.0.dev20250101+cu130" -> "000000000002.000000000010.000000000000.dev
// 000020250101+cu000000000130"), so "2.9.0" < "2.10.0" and nightlies sort by date. "" (no version
// recorded) sorts first. Numbers of 12 nines and longer (never in a torch version) are written as
// twelve nines, their digit count as two digits, and their digits, which keeps the order. Two
// versions equal as numbers ("2.06", "2.6") get the same key.
std::string version_sort_key(std::string_view version);

}  // namespace benchfleet::rules
