// Integration: accuracy verdicts and the dtype axis of the libtorch runtime with
// Debian 13's torch 2.6 in its root (scripts/torch-root.sh), against the real coordinator and
// agent. The exporter compiles real AOTInductor packages on the CPU and records a float64
// reference beside each (reference.bin); the worker (compiled inside the root against LibTorch
// 2.6) judges the package against it after measuring:
//   - mobilenet_v3_small, default mode, float32: `pass`;
//   - resnet18, default mode, float32: judged like any other (in this root Inductor finds no
//     vector ISA, its check build lacking sleef.h, and its scalar code is 4.8e-7 off the float64
//     reference, eager 4.4e-7: `pass`; the 4.9% is not seen with these kernels, and
//     torch.compile in the same root agrees);
//   - float16 on this CPU: torch 2.6 has CPU float16 kernels, so the cell is measured (ok) and
//     `unchecked`: mobilenet_v3_small's random-init logits (~1e-9) underflow to zeros in float16,
//     in eager as in the package (eager_error 1: nothing to judge against); amp with the libtorch
//     runtime: `unsupported`, nothing exported;
//   - with BENCHFLEET_TEST_PERTURB_COMPILED=0.05 in the agent's environment the exporter bakes a
//     5% perturbation into the package (test only) and the verdict is `wrong`.
//
// Needs BENCHFLEET_TORCH_ROOT and BENCHFLEET_ROOT_WORKER (scripts/test.sh makes both); skips
// without them unless BENCHFLEET_REQUIRE_TORCH_ROOT=1. Minutes of compiling (the verdicts' packages
// only on a machine's first run: kept_test_dir).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <tuple>

#include "tests/integration/agent_test_util.h"
#include "tests/integration/torch_root_util.h"

