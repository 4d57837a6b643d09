#include "common/measurement.h"

#include <gtest/gtest.h>

#include <random>

#include "common/codecs.h"
#include "common/shared_rules.h"
#include "common/worker_job.h"

namespace benchfleet {
namespace {

// Feeds samples one by one at `ms_each` of elapsed time; returns (reason, iterations).
std::pair<StopReason, std::size_t> run(StoppingRule rule, const std::vector<double>& source, double seconds_each) {
  std::vector<double> samples;
  for (std::size_t i = 0;; ++i) {
    samples.push_back(source[i % source.size()]);
    if (auto r = rule.check(samples, static_cast<double>(samples.size()) * seconds_each)) return {*r, samples.size()};
  }
}

std::vector<double> noisy(std::size_t n, double mean, double sd, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> d(mean, sd);
  std::vector<double> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(std::max(0.01, d(rng)));
  return out;
}

TEST(StoppingRule, TheSeedsFixedThreeHundredRuns) {
  MeasurementSpec spec;
  spec.min_iterations = spec.max_iterations = 300;
  auto [reason, n] = run(StoppingRule(spec), noisy(1000, 10, 3, 1), 0.001);
  EXPECT_EQ(reason, StopReason::kFixedCount);
  EXPECT_EQ(n, 300u);
}

TEST(StoppingRule, StableSamplesStopOnTheCiTargetAfterBothMinimums) {
  MeasurementSpec spec;
  spec.min_iterations = 30;
  spec.min_duration_s = 0.5;
  spec.max_iterations = 10000;
  spec.target_ci_rel_width = 0.05;
  auto [reason, n] = run(StoppingRule(spec), noisy(1000, 10, 0.2, 2), 0.01);
  EXPECT_EQ(reason, StopReason::kCiTarget);
  EXPECT_GE(n, 50u) << "0.5 s at 10 ms per iteration is 50 iterations, more than min_iterations";
  EXPECT_LT(n, 200u);
}

TEST(StoppingRule, NoisySamplesRunUntilACap) {
  MeasurementSpec spec;
  spec.min_iterations = 10;
  spec.max_iterations = 400;
  spec.min_duration_s = 0;
  spec.target_ci_rel_width = 0.001;
  auto [reason, n] = run(StoppingRule(spec), noisy(1000, 10, 5, 3), 0.001);
  EXPECT_EQ(reason, StopReason::kMaxIterations);
  EXPECT_EQ(n, 400u);

  spec.max_duration_s = 0.1;
  auto [reason2, n2] = run(StoppingRule(spec), noisy(1000, 10, 5, 3), 0.001);
  EXPECT_EQ(reason2, StopReason::kMaxTime);
  EXPECT_EQ(n2, 100u);
}

TEST(StoppingRule, NoisierSamplesNeedMoreIterations) {
  MeasurementSpec spec;
  spec.min_iterations = 20;
  spec.min_duration_s = 0;
  spec.max_iterations = 100000;
  spec.target_ci_rel_width = 0.02;
  auto quiet = run(StoppingRule(spec), noisy(5000, 10, 0.5, 4), 0.001).second;
  auto loud = run(StoppingRule(spec), noisy(5000, 10, 3, 4), 0.001).second;
  EXPECT_LT(quiet, loud);
}

TEST(WorkerExitCodes, DistinctPerStatus) {
  std::set<int> codes;
  for (auto s : all_result_statuses()) {
    codes.insert(exit_code_for(s));
    EXPECT_TRUE(shared_rule("worker_exit_codes.json").at("codes").contains(std::string(to_string(s))))
        << to_string(s) << " has its own code in common/rules/worker_exit_codes.json";
  }
  EXPECT_EQ(codes.size(), all_result_statuses().size());
  EXPECT_EQ(exit_code_for(ResultStatus::kOk), 0);
  EXPECT_FALSE(codes.contains(2)) << "2 is for usage errors";
}

TEST(WorkerJobCodec, RoundTripsAndNamesBadFields) {
  auto j = nlohmann::json::parse(R"({"model": "torchvision/resnet18", "artifact": "/tmp/a/model.pt",
    "format": "torchscript", "batch": 4, "mode": "eager",
    "inputs": [{"name": "pixel_values", "shape": [4, 3, 224, 224], "dtype": "float32"},
               {"name": "input_ids", "shape": [8, 16], "dtype": "int64", "range": [0, 49408]}],
    "measurement": {"min_iterations": 5, "max_iterations": 5}})");
  auto job = decode<WorkerJob>(j);
  ASSERT_TRUE(job.ok()) << job.error().describe();
  EXPECT_EQ(job->inputs[1].range, (std::vector<std::int64_t>{0, 49408}));
  auto again = decode<WorkerJob>(nlohmann::json(*job));
  ASSERT_TRUE(again.ok()) << again.error().describe();
  EXPECT_EQ(*job, *again);

