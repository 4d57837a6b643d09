#include "common/codecs.h"

#include <gtest/gtest.h>

namespace benchfleet {
namespace {

using nlohmann::json;

json valid_matrix() {
  return json::parse(R"({
    "name": "seed study", "models": ["microsoft/resnet-50", "google/vit-base-patch16-224"],
    "batch_sizes": [1, 4, 16], "modes": ["eager", "default"], "torch_builds": ["stable", "nightly"],
    "gpus": ["a100", "t4"], "runtimes": ["libtorch"], "repetitions": 1,
    "measurement": {"warmup": 10, "min_iterations": 300, "max_iterations": 300},
    "memory_limit_mb": null, "timeout_s": 1800, "priority": 0})");
}

std::string error_of(const json& j) {
  auto r = decode<MatrixSpec>(j);
  return r.ok() ? std::string("<ok>") : r.error().describe();
}

TEST(MatrixCodec, DecodesTheDocumentedShape) {
  auto r = decode<MatrixSpec>(valid_matrix());
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->name, "seed study");
  EXPECT_EQ(r->batch_sizes, (std::vector<int>{1, 4, 16}));
  EXPECT_EQ(r->modes, (std::vector<Mode>{Mode::kEager, Mode::kDefault}));
  EXPECT_EQ(r->measurement.min_iterations, 300);
  EXPECT_EQ(r->measurement.max_iterations, 300);
  EXPECT_EQ(r->measurement.warmup, 10);
  EXPECT_FALSE(r->memory_limit_mb.has_value());
}

TEST(MatrixCodec, RoundTripsThroughJson) {
  auto r = decode<MatrixSpec>(valid_matrix());
  ASSERT_TRUE(r.ok());
  json again = *r;
  auto r2 = decode<MatrixSpec>(again);
  ASSERT_TRUE(r2.ok()) << r2.error().describe();
  EXPECT_EQ(*r, *r2);
}

// The dtype axis, dynamic shapes, the shape walk and the noise thresholds.
TEST(MatrixCodec, DtypesDynamicShapeWalkAndNoiseRoundTrip) {
  json j = valid_matrix();
  j["dtypes"] = json::array({"float16", "amp", "bfloat16", "float32"});
  j["dynamic"] = true;
  j["shape_walk"] = true;
  j["noise"] = {{"max_cv", 0.05}, {"max_clock_drop", 0.2}};
  auto r = decode<MatrixSpec>(j);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->dtypes, (std::vector<Dtype>{Dtype::kFloat16, Dtype::kAmp, Dtype::kBfloat16, Dtype::kFloat32}));
  EXPECT_TRUE(r->dynamic);
  EXPECT_TRUE(r->shape_walk);
  EXPECT_EQ(r->noise, (NoiseSpec{0.05, 0.2}));
  const json again = *r;
  EXPECT_EQ(again["dtypes"], j["dtypes"]);
  auto r2 = decode<MatrixSpec>(again);
  ASSERT_TRUE(r2.ok()) << r2.error().describe();
  EXPECT_EQ(*r, *r2);
  // A noise block may give one threshold; the other keeps its default.
  j["noise"] = {{"max_cv", 0.2}};
  EXPECT_EQ(decode<MatrixSpec>(j).value().noise, (NoiseSpec{0.2, 0.10}));
}

TEST(MatrixCodec, DtypeErrorsNameTheField) {
  json j = valid_matrix();
  j["dtypes"] = json::array({"float32", "float64"});
  EXPECT_EQ(error_of(j).rfind("dtypes[1]: unknown value \"float64\"", 0), 0u) << error_of(j);
  EXPECT_NE(error_of(j).find("float32, float16, bfloat16, amp"), std::string::npos) << error_of(j);
  j["dtypes"] = json::array({"float16", "float16"});
  EXPECT_EQ(error_of(j), "dtypes[1]: duplicate value \"float16\"");
  j["dtypes"] = json::array();
  EXPECT_EQ(error_of(j), "dtypes: must not be empty");
  j = valid_matrix();
  j["dynamic"] = "yes";
  EXPECT_EQ(error_of(j), "dynamic: must be a boolean, got string");
  j = valid_matrix();
  j["noise"] = {{"max_cv", 0}};
  EXPECT_EQ(error_of(j), "noise.max_cv: must be > 0 and <= 10");
  j["noise"] = {{"max_clock_drop", 1}};
  EXPECT_EQ(error_of(j), "noise.max_clock_drop: must be > 0 and < 1");
  j["noise"] = {{"max_jitter", 0.1}};
  EXPECT_EQ(error_of(j), "noise.max_jitter: is not a known field");
}