namespace benchfleet::testing {
namespace {

namespace fs = std::filesystem;

const std::string kResnet = "torchvision/resnet18";
const std::string kBuild = "torch26";  // Debian 13's torch 2.6, in its root

// An agent config with the root's build alone; its artifact cache (exported packages, their
// references, Inductor's caches) in `artifact_dir` when given.
std::string write_root_config(const CoordinatorProcess& coord, const std::string& artifact_dir = "") {
  const std::string path = coord.dir() + "/agent-root.yaml";
  std::ofstream out(path);
  if (!artifact_dir.empty()) out << "artifact_dir: " << artifact_dir << "\n";
  out << "builds:\n"
      << "  - {name: " << kBuild << ", python: /usr/bin/python3, worker: " << BENCHFLEET_ROOT_WORKER
      << ", root: " << BENCHFLEET_TORCH_ROOT << "}\n";
  return path;
}

// A CPU matrix of the root's build, libtorch runtime, default mode, 3 timed iterations.
json default_mode_matrix(const std::vector<std::string>& models, const std::vector<std::string>& dtypes) {
  json m = cpu_matrix(models, {1}, {"default"}, kBuild);
  m["name"] = "accuracy";
  m["dtypes"] = dtypes;
  m["measurement"]["max_iterations"] = 3;
  return m;
}

// (model, dtype) -> the result of each job of the run.
std::map<std::pair<std::string, std::string>, json> results_by_dtype(CoordinatorProcess& coord, const json& run) {
  std::map<std::pair<std::string, std::string>, json> out;
  for (const auto& r : results_of(coord, run)) {
    const json& spec = r.at("job");
    out[{spec.value("model", ""), spec.value("dtype", "float32")}] = r.at("result");
  }
  return out;
}

// The accuracy figures every judged result carries.
void expect_judged(const json& result) {
  ASSERT_TRUE(result.contains("accuracy")) << result.dump(1);
  const json& a = result["accuracy"];
  EXPECT_EQ(a.value("output", ""), "logits") << a.dump(1);
  EXPECT_GT(a.value("tolerance", 0.0), 0.0) << a.dump(1);
  EXPECT_GT(a.value("eager_error", 0.0), 0.0) << a.dump(1);
  EXPECT_GE(result["telemetry"].value("accuracy_check_ms", -1.0), 0.0) << result.dump(1);
}

TEST(AccuracyRoot, VerdictsAndDtypesOfTheLibtorchRuntime) {
  REQUIRE_TORCH_ROOT();
  CoordinatorProcess coord({BENCHFLEET_FAST_LEASES});
  // The packages are kept between test runs (the verdicts are the worker's, from each package and
  // its reference; exporting is TorchRoot's to check cold): three AOTInductor exports cost
  // minutes of the suite on 2 cores. The perturbed package below is always made anew.
  AgentProcess agent(agent_options(coord, "root", write_root_config(coord, kept_test_dir("accuracy-verdicts"))));
  agent.start();
  ASSERT_TRUE(wait_online(coord, {"root"}, 300s)) << agents_of(coord).dump(1);

  const json run = coord.submit(default_mode_matrix({kMobilenet}, {"float32", "float16", "amp"}));
  ASSERT_EQ(run["job_count"], 3) << run.dump(1);
  ASSERT_TRUE(wait_run_state(coord, run, "done", 1200s)) << run_of(coord, run).dump(1);
  auto cells = results_by_dtype(coord, run);
  ASSERT_EQ(cells.size(), 3u);

  // float32: the package agrees with the float64 reference about as well as eager does.
  const json& float32 = cells[{kMobilenet, "float32"}];
  ASSERT_EQ(float32.value("status", ""), "ok") << float32.dump(1);
  expect_judged(float32);
  EXPECT_EQ(float32["accuracy"].value("verdict", ""), "pass") << float32["accuracy"].dump(1);
  EXPECT_LT(float32["accuracy"].value("compiled_error", 1.0), 1e-4) << float32["accuracy"].dump(1);

  // float16: torch 2.6 has CPU float16 kernels (torch 1.13's conv has none): measured and judged
  // against the same float64 reference, the model's inputs in float16. The logits underflow to
  // zeros in eager as in the package: eager is 100% off the reference, so nothing can be judged
  // against it (common/accuracy.h kMaxEagerError): unchecked, saying why.
  const json& float16 = cells[{kMobilenet, "float16"}];
  ASSERT_EQ(float16.value("status", ""), "ok") << float16.dump(1);
  ASSERT_TRUE(float16.contains("accuracy")) << float16.dump(1);
  const json& fa = float16["accuracy"];
  EXPECT_EQ(fa.value("verdict", ""), "unchecked") << fa.dump(1);
  EXPECT_NE(fa.value("detail", "").find("eager in float16 is itself"), std::string::npos) << fa.dump(1);

  // amp: autocast is the python runtime's; the agent says so without exporting anything.
  const json& amp = cells[{kMobilenet, "amp"}];
  EXPECT_EQ(amp.value("status", ""), "unsupported") << amp.dump(1);
  EXPECT_NE(amp.value("error", "").find("python runtime only"), std::string::npos) << amp.dump(1);
  EXPECT_FALSE(amp.contains("accuracy")) << amp.dump(1);

  // resnet18: its verdict follows from its own figures (see the header for what they are here),
  // and its latency is measured and stored either way.
  const json resnet_run = coord.submit(default_mode_matrix({kResnet}, {"float32"}));
  ASSERT_TRUE(wait_run_state(coord, resnet_run, "done", 1200s)) << run_of(coord, resnet_run).dump(1);
  cells = results_by_dtype(coord, resnet_run);
  const json& resnet = cells[{kResnet, "float32"}];
  ASSERT_EQ(resnet.value("status", ""), "ok") << resnet.dump(1);
  expect_judged(resnet);
  const json& ra = resnet["accuracy"];
  EXPECT_LT(ra.value("eager_error", 1.0), 1e-5) << ra.dump(1);  // float32 eager against float64
  EXPECT_NEAR(ra.value("tolerance", 0.0), 3 * ra.value("eager_error", 0.0) + 1e-4, 1e-12) << ra.dump(1);
  EXPECT_EQ(ra.value("verdict", ""), ra.value("compiled_error", 1.0) <= ra.value("tolerance", 0.0) ? "pass" : "wrong")
      << ra.dump(1);
  EXPECT_GT(resnet["stats"].value("median_ms", 0.0), 0.0) << resnet.dump(1);
  EXPECT_FALSE(resnet["telemetry"].contains("test_perturb_compiled")) << resnet.dump(1);
  EXPECT_TRUE(poll_until([&] { return agent.spool_entries().empty(); }, 10s));
}

TEST(AccuracyRoot, APerturbedPackageIsWrong) {
  REQUIRE_TORCH_ROOT();
  CoordinatorProcess coord({BENCHFLEET_FAST_LEASES});
  AgentOptions options = agent_options(coord, "perturbed", write_root_config(coord));
  // The test-only fault flag reaches the exporter through the agent and in-root.sh.
  options.wrapper = {"/usr/bin/env", "BENCHFLEET_TEST_PERTURB_COMPILED=0.05"};
  AgentProcess agent(options);
  agent.start();
  ASSERT_TRUE(wait_online(coord, {"perturbed"}, 300s)) << agents_of(coord).dump(1);

  const json run = coord.submit(default_mode_matrix({kMobilenet}, {"float32"}));
  ASSERT_TRUE(wait_run_state(coord, run, "done", 1200s)) << run_of(coord, run).dump(1);
  auto cells = results_by_dtype(coord, run);
  const json& r = cells[{kMobilenet, "float32"}];
  ASSERT_EQ(r.value("status", ""), "ok") << r.dump(1);  // measured all the same
  EXPECT_EQ(r["telemetry"].value("test_perturb_compiled", 0.0), 0.05) << r.dump(1);
  expect_judged(r);
  const json& a = r["accuracy"];
  EXPECT_EQ(a.value("verdict", ""), "wrong") << a.dump(1);
  // 0.05 x ||out|| / sqrt(n) x N(0, 1) noise: about 5% off the reference.
  EXPECT_GT(a.value("compiled_error", 0.0), 0.03) << a.dump(1);
  EXPECT_LT(a.value("compiled_error", 1.0), 0.08) << a.dump(1);
  EXPECT_NE(a.value("detail", "").find("logits"), std::string::npos) << a.dump(1);
  EXPECT_TRUE(poll_until([&] { return agent.spool_entries().empty(); }, 10s));
}

}  // namespace
}  // namespace benchfleet::testing
