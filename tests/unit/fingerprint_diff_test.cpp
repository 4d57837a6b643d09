// What of a fingerprint changes speed, and how sides of a comparison differ in it
// (coordinator/rules/fingerprint_diff.h); the report's warnings built from it.
#include "coordinator/rules/fingerprint_diff.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "coordinator/report/render.h"
#include "coordinator/rules/report.h"
#include "tests/unit/report_cases.h"

namespace benchfleet::rules {
namespace {

using nlohmann::json;

std::string fp(int threads, const std::string& cpu = "AMD EPYC") {
  return speed_fingerprint({{"cpu_model", cpu}, {"cpu_threads", threads}, {"torch_version", "2.6.0"}, {"host", "h"}});
}

TEST(FingerprintDiff, TheSpeedFingerprintKeepsOnlyWhatChangesSpeed) {
  EXPECT_EQ(
      fp(2),
      R"({"cpu_model":"AMD EPYC","cpu_threads":2,"driver":null,"gpu_name":null,"high_load":null,"power_limit_w":null,"sm_app_clock_mhz":null})");
  EXPECT_EQ(
      speed_fingerprint({{"gpu_name", "NVIDIA H200"},
                         {"driver", "580.1"},
                         {"cpu_threads", true},
                         {"high_load", true},
                         {"host_other_load", 0.4}}),
      R"({"cpu_model":null,"cpu_threads":null,"driver":"580.1","gpu_name":"NVIDIA H200","high_load":true,"power_limit_w":null,"sm_app_clock_mhz":null})");
  EXPECT_EQ(
      speed_fingerprint({{"high_load", "yes"}}),
      R"({"cpu_model":null,"cpu_threads":null,"driver":null,"gpu_name":null,"high_load":null,"power_limit_w":null,"sm_app_clock_mhz":null})");
  EXPECT_EQ(
      speed_fingerprint(json::array()),
      R"({"cpu_model":null,"cpu_threads":null,"driver":null,"gpu_name":null,"high_load":null,"power_limit_w":null,"sm_app_clock_mhz":null})");
}

TEST(FingerprintDiff, DifferencesAreNamedPerSideAndUnknownsAreNot) {
  EXPECT_TRUE(fingerprint_differences({{"stable", {fp(2)}}, {"unstable", {fp(2)}}}).empty());
  auto d = fingerprint_differences({{"stable", {fp(2)}}, {"debian12", {fp(1)}}});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].key, "cpu_threads");
  EXPECT_EQ(d[0].text, "cpu_threads: stable 2; debian12 1");
  d = fingerprint_differences({{"a", {fp(2, "Xeon"), fp(1, "Xeon")}}, {"b", {}}});
  ASSERT_EQ(d.size(), 1u) << "a side whose results disagree";
  EXPECT_EQ(d[0].text, "cpu_threads: a 1, 2");
  EXPECT_TRUE(fingerprint_differences({{"a", {fp(2)}}, {"b", {speed_fingerprint(json::object())}}}).empty())
      << "b recorded nothing to compare";
  EXPECT_TRUE(fingerprint_differences({{"a", {"not json"}}, {"b", {fp(1)}}}).empty());
}

TEST(FingerprintDiff, AGpusConfiguredClockAndPowerLimitAreComparedItsClockOfTheMomentIsNot) {
  const auto gpu = [](int app_clock, int power_limit, int sm_clock_now) {
    return speed_fingerprint({{"gpu_name", "NVIDIA H200"},
                              {"driver", "580.1"},
                              {"sm_app_clock_mhz", app_clock},
                              {"power_limit_w", power_limit},
                              {"sm_clock_mhz", sm_clock_now}});
  };
  EXPECT_TRUE(fingerprint_differences({{"a", {gpu(1980, 700, 1980)}}, {"b", {gpu(1980, 700, 1755)}}}).empty())
      << "the clock of the moment varies; the clock_drop and throttled flags judge it";
  const auto d = fingerprint_differences({{"a", {gpu(1980, 700, 1980)}}, {"b", {gpu(1410, 500, 1410)}}});
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].text, "power_limit_w: a 700; b 500");
  EXPECT_EQ(d[1].text, "sm_app_clock_mhz: a 1980; b 1410");
}

TEST(FingerprintDiff, ASideMeasuredUnderHighLoadIsWarnedAbout) {
  const auto loaded = [](bool high) {
    return speed_fingerprint({{"cpu_model", "AMD EPYC"}, {"cpu_threads", 2}, {"high_load", high}});
  };
  EXPECT_TRUE(fingerprint_differences({{"stable", {loaded(false)}}, {"unstable", {loaded(false)}}}).empty());
  const auto d = fingerprint_differences({{"stable", {loaded(false)}}, {"unstable", {loaded(true), loaded(false)}}});
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].key, "high_load");
  EXPECT_EQ(d[0].text, "high_load: stable false; unstable false, true");
  EXPECT_TRUE(fingerprint_differences({{"stable", {loaded(true)}}, {"old", {fp(2)}}}).empty())
      << "results from before the flag are not compared on it";
}

TEST(FingerprintDiff, AReportOfTwoBuildsOnUnequalThreadsWarnsAndEqualOnesDoNot) {
  using namespace rules::cases;  // NOLINT(google-build-using-namespace): the report inputs
  rules::ReportInput in = seeds_like();
  in.matrix.torch_builds = {"stable", "debian12"};
  in.cells = {ok(job(kVit, 1, Mode::kEager, "a100", "stable"), 10, 10, 1),
              ok(job(kVit, 1, Mode::kEager, "a100", "debian12"), 15, 15, 2)};
  in.cells[0].fingerprint = fp(2);
  in.cells[1].fingerprint = fp(1);
  rules::Report r = rules::build_report(in);
  EXPECT_EQ(r.tables[0].fingerprint_warnings, (std::vector<std::string>{"cpu_threads: stable 2; debian12 1"}));
  EXPECT_EQ(r.tables[0].columns[0].fingerprints, (std::vector<std::string>{fp(2)}));
  EXPECT_NE(report::render_markdown(r).find("⚠ The builds compared here differ in what changes speed, not only in "
                                            "their torch: cpu\\_threads: stable 2; debian12 1"),
            std::string::npos)
      << report::render_markdown(r);
  const json j = json::parse(report::render_json(r));
  EXPECT_EQ(j["tables"][0]["fingerprint_warnings"][0], "cpu_threads: stable 2; debian12 1");
  EXPECT_EQ(j["tables"][0]["columns"][0]["fingerprints"][0]["cpu_threads"], 2);

  in.cells[1].fingerprint = fp(2);
  r = rules::build_report(in);
  EXPECT_TRUE(r.tables[0].fingerprint_warnings.empty());
  EXPECT_EQ(report::render_markdown(r).find("⚠"), std::string::npos);
}

}  // namespace
}  // namespace benchfleet::rules