TEST(JobSpecCodec, DtypeIsOptionalAndRoundTrips) {
  JobSpec spec{"microsoft/resnet-50", 4, Mode::kDefault, "stable", "a100", Runtime::kPython, 1, Dtype::kBfloat16};
  const json j = spec;
  EXPECT_EQ(j["dtype"], "bfloat16");
  EXPECT_EQ(decode<JobSpec>(j).value(), spec);
  json old = j;
  old.erase("dtype");  // written before the dtype axis
  EXPECT_EQ(decode<JobSpec>(old).value().dtype, Dtype::kFloat32);
}

TEST(MatrixCodec, OptionalFieldsTakeDefaults) {
  json j = valid_matrix();
  for (auto key : {"runtimes", "repetitions", "measurement", "memory_limit_mb", "timeout_s", "priority"}) j.erase(key);
  auto r = decode<MatrixSpec>(j);
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->runtimes, std::vector<Runtime>{Runtime::kLibtorch});
  EXPECT_EQ(r->repetitions, 1);
  EXPECT_EQ(r->measurement, MeasurementSpec{});
  EXPECT_EQ(r->dtypes, std::vector<Dtype>{Dtype::kFloat32});
  EXPECT_FALSE(r->dynamic);
  EXPECT_FALSE(r->shape_walk);
  EXPECT_EQ(r->noise, NoiseSpec{});
}

TEST(MatrixCodec, ErrorsNameTheFieldPath) {
  json j = valid_matrix();
  j["measurement"]["min_iterations"] = 0;
  EXPECT_EQ(error_of(j), "measurement.min_iterations: must be between 1 and 1000000");

  j = valid_matrix();
  j["measurement"]["bogus"] = 1;
  EXPECT_EQ(error_of(j), "measurement.bogus: is not a known field");

  j = valid_matrix();
  j.erase("gpus");
  EXPECT_EQ(error_of(j), "gpus: is required");

  j = valid_matrix();
  j["batch_sizes"] = json::array({1, "4"});
  EXPECT_EQ(error_of(j), "batch_sizes[1]: must be an integer, got string");

  j = valid_matrix();
  j["batch_sizes"] = json::array({1, 0});
  EXPECT_EQ(error_of(j), "batch_sizes[1]: must be between 1 and 65536");

  j = valid_matrix();
  j["modes"] = json::array({"eager", "turbo"});
  EXPECT_EQ(error_of(j).rfind("modes[1]: unknown value \"turbo\"", 0), 0u) << error_of(j);

  j = valid_matrix();
  j["gpus"] = json::array({"a100", "t4", "a100"});
  EXPECT_EQ(error_of(j), "gpus[2]: duplicate value \"a100\"");

  j = valid_matrix();
  j["torch_builds"] = json::array();
  EXPECT_EQ(error_of(j), "torch_builds: must not be empty");

  j = valid_matrix();
  j["timeout_s"] = 1.5;
  EXPECT_EQ(error_of(j), "timeout_s: must be an integer, got number");

  j = valid_matrix();
  j["gpus"] = json::array({"A100!"});
  EXPECT_NE(error_of(j).find("gpus[0]"), std::string::npos);

  EXPECT_EQ(error_of(json::array()), "must be an object, got array");
}

