// The CLI's matrix files: YAML to JSON under the core schema, and errors that name the file,
// the line and the field.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "cli/matrix_file.h"
#include "common/codecs.h"

namespace benchfleet::cli {
namespace {

using nlohmann::json;

TEST(YamlToJson, CoreSchemaScalars) {
  auto doc = yaml_to_json(
      "a: 1\nb: -2.5\nc: true\nd: null\ne: ~\nf: \"1\"\ng: '3.5'\nh: hello\ni: 1e3\nj: !!str 12\nk:\nl: False\n");
  ASSERT_TRUE(doc.ok()) << doc.error().message;
  EXPECT_EQ(doc->json, json::parse(R"({"a":1,"b":-2.5,"c":true,"d":null,"e":null,"f":"1","g":"3.5","h":"hello",
                                       "i":1000.0,"j":"12","k":null,"l":false})"));
  EXPECT_TRUE(doc->json["a"].is_number_integer());
}

TEST(YamlToJson, NestedPathsKnowTheirLines) {
  auto doc = yaml_to_json("name: x\nmodels:\n  - m1\n  - m2\nmeasurement:\n  warmup: 3\n");
  ASSERT_TRUE(doc.ok());
  EXPECT_EQ(doc->line_of("name"), 1);
  EXPECT_EQ(doc->line_of("models[1]"), 4);
  EXPECT_EQ(doc->line_of("measurement.warmup"), 6);
  // A missing member is reported where its parent mapping starts.
  EXPECT_EQ(doc->line_of("measurement.min_iterations"), 6);
  EXPECT_EQ(doc->line_of("nothing.here"), 1);
}

TEST(YamlToJson, RefusesWhatJsonCannotCarry) {
  auto dup = yaml_to_json("a: 1\nb: 2\na: 3\n");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().message, "line 3: duplicate key \"a\"");
  auto inf = yaml_to_json("a: .inf\n");
  ASSERT_FALSE(inf.ok());
  EXPECT_NE(inf.error().message.find("line 1"), std::string::npos);
  auto big = yaml_to_json("a: 99999999999999999999\n");
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("out of range"), std::string::npos);
  auto key = yaml_to_json("? [a, b]\n: 1\n");
  ASSERT_FALSE(key.ok());
  EXPECT_NE(key.error().message.find("keys must be strings"), std::string::npos);
  auto syntax = yaml_to_json("a: [1, 2\nb: 3\n");
  ASSERT_FALSE(syntax.ok());
  EXPECT_EQ(syntax.error().message.rfind("line ", 0), 0u);
}

constexpr const char* kMatrix = R"(# a comment
name: cpu demo
models: [torchvision/resnet18, torchvision/squeezenet1_1]
batch_sizes: [1, 4, 32]
modes: [eager, torchscript]
torch_builds: [local]
gpus: [cpu]
memory_limit_mb: 450
measurement:
  warmup: 2
  min_iterations: 5
)";

TEST(ParseMatrix, ValidFileDecodesAsTheApiWould) {
  auto m = parse_matrix(kMatrix, "demo.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->job_count, 2u * 3 * 2);
  EXPECT_EQ(m->spec.memory_limit_mb, 450);
  EXPECT_EQ(m->spec.measurement.warmup, 2);
  EXPECT_EQ(m->spec.measurement.max_iterations, MeasurementSpec{}.max_iterations);
  // The JSON submitted is the file's own fields: the coordinator decodes it the same way.
  auto again = decode<MatrixSpec>(m->document.json);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, m->spec);
}

TEST(ParseMatrix, ErrorsNameFileLineAndField) {
  std::string bad = kMatrix;
  bad.replace(bad.find("[1, 4, 32]"), 10, "[1, 0, 32]");
  auto m = parse_matrix(bad, "demo.yaml");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().field, "batch_sizes[1]");
  EXPECT_EQ(m.error().message.rfind("demo.yaml: line 4: batch_sizes[1]: ", 0), 0u) << m.error().message;

  auto unknown = parse_matrix(std::string(kMatrix) + "  warmpu: 3\n", "demo.yaml");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().message.rfind("demo.yaml: line 12: measurement.warmpu: ", 0), 0u)
      << unknown.error().message;

  auto mode =
      parse_matrix("name: x\nmodels: [a]\nbatch_sizes: [1]\nmodes: [fast]\ntorch_builds: [s]\ngpus: [cpu]\n", "m.yaml");
  ASSERT_FALSE(mode.ok());
  EXPECT_EQ(mode.error().message.rfind("m.yaml: line 4: modes[0]: ", 0), 0u) << mode.error().message;

  auto missing = parse_matrix("name: x\nmodels: [a]\n", "m.yaml");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("is required"), std::string::npos);

  auto list = parse_matrix("- a\n- b\n", "m.yaml");
  ASSERT_FALSE(list.ok());
  EXPECT_NE(list.error().message.find("must be a mapping"), std::string::npos);
}

