// The rules the C++ programs share with the python modules (common/shared_rules.h; the python
// side's tests are agent/python/tests/test_shared_rules.py): unsupported_dtype_line
// (common/unsupported_dtype.h) against tests/data/unsupported_dtype_cases.json, the messages the
// python side is judged on too, so the worker, the exporter and the runner find the same reason in
// each; and the measurement limits the codecs and result checks take from measurement_limits.json.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/codecs.h"
#include "common/shared_rules.h"
#include "common/types.h"
#include "common/unsupported_dtype.h"

namespace benchfleet {
namespace {

using nlohmann::json;

json rule_file(const std::string& name) {
  std::ifstream in(std::string(BENCHFLEET_SOURCE_DIR) + "/common/rules/" + name);
  EXPECT_TRUE(in.good()) << "common/rules/" << name << " is missing";
  return json::parse(in);
}

TEST(SharedRules, TheBuildCarriesTheFilesOfTheTree) {
  EXPECT_EQ(shared_rule("unsupported_dtype.json"), rule_file("unsupported_dtype.json"));
  EXPECT_EQ(shared_rule("measurement_limits.json"), rule_file("measurement_limits.json"));
  EXPECT_THROW(shared_rule("missing.json"), std::logic_error);
}

// The python runner's job file checks read the same limit (test_shared_rules.py), and so do the
// result checks (result_checks_test.cpp).
TEST(MeasurementLimits, IterationsAndSamplesStopAtTheRulesLimit) {
  const auto most = rule_file("measurement_limits.json").at("max_iterations").get<int>();
  EXPECT_EQ(max_iterations(), static_cast<std::size_t>(most));
  const json at_limit = {{"min_iterations", most}, {"max_iterations", most}};
  EXPECT_TRUE(decode<MeasurementSpec>(at_limit).ok());
  const json past = {{"min_iterations", 1}, {"max_iterations", most + 1}};
  ASSERT_FALSE(decode<MeasurementSpec>(past).ok());
  EXPECT_EQ(decode<MeasurementSpec>(past).error().describe(),
            "max_iterations: must be between min_iterations and " + std::to_string(most));
}

TEST(Statuses, AreTheEnumsOfTheCodeInTheirOrderWithALabelEach) {
  const Statuses& st = statuses();
  std::vector<std::string> results;
  for (auto s : {ResultStatus::kOk, ResultStatus::kOom, ResultStatus::kOomImplied, ResultStatus::kError,
                 ResultStatus::kTimeout, ResultStatus::kCrash, ResultStatus::kUnsupported, ResultStatus::kInvalid}) {
    results.emplace_back(to_string(s));
  }
  EXPECT_EQ(st.results, results);
  std::vector<std::string> jobs = st.active_jobs;
  jobs.insert(jobs.end(), st.ended_jobs.begin(), st.ended_jobs.end());
  std::vector<std::string> enum_jobs;
  for (auto s : {JobStatus::kQueued, JobStatus::kLeased, JobStatus::kRunning, JobStatus::kDone, JobStatus::kFailed,
                 JobStatus::kCancelled}) {
    enum_jobs.emplace_back(to_string(s));
  }
  EXPECT_EQ(jobs, enum_jobs);
  for (const std::string& p : st.problems) {
    EXPECT_TRUE(parse_result_status(p).has_value()) << p;
    EXPECT_NE(p, "ok");
  }
  // Every status a report cell can show has a label and a place in the precedence.
  const nlohmann::json& labels = shared_rule("statuses.json").at("labels");
  for (const std::string& r : st.results) EXPECT_TRUE(labels.contains(r)) << r;
  for (const char* c : {"failed", "not_run", "unavailable"}) EXPECT_TRUE(labels.contains(c)) << c;
  for (const std::string& r : st.results) {
    if (r == "ok") continue;
    EXPECT_NE(std::find(st.cell_precedence.begin(), st.cell_precedence.end(), r), st.cell_precedence.end()) << r;
  }
}

TEST(SpeedKeys, AreSortedAndDistinct) {
  const std::vector<std::string>& keys = speed_keys();
  ASSERT_FALSE(keys.empty());
  EXPECT_TRUE(std::is_sorted(keys.begin(), keys.end()));
  EXPECT_EQ(std::adjacent_find(keys.begin(), keys.end()), keys.end());
}

TEST(UnsupportedDtype, FindsTheSameLinesAsThePythonSide) {
  std::ifstream in(std::string(BENCHFLEET_SOURCE_DIR) + "/tests/data/unsupported_dtype_cases.json");
  ASSERT_TRUE(in.good()) << "tests/data/unsupported_dtype_cases.json is missing";
  const json cases = json::parse(in).at("cases");
  ASSERT_GE(cases.size(), 10u);
  for (const json& c : cases) {
    const auto message = c.at("message").get<std::string>();
    const auto expected =
        c.at("line").is_null() ? std::nullopt : std::optional<std::string>(c.at("line").get<std::string>());
    EXPECT_EQ(unsupported_dtype_line(c.at("dtype").get<std::string>(), message), expected)
        << c.at("dtype") << ": " << json(message);
  }
}

TEST(UnsupportedDtype, ALongLineIsCutBeforeItIsRead) {
  const std::string half = "\"slow_conv2d_cpu\" not implemented for 'Half'";
  EXPECT_EQ(unsupported_dtype_line("float16", std::string(100, 'x') + half), std::string(100, 'x') + half);
  EXPECT_EQ(unsupported_dtype_line("float16", std::string(5000, 'x') + half), std::nullopt);  // past 4000
  EXPECT_EQ(unsupported_dtype_line("float16", std::string(200000, 'x') + "\n" + half), half);
}

}  // namespace
}  // namespace benchfleet