TEST(ParseJson, RefusesDeepNestingAndMalformedText) {
  std::string deep(100, '[');
  deep += std::string(100, ']');
  auto r = parse_json(deep, 32);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("deeper than 32"), std::string::npos);

  // Brackets inside strings do not count.
  auto s = parse_json(R"({"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["})", 2);
  EXPECT_TRUE(s.ok());

  auto bad = parse_json("{\"a\": ", 32);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("malformed JSON"), std::string::npos);

  // The parser's message quoted the failing token whole, so a 1 MiB unterminated
  // string came back in the 400's detail.
  auto unterminated = parse_json("{\"name\": \"" + std::string(1 << 20, 'a'), 32);
  ASSERT_FALSE(unterminated.ok());
  EXPECT_LT(unterminated.error().message.size(), 1000u);
  EXPECT_NE(unterminated.error().message.find("missing closing quote"), std::string::npos)
      << unterminated.error().message;
}

json ok_result() {
  return json::parse(R"({"status": "ok",
    "stats": {"mean_ms": 2.0, "median_ms": 2.0, "p90_ms": 3.0, "p99_ms": 3.0, "min_ms": 1.0, "max_ms": 3.0,
              "stddev_ms": 0.8, "cv": 0.4, "ci_low_ms": 1.0, "ci_high_ms": 3.0, "iterations": 3},
    "samples_ms": [1.0, 2.0, 3.0], "stop_reason": "fixed_count",
    "environment": {"torch_version": "1.13.1", "host": "h1"}})");
}

TEST(ResultCodec, AcceptsAConsistentOkResultAndRoundTrips) {
  auto r = decode<JobResult>(ok_result());
  ASSERT_TRUE(r.ok()) << r.error().describe();
  EXPECT_EQ(r->stop_reason, StopReason::kFixedCount);
  json again = *r;
  auto r2 = decode<JobResult>(again);
  ASSERT_TRUE(r2.ok()) << r2.error().describe();
  EXPECT_EQ(*r, *r2);
}

TEST(ResultCodec, RefusesInconsistentResults) {
  json j = ok_result();
  j.erase("stats");
  EXPECT_EQ(decode<JobResult>(j).error().describe(), "stats: is required when status is ok");

  j = ok_result();
  j["stats"]["iterations"] = 4;
  EXPECT_EQ(decode<JobResult>(j).error().describe(), "stats.iterations: must equal the number of samples_ms");

  j = ok_result();
  j["stats"]["median_ms"] = 9.0;
  EXPECT_EQ(decode<JobResult>(j).error().field, "stats.median_ms");

  j = json{{"status", "oom"}};
  EXPECT_EQ(decode<JobResult>(j).error().describe(), "oom: is required when status is oom");

  j = json{{"status", "oom"}, {"oom", {{"phase", "warmup"}, {"bytes_requested", 1 << 20}}}};
  auto oom = decode<JobResult>(j);
  ASSERT_TRUE(oom.ok()) << oom.error().describe();
  EXPECT_EQ(oom->oom->phase, OomPhase::kWarmup);

  j = ok_result();
  j["environment"]["nested"] = json::object();
  EXPECT_EQ(decode<JobResult>(j).error().field, "environment.nested");
}

TEST(AgentCodec, RefusesDuplicateSlotIds) {
  json j = json::parse(R"({"name": "host1", "slots": [{"id": "gpu0", "gpu_class": "a100"},
                                                       {"id": "gpu0", "gpu_class": "a100"}],
                           "torch_builds": [{"name": "stable", "runtimes": [{"runtime": "libtorch", "modes": ["eager"]}]}]})");
  EXPECT_EQ(decode<AgentDescriptor>(j).error().describe(), "slots[1].id: duplicate slot id");
}

TEST(Enums, WireNamesRoundTrip) {
  for (auto m : all_modes()) EXPECT_EQ(parse_mode(to_string(m)), m);
  for (auto s : all_result_statuses()) EXPECT_EQ(parse_result_status(to_string(s)), s);
  for (auto s : all_job_statuses()) EXPECT_EQ(parse_job_status(to_string(s)), s);
  EXPECT_EQ(to_string(Mode::kReduceOverhead), "reduce-overhead");
  EXPECT_EQ(to_string(ResultStatus::kOomImplied), "oom_implied");
  EXPECT_FALSE(parse_mode("Eager").has_value());
}

}  // namespace
}  // namespace benchfleet