  auto bad = j;
  bad["inputs"][0]["shape"][1] = 0;
  EXPECT_EQ(decode<WorkerJob>(bad).error().field, "inputs[0].shape[1]");
  bad = j;
  bad["inputs"][1]["dtype"] = "complex64";
  EXPECT_EQ(decode<WorkerJob>(bad).error().field, "inputs[1].dtype");
  bad = j;
  bad["measurement"]["max_iterations"] = 1;
  EXPECT_EQ(decode<WorkerJob>(bad).error().field, "measurement.max_iterations");
  bad = j;
  bad.erase("artifact");
  EXPECT_EQ(decode<WorkerJob>(bad).error().describe(), "artifact: is required");
  // The slot's thread count travels; 0 (absent) is torch's default.
  EXPECT_EQ(job->threads, 0);
  bad = j;
  bad["threads"] = 6;
  EXPECT_EQ(decode<WorkerJob>(bad).value().threads, 6);
  EXPECT_EQ(nlohmann::json(decode<WorkerJob>(bad).value())["threads"], 6);
  bad["threads"] = -1;
  EXPECT_EQ(decode<WorkerJob>(bad).error().field, "threads");
  // A misspelt field is named with the field meant.
  bad = j;
  bad["thread"] = 6;
  EXPECT_EQ(decode<WorkerJob>(bad).error().describe(), "thread: is not a known field (did you mean \"threads\"?)");
  EXPECT_EQ(format_for(Mode::kEager), "torchscript");
  EXPECT_EQ(format_for(Mode::kTorchscript), "torchscript-frozen");
  EXPECT_EQ(format_for(Mode::kMaxAutotune), "aotinductor");
}

TEST(WorkerJobCodec, JobsWithoutARuntimeAreLibtorchJobs) {
  // Written before the python runtime existed: still a libtorch job, which needs its artifact.
  auto j = nlohmann::json::parse(R"({"model": "torchvision/resnet18", "artifact": "/tmp/a/model.pt",
    "format": "torchscript", "batch": 1, "mode": "eager",
    "inputs": [{"name": "pixel_values", "shape": [1, 3, 224, 224]}]})");
  auto job = decode<WorkerJob>(j);
  ASSERT_TRUE(job.ok()) << job.error().describe();
  EXPECT_EQ(job->runtime, Runtime::kLibtorch);
  EXPECT_TRUE(job->catalog.empty());
  EXPECT_FALSE(job->weights.has_value());
  const nlohmann::json encoded = *job;
  EXPECT_EQ(encoded.at("runtime"), "libtorch");
  EXPECT_FALSE(encoded.contains("catalog"));
  EXPECT_FALSE(encoded.contains("weights"));

