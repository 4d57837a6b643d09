// The worker's accuracy check without a model: reading and validating the exporter's
// reference.bin (accuracy_reference.cpp), comparing one output with its reference in double
// (relative L2 error, cosine), judging a runner that returns chosen outputs (accuracy_check.cpp),
// and the dtype rules of capabilities.cpp. (Recognising a dtype a kernel lacks is
// unsupported_dtype_test.cpp's.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <torch/torch.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/worker/accuracy_check.h"
#include "agent/worker/accuracy_reference.h"
#include "agent/worker/capabilities.h"
#include "tests/support/temp_dir.h"

namespace benchfleet::worker {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// ---- reference.bin ------------------------------------------------------------------------

// A directory with an artifact and the reference the exporter would write beside it: one float32
// input [1, 3] and one float64 output [1, 4] (its eager error 1e-7), inputs first.
class ReferenceFile : public ::testing::Test {
 protected:
  void SetUp() override {
    input_ = torch::tensor({0.5F, -1.0F, 2.0F}).reshape({1, 3});
    output_ = torch::tensor({3.0, 4.0, 0.0, -1.0}, torch::kDouble).reshape({1, 4});
    write_bytes({input_, output_});
  }

  void write_bytes(const std::vector<at::Tensor>& tensors, std::size_t cut = 0) {
    std::string bytes;
    for (const auto& t : tensors) {
      const at::Tensor c = t.contiguous();
      bytes.append(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
    }
    bytes.resize(bytes.size() - cut);
    std::ofstream(dir_ / "reference.bin", std::ios::binary | std::ios::trunc) << bytes;
  }

  json layout() const {
    return {{"file", "reference.bin"},
            {"eager_deterministic", true},
            {"inputs",
             {{{"name", "pixel_values"}, {"dtype", "float32"}, {"shape", {1, 3}}, {"offset", 0}, {"nbytes", 12}}}},
            {"outputs",
             {{{"name", "logits"},
               {"dtype", "float64"},
               {"shape", {1, 4}},
               {"offset", 12},
               {"nbytes", 32},
               {"eager_error", 1e-7}}}}};
  }

  // The error parse_reference_layout gives `j`, or "" when it accepts it.
  static std::string parse_error(const json& j) {
    auto parsed = parse_reference_layout(j);
    return parsed.ok() ? "" : parsed.error().describe();
  }

  WorkerJob job() const {
    WorkerJob j;
    j.model = "test/model";
    j.artifact = (dir_ / "model.pt2").string();
    j.format = "aotinductor";
    j.mode = Mode::kDefault;
    j.inputs = {TensorSpec{"pixel_values", {1, 3}, "float32", std::nullopt}};
    j.artifact_metadata = {{"accuracy_reference", layout()}};
    return j;
  }

  testing::TempDir tmp_{"bf-reference"};
  const fs::path dir_ = tmp_.path();
  at::Tensor input_;
  at::Tensor output_;
};

TEST_F(ReferenceFile, AGoodLayoutAndFileAreReadBack) {
  auto parsed = parse_reference_layout(layout());
  ASSERT_TRUE(parsed.ok()) << parsed.error().describe();
  EXPECT_EQ(parsed->file, "reference.bin");
  EXPECT_TRUE(parsed->eager_deterministic);
  ASSERT_EQ(parsed->outputs.size(), 1u);
  EXPECT_EQ(parsed->outputs[0].eager_error, std::optional<double>(1e-7));
  EXPECT_EQ(parsed->inputs[0].shape, (std::vector<std::int64_t>{1, 3}));
  auto ref = read_reference(*parsed, dir_.string());
  ASSERT_TRUE(ref.ok()) << ref.error().describe();
  ASSERT_EQ(ref->inputs.size(), 1u);
  ASSERT_EQ(ref->outputs.size(), 1u);
  EXPECT_TRUE(ref->inputs[0].equal(input_));
  EXPECT_EQ(ref->inputs[0].scalar_type(), at::kFloat);
  EXPECT_TRUE(ref->outputs[0].equal(output_));
  EXPECT_EQ(ref->outputs[0].scalar_type(), at::kDouble);
  EXPECT_EQ(ref->output_entries[0].name, "logits");
}

TEST_F(ReferenceFile, ATruncatedFileIsAnErrorNamingTheEntry) {
  write_bytes({input_, output_}, 8);  // the output's last element is missing
  auto parsed = parse_reference_layout(layout());
  ASSERT_TRUE(parsed.ok());
  auto ref = read_reference(*parsed, dir_.string());
  ASSERT_FALSE(ref.ok());
  EXPECT_EQ(ref.error().field, "accuracy_reference.outputs[0]");
  EXPECT_NE(ref.error().message.find("36 bytes"), std::string::npos) << ref.error().message;
}

TEST_F(ReferenceFile, OffsetsOutOfRangeAreRefusedBeforeReading) {
  auto parsed = parse_reference_layout(layout());
  ASSERT_TRUE(parsed.ok());
  ReferenceLayout far = *parsed;
  far.inputs[0].offset = 1'000'000;
  EXPECT_EQ(check_layout_fits(far, 44).error().field, "accuracy_reference.inputs[0]");
  // offset + nbytes would wrap around in 64 bits: still refused.
  far.inputs[0].offset = std::numeric_limits<std::uint64_t>::max() - 4;
  EXPECT_FALSE(check_layout_fits(far, 44).ok());
  EXPECT_TRUE(check_layout_fits(*parsed, 44).ok());
  EXPECT_FALSE(check_layout_fits(*parsed, 43).ok());
  json j = layout();
  j["outputs"][0]["offset"] = 13;  // one byte past the end of a 44-byte file
  auto shifted = parse_reference_layout(j);
  ASSERT_TRUE(shifted.ok());
  EXPECT_FALSE(read_reference(*shifted, dir_.string()).ok());
}

TEST_F(ReferenceFile, AMissingFileIsAnError) {
  fs::remove(dir_ / "reference.bin");
  auto parsed = parse_reference_layout(layout());
  ASSERT_TRUE(parsed.ok());
  auto ref = read_reference(*parsed, dir_.string());
  ASSERT_FALSE(ref.ok());
  EXPECT_EQ(ref.error().field, "accuracy_reference.file");
}

TEST_F(ReferenceFile, BadLayoutsAreErrorsNamingTheField) {
  const auto with = [&](const std::function<void(json&)>& change) {
    json j = layout();
    change(j);
    return parse_error(j);
  };
  EXPECT_EQ(parse_error(layout()), "");
  EXPECT_EQ(parse_error(json::array()), "accuracy_reference: must be an object, got array");
  EXPECT_NE(with([](json& j) { j["file"] = "../reference.bin"; }).find("accuracy_reference.file: must be a plain"),
            std::string::npos);
  EXPECT_NE(with([](json& j) { j["file"] = ".."; }).find("accuracy_reference.file"), std::string::npos);
  EXPECT_NE(
      with([](json& j) { j.erase("eager_deterministic"); }).find("accuracy_reference.eager_deterministic: is required"),
      std::string::npos);
  EXPECT_NE(with([](json& j) { j.erase("outputs"); }).find("accuracy_reference.outputs: is required"),
            std::string::npos);
  EXPECT_NE(with([](json& j) { j["outputs"] = json::array(); }).find("at least one output"), std::string::npos);
  EXPECT_NE(with([](json& j) {
              j["outputs"][0]["dtype"] = "complex64";
            }).find("accuracy_reference.outputs[0].dtype: must be one of"),
            std::string::npos);
  // shape x element size must be nbytes: 1 x 4 float64 is 32 bytes, not 31.
  EXPECT_NE(with([](json& j) {
              j["outputs"][0]["nbytes"] = 31;
            }).find("accuracy_reference.outputs[0].nbytes: is 31, but the shape's elements x 8 bytes"),
            std::string::npos);
  EXPECT_NE(with([](json& j) {
              j["inputs"][0]["shape"] = {1, -3};
            }).find("accuracy_reference.inputs[0].shape"),
            std::string::npos);
  EXPECT_NE(with([](json& j) {
              j["inputs"][0]["shape"] = {1LL << 40, 1LL << 40};
            }).find("accuracy_reference.inputs[0].shape"),
            std::string::npos);
  EXPECT_NE(with([](json& j) { j["inputs"][0]["offset"] = -1; }).find("accuracy_reference.inputs[0].offset"),
            std::string::npos);
  EXPECT_NE(with([](json& j) {
              j["outputs"][0].erase("eager_error");
            }).find("accuracy_reference.outputs[0].eager_error: is required"),
            std::string::npos);
  EXPECT_NE(with([](json& j) { j["outputs"][0]["eager_error"] = -1; }).find("eager_error: must be null or"),
            std::string::npos);
  // null: eager itself was not finite (the check is then unchecked, see below)
  EXPECT_EQ(with([](json& j) { j["outputs"][0]["eager_error"] = nullptr; }), "");
  EXPECT_EQ(with([](json& j) { j["future_member"] = 1; }), "");  // another program's answer: unknown members ignored
}

TEST(WorkerReference, ElementSizes) {
  EXPECT_EQ(element_size("float64"), std::optional<std::size_t>(8));
  EXPECT_EQ(element_size("bfloat16"), std::optional<std::size_t>(2));
  EXPECT_EQ(element_size("bool"), std::optional<std::size_t>(1));
  EXPECT_EQ(element_size("float8"), std::nullopt);
}

// ---- compare_output -------------------------------------------------------------------------

TEST(WorkerCompareOutput, RelativeL2ErrorAndCosineInDouble) {
  const at::Tensor ref = torch::tensor({3.0, 4.0}, torch::kDouble);
  const auto same = compare_output("o", ref.to(at::kFloat), ref, 1e-7);
  EXPECT_TRUE(same.floating);
  EXPECT_EQ(same.compiled_error, 0.0);
  EXPECT_EQ(same.eager_error, 1e-7);
  ASSERT_TRUE(same.cosine.has_value());
  EXPECT_NEAR(*same.cosine, 1.0, 1e-15);
  // ||(0, 0.5)|| / ||(3, 4)|| = 0.1; cosine (9 + 18) / (5 * sqrt(9 + 20.25)).
  const auto off = compare_output("o", torch::tensor({3.0F, 4.5F}), ref, 0);
  EXPECT_NEAR(off.compiled_error, 0.1, 1e-15);
  EXPECT_NEAR(*off.cosine, 27.0 / (5.0 * std::sqrt(29.25)), 1e-15);
  EXPECT_TRUE(off.compiled_finite);
  // A half-precision output is compared in double too.
  EXPECT_NEAR(compare_output("o", torch::tensor({3.0, 4.5}).to(at::kHalf), ref, 0).compiled_error, 0.1, 1e-12);
}

TEST(WorkerCompareOutput, AZeroReferenceGivesTheAbsoluteErrorAndACosineOfZero) {
  const auto out = compare_output("o", torch::tensor({0.0, 0.3, 0.4}), torch::zeros({3}, torch::kDouble), 0);
  EXPECT_NEAR(out.compiled_error, 0.5, 1e-7);
  EXPECT_EQ(out.cosine, std::optional<double>(0.0));
  // An output that underflowed to zeros (float16) is not close to a reference with values.
  const auto underflow = compare_output("o", torch::zeros({2}, torch::kHalf), torch::tensor({1e-9, 2e-9}), 1.0);
  EXPECT_EQ(underflow.compiled_error, 1.0);
  EXPECT_EQ(underflow.cosine, std::optional<double>(0.0));
  // Both all zeros: nothing to compare.
  const auto zeros = compare_output("o", torch::zeros({2}), torch::zeros({2}, torch::kDouble), 0);
  EXPECT_EQ(zeros.compiled_error, 0.0);
  EXPECT_FALSE(zeros.cosine.has_value());
}

TEST(WorkerCompareOutput, NonFiniteValuesWhereTheReferenceIsFiniteFail) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  const auto bad = compare_output("o", torch::tensor({1.0, nan}), torch::tensor({1.0, 2.0}, torch::kDouble), 0);
  EXPECT_FALSE(bad.compiled_finite);
  EXPECT_TRUE(std::isinf(bad.compiled_error));
  // Where the reference itself is not finite, the element is left out of the comparison.
  const auto masked =
      compare_output("o", torch::tensor({3.0, nan, 4.0}), torch::tensor({3.0, inf, 4.0}, torch::kDouble), 0);
  EXPECT_TRUE(masked.compiled_finite);
  EXPECT_EQ(masked.compiled_error, 0.0);
}

TEST(WorkerCompareOutput, NonFloatingOutputsMustMatchExactly) {
  const at::Tensor ref = torch::tensor({1, 7, 3}, torch::kLong);
  const auto equal = compare_output("ids", torch::tensor({1, 7, 3}, torch::kLong), ref, 0);
  EXPECT_FALSE(equal.floating);
  EXPECT_TRUE(equal.equal);
  EXPECT_FALSE(compare_output("ids", torch::tensor({1, 7, 4}, torch::kLong), ref, 0).equal);
  EXPECT_THROW(compare_output("ids", torch::tensor({1, 7}, torch::kLong), ref, 0), std::invalid_argument);
}

// ---- check_accuracy ---------------------------------------------------------------------------

// A runner whose run() returns what the test chose (or throws), recording the inputs it got.
class ScriptedRunner final : public ModelRunner {
 public:
  explicit ScriptedRunner(std::function<std::vector<at::Tensor>()> answer) : answer_(std::move(answer)) {}
  std::vector<at::Tensor> forward() override { return answer_(); }
  std::vector<at::Tensor> run(std::vector<at::Tensor> inputs) override {
    inputs_ = std::move(inputs);
    return answer_();
  }
  std::vector<at::Tensor> inputs_;