// An agent enrolled with 1.5 M copies of a mode (13.5 MB) and every lease of
// it took seconds. Descriptor lists are bounded and hold distinct values.
namespace benchfleet {
namespace {

nlohmann::json descriptor_with_modes(nlohmann::json modes) {
  return {{"name", "host1"},
          {"slots", {{{"id", "gpu0"}, {"gpu_class", "a100"}}}},
          {"torch_builds", {{{"name", "stable"}, {"runtimes", {{{"runtime", "libtorch"}, {"modes", modes}}}}}}}};
}

TEST(AgentCodec, BoundsAndDeduplicatesDescriptorLists) {
  EXPECT_TRUE(decode<AgentDescriptor>(descriptor_with_modes({"eager", "default"})).ok());

  nlohmann::json many = nlohmann::json::array();
  for (int i = 0; i < 100000; ++i) many.push_back("eager");
  auto r = decode<AgentDescriptor>(descriptor_with_modes(many));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().field, "torch_builds[0].runtimes[0].modes");

  r = decode<AgentDescriptor>(descriptor_with_modes({"eager", "default", "eager"}));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().describe(), "torch_builds[0].runtimes[0].modes[2]: duplicate value \"eager\"");

  auto j = descriptor_with_modes({"eager"});
  j["torch_builds"][0]["runtimes"].push_back(j["torch_builds"][0]["runtimes"][0]);
  EXPECT_EQ(decode<AgentDescriptor>(j).error().field, "torch_builds[0].runtimes[1]");

  j = descriptor_with_modes({"eager"});
  j["torch_builds"].push_back(j["torch_builds"][0]);
  EXPECT_EQ(decode<AgentDescriptor>(j).error().field, "torch_builds[1]");

  j = descriptor_with_modes({"eager"});
  for (int i = 0; i < 65; ++i) {
    std::string name = "b";
    name += std::to_string(i);
    j["torch_builds"].push_back({{"name", name}, {"runtimes", nlohmann::json::array()}});
  }
  EXPECT_EQ(decode<AgentDescriptor>(j).error().field, "torch_builds");

  j = descriptor_with_modes({"eager"});
  j["hostname"] = std::string(201, 'h');
  EXPECT_EQ(decode<AgentDescriptor>(j).error().field, "hostname");
}

}  // namespace
}  // namespace benchfleet

// Run names are for people; NUL, U+202E (right-to-left override) and blank
// names were accepted and went verbatim into reports.
namespace benchfleet {
namespace {

std::string name_error(const std::string& name) {
  nlohmann::json j = valid_matrix();
  j["name"] = name;
  auto r = decode<MatrixSpec>(j);
  return r.ok() ? "(accepted)" : r.error().describe();
}

TEST(MatrixCodec, RestrictsRunNames) {
  EXPECT_EQ(name_error("seeds: A100 | T4, torch 2.0.1 vs nightly"), "(accepted)");
  EXPECT_EQ(name_error("Bénchmark 日本 ✓"), "(accepted)");
  EXPECT_EQ(name_error(std::string("a\0b", 3)),
            "name: must not contain control, invisible or bidirectional characters (U+0000 at byte 1)");
  EXPECT_EQ(name_error("evil\u202Etxt.exe"),
            "name: must not contain control, invisible or bidirectional characters (U+202E at byte 4)");
  EXPECT_EQ(name_error("two\nlines"),
            "name: must not contain control, invisible or bidirectional characters (U+000A at byte 3)");
  EXPECT_EQ(name_error("zero\u200Bwidth").rfind("name: must not contain", 0), 0u);
  EXPECT_EQ(name_error("   \u3000 "), "name: must not be blank");
  EXPECT_EQ(name_error(""), "name: must be 1 to 200 bytes long");
  EXPECT_EQ(name_error(std::string(201, 'n')), "name: must be 1 to 200 bytes long");
  EXPECT_EQ(name_error("bad \xC3"), "name: is not valid UTF-8 (byte 4)");
  EXPECT_EQ(name_error("overlong \xC0\xAF"), "name: is not valid UTF-8 (byte 9)");
}

}  // namespace
}  // namespace benchfleet
