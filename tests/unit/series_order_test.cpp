// Series order (coordinator/rules/series_order.h): version_sort_key's byte order is
// rules::version_less's order, so the store can sort points by a TEXT column.
#include "coordinator/rules/series_order.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "coordinator/rules/torch_version.h"

namespace benchfleet::rules {
namespace {

// Distinct as versions (no two equal as numbers, like "2.6" and "2.06", which share a key).
const std::vector<std::string> kVersions = {
    "",
    "1.13.0",
    "1.13.0a0",
    "1.13.0a0+gitabc123",
    "1.13.1",
    "2.5.1",
    "2.5.1+cu124",
    "2.6",
    "2.6.0",
    "2.6.0+cpu",
    "2.6.0+cu124",
    "2.6.0+cu126",
    "2.6.0+debian",
    "2.6.0.dev20241105",
    "2.6.0.dev20241106+cu124",
    "2.6.0.dev20241106+cu124.post1",
    "2.6.0.dev20241110",
    "2.6.0a0+git1c4a2b7",
    "2.6.0a0+git9d3e0f1",
    "2.6.0rc1",
    "2.7.0",
    "2.9.0",
    "2.10.0",
    "2.10.0.dev20250101+cu130",
    "2.10.1",
    "10.0",
    "abc",
    "v2",
    // Numbers past 12 digits: the escape keeps their order.
    "2.6.0+git999999999998",
    "2.6.0+git999999999999",
    "2.6.0+git1000000000000",
    "2.6.0+git9999999999999",
    "2.6.0+git12345678901234567890",
};

TEST(SeriesOrder, KeysSortAsVersionLessDoes) {
  std::vector<std::string> by_version = kVersions;
  std::sort(by_version.begin(), by_version.end(), rules::version_less);
  std::vector<std::string> by_key = kVersions;
  std::sort(by_key.begin(), by_key.end(),
            [](const std::string& a, const std::string& b) { return version_sort_key(a) < version_sort_key(b); });
  EXPECT_EQ(by_key, by_version);
  // Every pair, both ways, so a tie or an inversion anywhere shows.
  for (const std::string& a : kVersions) {
    for (const std::string& b : kVersions) {
      EXPECT_EQ(version_sort_key(a) < version_sort_key(b), rules::version_less(a, b)) << a << " vs " << b;
    }
  }
}

TEST(SeriesOrder, KeyShape) {
  EXPECT_EQ(version_sort_key(""), "");
  EXPECT_EQ(version_sort_key("2.10.0.dev20250101+cu130"),
            "000000000002.000000000010.000000000000.dev000020250101+cu000000000130");
  EXPECT_EQ(version_sort_key("2.06"), version_sort_key("2.6"));  // equal as versions
  EXPECT_EQ(version_sort_key("999999999999"),
            "999999999999"
            "12"
            "999999999999");
  EXPECT_EQ(version_sort_key("1234567890123"),
            "999999999999"
            "13"
            "1234567890123");
  EXPECT_LT(version_sort_key("2.9.0"), version_sort_key("2.10.0"));
  EXPECT_LT(version_sort_key("2.6.0.dev20241105"), version_sort_key("2.6.0.dev20241106+cu124"));
  EXPECT_LT(version_sort_key(""), version_sort_key("0"));
}

}  // namespace
}  // namespace benchfleet::rules