 private:
  std::function<std::vector<at::Tensor>()> answer_;
};

TEST_F(ReferenceFile, APackageThatMatchesTheReferencePasses) {
  ScriptedRunner runner([&] { return std::vector<at::Tensor>{output_.to(at::kFloat)}; });
  const AccuracyInfo info = check_accuracy(job(), runner);
  EXPECT_EQ(info.verdict, AccuracyVerdict::kPass) << info.detail;
  EXPECT_EQ(info.output, "logits");
  EXPECT_EQ(info.eager_error, 1e-7);
  EXPECT_NEAR(info.tolerance, 3e-7 + 1e-4, 1e-12);
  // The package ran on the reference's own inputs.
  ASSERT_EQ(runner.inputs_.size(), 1u);
  EXPECT_TRUE(runner.inputs_[0].equal(input_));
}

TEST_F(ReferenceFile, APerturbedPackageIsWrong) {
  ScriptedRunner runner([&] { return std::vector<at::Tensor>{(output_ * 1.05).to(at::kFloat)}; });
  const AccuracyInfo info = check_accuracy(job(), runner);
  EXPECT_EQ(info.verdict, AccuracyVerdict::kWrong);
  EXPECT_NEAR(info.compiled_error, 0.05, 1e-6);
  EXPECT_NE(info.detail.find("logits"), std::string::npos) << info.detail;
}

TEST_F(ReferenceFile, NondeterministicEagerIsItsOwnVerdict) {
  WorkerJob j = job();
  j.artifact_metadata["accuracy_reference"]["eager_deterministic"] = false;
  ScriptedRunner runner([&] { return std::vector<at::Tensor>{output_}; });
  EXPECT_EQ(check_accuracy(j, runner).verdict, AccuracyVerdict::kEagerNondeterministic);
}

TEST_F(ReferenceFile, WhatCannotBeCheckedIsUncheckedWithTheReason) {
  ScriptedRunner good([&] { return std::vector<at::Tensor>{output_}; });
  const auto unchecked_because = [&](WorkerJob j, ModelRunner& runner) {
    const AccuracyInfo info = check_accuracy(j, runner);
    EXPECT_EQ(info.verdict, AccuracyVerdict::kUnchecked);
    return info.detail;
  };
  WorkerJob old = job();
  old.artifact_metadata.erase("accuracy_reference");
  EXPECT_NE(unchecked_because(old, good).find("has no float64 reference"), std::string::npos);

  WorkerJob bad = job();
  bad.artifact_metadata["accuracy_reference"]["outputs"][0]["nbytes"] = 30;
  EXPECT_NE(unchecked_because(bad, good).find("unusable: accuracy_reference.outputs[0].nbytes"), std::string::npos);

  WorkerJob eager_nan = job();
  eager_nan.artifact_metadata["accuracy_reference"]["outputs"][0]["eager_error"] = nullptr;
  EXPECT_NE(unchecked_because(eager_nan, good).find("eager in float32 gives NaN or Inf in logits"), std::string::npos);

  WorkerJob other_inputs = job();
  other_inputs.inputs[0].shape = {2, 3};
  EXPECT_NE(
      unchecked_because(other_inputs, good).find("input pixel_values is float32 [1, 3], the job's float32 [2, 3]"),
      std::string::npos);

  write_bytes({input_, output_}, 1);
  EXPECT_NE(unchecked_because(job(), good).find("lie beyond reference.bin"), std::string::npos);
  write_bytes({input_, output_});

  ScriptedRunner two([&] { return std::vector<at::Tensor>{output_, output_}; });
  EXPECT_NE(unchecked_because(job(), two).find("returned 2 outputs"), std::string::npos);
  ScriptedRunner reshaped([&] { return std::vector<at::Tensor>{output_.reshape({4})}; });
  EXPECT_NE(unchecked_because(job(), reshaped).find("has shape [4], the reference [1, 4]"), std::string::npos);
  // A failure while checking (here an exception from the package) never escapes.
  ScriptedRunner throws([]() -> std::vector<at::Tensor> { throw std::runtime_error("API call failed"); });
  EXPECT_NE(unchecked_because(job(), throws).find("the accuracy check failed: API call failed"), std::string::npos);
  ScriptedRunner oom([]() -> std::vector<at::Tensor> { throw std::bad_alloc(); });
  EXPECT_NE(unchecked_because(job(), oom).find("out of memory"), std::string::npos);
}

// ---- dtypes -----------------------------------------------------------------------------------

TEST(WorkerDtype, AmpIsThePythonRuntimesAlone) {
  WorkerJob job;
  job.mode = Mode::kEager;
  job.format = "torchscript";
  job.dtype = Dtype::kAmp;
  Capabilities caps;
  caps.torch_version = "2.6.0";
  caps.aoti = true;
  const auto reason = unsupported_reason(job, caps);
  ASSERT_TRUE(reason.has_value());
  EXPECT_NE(reason->find("python runtime only"), std::string::npos) << *reason;
  job.dtype = Dtype::kBfloat16;
  EXPECT_EQ(unsupported_reason(job, caps), std::nullopt);
}

TEST(WorkerDtype, AnArtifactExportedInAnotherDtypeIsRefused) {
  WorkerJob job;
  job.mode = Mode::kEager;
  job.format = "torchscript";
  job.dtype = Dtype::kFloat16;
  job.artifact_metadata = {{"dtype", "float32"}};
  const auto err = check_job(job);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->field, "dtype");
  EXPECT_NE(err->message.find("exported in float32"), std::string::npos) << err->message;
  job.artifact_metadata["dtype"] = "float16";
  EXPECT_FALSE(check_job(job).has_value());
  job.artifact_metadata.erase("dtype");  // an artifact exported before the dtype axis: float32, unchecked
  EXPECT_FALSE(check_job(job).has_value());
}

}  // namespace
}  // namespace benchfleet::worker
