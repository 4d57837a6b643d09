// Integration: the quick start's two torch builds side by side on one agent — `stable`, Debian 13's
// torch 2.6, and `unstable`, Debian unstable's torch 2.14 with transformers — each in its own root
// (scripts/torch-root.sh --suite trixie|sid), declared as the quick start declares them (no worker:
// the python runtime only), against the real coordinator. SqueezeNet runs eager and torch.compile
// `default` on both; a seed model, SegFormer-b0, runs eager on both: transformers exists only in
// the unstable root, so the stable cell is `unsupported` with the reason. The report's headers show
// each build's torch, and compiled CPU results record a vector ISA (Inductor's kernels are not
// scalar code).
//
// Needs both roots (scripts/test.sh makes them); skips without them unless
// BENCHFLEET_REQUIRE_TORCH_ROOT=1, which scripts/test.sh sets. Mostly the two compiles, cold only
// on a machine's first run (the agent's artifact directory, with its Inductor caches, is kept).
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <string>

#include "tests/integration/agent_test_util.h"
#include "tests/integration/torch_root_util.h"

namespace benchfleet::testing {
namespace {

const std::string kSegformer = "nvidia/segformer-b0-finetuned-ade-512-512";

bool cpu_has_vector_units() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) == 0) {
      return line.find(" avx2") != std::string::npos || line.find(" avx512f") != std::string::npos;
    }
  }
  return false;
}

TEST(StableUnstable, TwoDebianTorchBuildsSideBySideWithASeedModel) {
  REQUIRE_ROOTS(missing_sid_root());
  CoordinatorProcess coord({BENCHFLEET_FAST_LEASES});
  // As the quick start declares them: no worker in the roots (its matrices are torch.compile's,
  // the python runtime), so each build offers the python runtime only.
  // Its Inductor caches are kept between test runs (the cold and warm compiles are TorchRoot's to
  // check): two cold compiles cost about two minutes of the suite on 2 cores.
  const std::string config = coord.dir() + "/agent-stable-unstable.yaml";
  std::ofstream(config) << "artifact_dir: " << kept_test_dir("stable-unstable") << "\n"
                        << "builds:\n"
                        << "  - {name: stable, python: /usr/bin/python3, root: " << BENCHFLEET_TORCH_ROOT << "}\n"
                        << "  - {name: unstable, python: /usr/bin/python3, root: " << BENCHFLEET_SID_ROOT << "}\n";
  AgentProcess agent(agent_options(coord, "two-suites", config));
  agent.start();
  ASSERT_TRUE(wait_online(coord, {"two-suites"}, 300s)) << agents_of(coord).dump(1);

  std::map<std::string, std::string> versions;
  const json listed = agent_named(coord, "two-suites");
  for (const auto& b : listed["torch_builds"]) {
    versions[b.value("name", "")] = b.value("version", "");
    ASSERT_EQ(b["runtimes"].size(), 1u) << b.dump(1);
    EXPECT_EQ(b["runtimes"][0].value("runtime", ""), "python") << b.dump(1);
  }
  EXPECT_EQ(versions["stable"].rfind("2.6", 0), 0u) << listed.dump(1);
  EXPECT_EQ(versions["unstable"].rfind("2.14", 0), 0u) << listed.dump(1);

  // Two cold compiles (SqueezeNet on each build); the seed model eager only (its compile is the
  // seed slice's, in the python tests).
  json matrix = cpu_matrix({kSqueezenet}, {1}, {"eager", "default"});
  matrix["name"] = "stable vs unstable";
  matrix["torch_builds"] = {"stable", "unstable"};
  matrix["runtimes"] = {"python"};
  const json run = coord.submit(matrix);
  ASSERT_EQ(run["job_count"], 4);
  json seed = cpu_matrix({kSegformer}, {1}, {"eager"});
  seed["name"] = "a seed model on both";
  seed["torch_builds"] = {"stable", "unstable"};
  seed["runtimes"] = {"python"};
  const json seed_run = coord.submit(seed);
  ASSERT_EQ(seed_run["job_count"], 2);
  ASSERT_TRUE(wait_run_state(coord, run, "done", 900s)) << run_of(coord, run).dump(1);
  ASSERT_TRUE(wait_run_state(coord, seed_run, "done", 300s)) << run_of(coord, seed_run).dump(1);

  int checked = 0;
  std::vector<json> rows = results_of(coord, run);
  for (const json& row : results_of(coord, seed_run)) rows.push_back(row);
  for (const auto& row : rows) {
    const json& job = row.at("job");
    const json& r = row.at("result");
    const std::string build = job.value("torch_build", ""), mode = job.value("mode", ""),
                      model = job.value("model", "");
    SCOPED_TRACE(build + " " + mode + " " + model);
    if (model == kSegformer && build == "stable") {  // transformers exists only in the unstable root
      EXPECT_EQ(r.value("status", ""), "unsupported") << r.dump(1);
      EXPECT_NE(r.value("error", "").find("transformers"), std::string::npos) << r.dump(1);
      ++checked;
      continue;
    }
    ASSERT_EQ(r.value("status", ""), "ok") << r.dump(1);
    const json& env = r.at("environment");
    EXPECT_EQ(env.value("build_root_suite", ""), build == "stable" ? "trixie" : "sid") << env.dump(1);
    EXPECT_EQ(env.value("torch_version", "").rfind(build == "stable" ? "2.6" : "2.14", 0), 0u) << env.dump(1);
    if (model == kSegformer) {
      EXPECT_FALSE(env.value("transformers_version", "").empty()) << env.dump(1);
    }
    if (mode == "default") {
      ASSERT_TRUE(r.contains("accuracy")) << r.dump(1);
      EXPECT_EQ(r["accuracy"].value("verdict", ""), "pass") << r["accuracy"].dump(1);
      const std::string isa = env.value("inductor_vec_isa", "");
      EXPECT_FALSE(isa.empty() || isa == "unknown") << env.dump(1);
      if (cpu_has_vector_units()) {
        EXPECT_NE(isa, "none") << "Inductor's kernels are scalar code";
      }
    }
    ++checked;
  }
  EXPECT_EQ(checked, 6);

  const json report = coord.get_json(run_url(run) + "/report?format=json");
  ASSERT_FALSE(report["tables"].empty()) << report.dump(1);
  std::set<std::string> headers;
  for (const auto& c : report["tables"][0]["columns"]) headers.insert(c.value("header", ""));
  for (const std::string want : {"stable (torch 2.6", "unstable (torch 2.14"}) {
    bool found = false;
    for (const auto& h : headers) found = found || h.rfind(want, 0) == 0;
    EXPECT_TRUE(found) << want << " in " << json(headers).dump();
  }
}

}  // namespace
}  // namespace benchfleet::testing
