// judge_accuracy (common/accuracy.h) against the cases tests/data/accuracy_cases.json holds, the
// same file agent/python/tests judge benchfleet_accuracy.py against: both sides must agree.
#include "common/accuracy.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

namespace benchfleet {
namespace {

using nlohmann::json;

json load_cases() {
  std::ifstream in(std::string(BENCHFLEET_SOURCE_DIR) + "/tests/data/accuracy_cases.json");
  EXPECT_TRUE(in.good()) << "tests/data/accuracy_cases.json is missing";
  return json::parse(in, nullptr, /*allow_exceptions=*/false);
}

OutputComparison comparison_of(const json& j) {
  OutputComparison c;
  c.name = j.at("name").get<std::string>();
  c.floating = j.at("floating").get<bool>();
  c.compiled_error = j.at("compiled_error").get<double>();
  c.eager_error = j.at("eager_error").get<double>();
  if (!j.at("cosine").is_null()) c.cosine = j.at("cosine").get<double>();
  c.equal = j.at("equal").get<bool>();
  c.compiled_finite = j.at("compiled_finite").get<bool>();
  return c;
}

TEST(AccuracyCases, CoverEveryVerdictDtypeAndRule) {
  const json file = load_cases();
  ASSERT_TRUE(file.is_object() && file.contains("cases")) << "not a cases file";
  std::set<std::string> verdicts, dtypes;
  for (const json& c : file["cases"]) {
    verdicts.insert(c.at("expect").at("verdict").get<std::string>());
    dtypes.insert(c.at("dtype").get<std::string>());
  }
  EXPECT_EQ(verdicts, (std::set<std::string>{"pass", "wrong", "eager_nondeterministic", "unchecked"}));
  EXPECT_EQ(dtypes, (std::set<std::string>{"float32", "float16", "bfloat16", "amp"}));
  EXPECT_GE(file["cases"].size(), 12u);
}

TEST(AccuracyCases, JudgeAccuracyGivesTheExpectedVerdictOutputAndBound) {
  const json file = load_cases();
  ASSERT_TRUE(file.is_object() && file.contains("cases"));
  for (const json& c : file["cases"]) {
    const std::string name = c.at("name").get<std::string>();
    SCOPED_TRACE(name);
    const auto dtype = parse_dtype(c.at("dtype").get<std::string>());
    ASSERT_TRUE(dtype.has_value());
    std::vector<OutputComparison> outputs;
    for (const json& o : c.at("outputs")) outputs.push_back(comparison_of(o));
    const AccuracyInfo got =
        judge_accuracy(*dtype, c.at("on_cuda").get<bool>(), c.at("eager_deterministic").get<bool>(), outputs);
    const json& expect = c.at("expect");
    EXPECT_EQ(to_string(got.verdict), expect.at("verdict").get<std::string>());
    EXPECT_EQ(got.output, expect.at("output").get<std::string>());
    EXPECT_NEAR(got.tolerance, expect.at("tolerance").get<double>(), 1e-12);
    // A verdict other than pass says why; figures stay finite (the codec refuses others).
    if (got.verdict != AccuracyVerdict::kPass) {
      EXPECT_FALSE(got.detail.empty());
    }
    EXPECT_TRUE(std::isfinite(got.compiled_error));
    EXPECT_GE(got.compiled_error, 0);
  }
}

TEST(ErrorFloor, AmpFollowsItsAutocastDtype) {
  EXPECT_DOUBLE_EQ(error_floor(Dtype::kAmp, /*on_cuda=*/true), error_floor(Dtype::kFloat16, true));
  EXPECT_DOUBLE_EQ(error_floor(Dtype::kAmp, /*on_cuda=*/false), error_floor(Dtype::kBfloat16, false));
  EXPECT_LT(error_floor(Dtype::kFloat32, false), error_floor(Dtype::kFloat16, false));
}

}  // namespace
}  // namespace benchfleet