  for (const char* field : {"artifact", "format", "inputs"}) {
    auto bad = j;
    bad.erase(field);
    EXPECT_EQ(decode<WorkerJob>(bad).error().describe(), std::string(field) + ": is required");
    bad = j;
    bad["runtime"] = "libtorch";
    bad.erase(field);
    EXPECT_EQ(decode<WorkerJob>(bad).error().describe(), std::string(field) + ": is required");
  }
  auto bad = j;
  bad["inputs"] = nlohmann::json::array();
  EXPECT_EQ(decode<WorkerJob>(bad).error().field, "inputs");
  bad = j;
  bad["runtime"] = "jax";
  EXPECT_EQ(decode<WorkerJob>(bad).error().field, "runtime");
}

TEST(WorkerJobCodec, PythonJobsNeedTheModelButNoArtifact) {
  // What the agent writes for benchfleet_runner.py: no artifact, format or inputs.
  auto j = nlohmann::json::parse(R"({"runtime": "python", "model": "torchvision/resnet18", "batch": 2,
    "mode": "default", "catalog": "/opt/benchfleet/catalog/models.yaml",
    "measurement": {"warmup": 1, "min_iterations": 3, "max_iterations": 3}})");
  auto job = decode<WorkerJob>(j);
  ASSERT_TRUE(job.ok()) << job.error().describe();
  EXPECT_EQ(job->runtime, Runtime::kPython);
  EXPECT_EQ(job->model, "torchvision/resnet18");
  EXPECT_EQ(job->mode, Mode::kDefault);
  EXPECT_EQ(job->catalog, "/opt/benchfleet/catalog/models.yaml");
  EXPECT_FALSE(job->weights.has_value());
  EXPECT_TRUE(job->artifact.empty());
  EXPECT_TRUE(job->format.empty());
  EXPECT_TRUE(job->inputs.empty());

  const nlohmann::json encoded = *job;
  EXPECT_EQ(encoded.at("runtime"), "python");
  EXPECT_EQ(encoded.at("catalog"), "/opt/benchfleet/catalog/models.yaml");
  EXPECT_FALSE(encoded.contains("weights"));
  auto again = decode<WorkerJob>(encoded);
  ASSERT_TRUE(again.ok()) << again.error().describe();
  EXPECT_EQ(*job, *again);

  // Weights, null catalog/inputs, and listed inputs all round-trip.
  auto with = j;
  with["weights"] = "/data/resnet18.pth";
  with["catalog"] = nullptr;
  with["inputs"] = nlohmann::json::parse(R"([{"name": "pixel_values", "shape": [2, 3, 224, 224]}])");
  with["format"] = "";
  job = decode<WorkerJob>(with);
  ASSERT_TRUE(job.ok()) << job.error().describe();
  EXPECT_EQ(job->weights, "/data/resnet18.pth");
  EXPECT_TRUE(job->catalog.empty());
  EXPECT_EQ(job->inputs.size(), 1u);
  EXPECT_EQ(nlohmann::json(*job).at("weights"), "/data/resnet18.pth");
  again = decode<WorkerJob>(nlohmann::json(*job));
  ASSERT_TRUE(again.ok()) << again.error().describe();
  EXPECT_EQ(*job, *again);
  with["inputs"] = nullptr;
  EXPECT_TRUE(decode<WorkerJob>(with).ok());

  auto bad = j;
  bad.erase("model");
  EXPECT_EQ(decode<WorkerJob>(bad).error().field, "model");
  bad = j;
  bad["model"] = "";
  EXPECT_EQ(decode<WorkerJob>(bad).error().field, "model");
  bad = j;
  bad["catalog"] = "";
  EXPECT_EQ(decode<WorkerJob>(bad).error().field, "catalog");
  bad = j;
  bad["weights"] = "";
  EXPECT_EQ(decode<WorkerJob>(bad).error().field, "weights");
  bad = j;
  bad["format"] = "onnx";
  EXPECT_EQ(decode<WorkerJob>(bad).error().field, "format");
  bad = j;
  bad["surprise"] = 1;
  EXPECT_EQ(decode<WorkerJob>(bad).error().field, "surprise");
}

}  // namespace
}  // namespace benchfleet