// The fields: dtypes multiply the jobs; dynamic, shape_walk and noise are read as the API
// reads them, and an error names the file, the line and the field.
TEST(ParseMatrix, DtypesDynamicShapeWalkAndNoise) {
  const std::string extra =
      "dtypes: [float32, bfloat16]\n"
      "dynamic: true\n"
      "shape_walk: yes\n"
      "noise:\n"
      "  max_cv: 0.05\n";
  auto m = parse_matrix(std::string(kMatrix) + extra, "demo.yaml");
  ASSERT_FALSE(m.ok()) << "yes is a string under the core schema";
  EXPECT_EQ(m.error().field, "shape_walk");
  EXPECT_EQ(m.error().message.rfind("demo.yaml: line 14: shape_walk: must be a boolean", 0), 0u) << m.error().message;

  std::string good = std::string(kMatrix) + extra;
  good.replace(good.find("shape_walk: yes"), 15, "shape_walk: true");
  m = parse_matrix(good, "demo.yaml");
  ASSERT_TRUE(m.ok()) << m.error().message;
  EXPECT_EQ(m->job_count, 2u * 3 * 2 * 2) << "models x batches x modes x dtypes";
  EXPECT_EQ(m->spec.dtypes, (std::vector<Dtype>{Dtype::kFloat32, Dtype::kBfloat16}));
  EXPECT_TRUE(m->spec.dynamic);
  EXPECT_TRUE(m->spec.shape_walk);
  EXPECT_EQ(m->spec.noise, (NoiseSpec{0.05, NoiseSpec{}.max_clock_drop}));

  std::string bad = good;
  bad.replace(bad.find("[float32, bfloat16]"), 19, "[float32, fp16]");
  m = parse_matrix(bad, "demo.yaml");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().field, "dtypes[1]");
  EXPECT_EQ(m.error().message.rfind("demo.yaml: line 12: dtypes[1]: unknown value \"fp16\"", 0), 0u)
      << m.error().message;
  bad = good;
  bad.replace(bad.find("max_cv: 0.05"), 12, "max_cv: -1");
  m = parse_matrix(bad, "demo.yaml");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().message, "demo.yaml: line 16: noise.max_cv: must be > 0 and <= 10");
}

TEST(ParseMatrix, ShippedExamplesAreValid) {
  // Every matrix shipped in examples/ (a new one is checked without being listed here).
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(BENCHFLEET_SOURCE_DIR) + "/examples")) {
    if (entry.path().extension() != ".yaml") continue;
    auto m = load_matrix_file(entry.path().string());
    ASSERT_TRUE(m.ok()) << entry.path() << ": " << m.error().message;
    ++files;
  }
  EXPECT_GE(files, 8);
  // The seeds' study on the CPU: 12 models x batch 1, 4, 16 x eager and default on unstable.
  auto cpu = load_matrix_file(std::string(BENCHFLEET_SOURCE_DIR) + "/examples/seed-study-cpu.yaml");
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->job_count, 12u * 3 * 2);
  EXPECT_EQ(cpu->spec.torch_builds, std::vector<std::string>{"unstable"});
  // The seeds' study: 12 models x 3 batches x 3 modes x 2 builds x 3 GPUs, 300 fixed iterations.
  auto seed = load_matrix_file(std::string(BENCHFLEET_SOURCE_DIR) + "/examples/seed-matrix.yaml");
  ASSERT_TRUE(seed.ok());
  EXPECT_EQ(seed->job_count, 12u * 3 * 3 * 2 * 3);
  EXPECT_EQ(seed->spec.measurement.min_iterations, 300);
  EXPECT_EQ(seed->spec.measurement.max_iterations, 300);
  // Measured as the seeds did: torch.compile in python.
  EXPECT_EQ(seed->spec.runtimes, std::vector<Runtime>{Runtime::kPython});
}

TEST(LoadMatrixFile, MissingFileIsAnError) {
  auto m = load_matrix_file("/nonexistent/matrix.yaml");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().message.find("/nonexistent/matrix.yaml"), std::string::npos);
}

}  // namespace
}  // namespace benchfleet::cli
