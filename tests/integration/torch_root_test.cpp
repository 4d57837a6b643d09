// Integration: two torch builds side by side on one agent — Debian 12's torch 1.13 on
// the host and Debian 13's torch 2.6 in its own root filesystem (scripts/torch-root.sh), whose
// exporter, python runner and worker (compiled inside the root against LibTorch 2.6) run inside
// it through scripts/in-root.sh — against the real coordinator. torch.compile (python runtime)
// and AOTInductor packages (libtorch runtime) really compile and run on the CPU: cold on the
// first run, from Inductor's cache and the artifact cache on the second. A root with torch
// removed gives its build's cells a clear `error` while the agent serves its other build.
//
// Needs BENCHFLEET_TORCH_ROOT and BENCHFLEET_ROOT_WORKER (scripts/test.sh makes both); skips
// without them unless BENCHFLEET_REQUIRE_TORCH_ROOT=1, which scripts/test.sh sets.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "common/stats.h"
#include "tests/integration/agent_test_util.h"
#include "tests/integration/torch_root_util.h"

namespace benchfleet::testing {
namespace {

namespace fs = std::filesystem;

const std::string kOld = "torch113";  // Debian 12's torch 1.13, on the host
const std::string kNew = "torch26";   // Debian 13's torch 2.6, in its root

std::string root_id_of(const std::string& root) {
  std::ifstream in(fs::path(root) / "etc" / "benchfleet-root.json");
  return json::parse(in).value("root_id", "");
}

// The agent config with the host build and a build in `root`.
std::string write_two_builds_config(const CoordinatorProcess& coord, const std::string& root_build,
                                    const std::string& root) {
  const std::string path = coord.dir() + "/agent-two-builds.yaml";
  std::ofstream(path) << "builds:\n"
                      << "  - {name: " << kOld << ", python: " << BENCHFLEET_TORCH_PYTHON
                      << ", worker: " << BENCHFLEET_WORKER_BIN << "}\n"
                      << "  - {name: " << root_build << ", python: /usr/bin/python3, worker: " << BENCHFLEET_ROOT_WORKER
                      << ", root: " << root << "}\n";
  return path;
}

// (build, runtime, mode, model) -> the result row of each job of the run.
using CellKey = std::tuple<std::string, std::string, std::string, std::string>;
std::map<CellKey, json> results_by_cell(CoordinatorProcess& coord, const json& run) {
  // With samples a page holds at most 10 results: follow the cursor.
  std::map<CellKey, json> out;
  std::string cursor;
  do {
    const json page =
        coord.get_json(run_url(run) + "/results?samples=true" + (cursor.empty() ? "" : "&cursor=" + cursor));
    for (const auto& r : page.at("results")) {
      const json& s = r.at("job");
      out[{s.value("torch_build", ""), s.value("runtime", ""), s.value("mode", ""), s.value("model", "")}] = r;
    }
    cursor = page.value("next_cursor", json()).is_string() ? page["next_cursor"].get<std::string>() : "";
  } while (!cursor.empty());
  return out;
}

std::string describe(const CellKey& k) {
  return std::get<0>(k) + " " + std::get<1>(k) + " " + std::get<2>(k) + " " + std::get<3>(k);
}

// Every statistic the result reports is compute_statistics() of its own samples.
void expect_statistics_recompute(const json& result) {
  const auto samples = result.at("samples_ms").get<std::vector<double>>();
  ASSERT_FALSE(samples.empty()) << result.dump(1);
  const Statistics again = compute_statistics(samples);
  const json& stats = result.at("stats");
  EXPECT_EQ(stats.value("iterations", 0), static_cast<int>(samples.size()));
  EXPECT_DOUBLE_EQ(stats.value("mean_ms", -1.0), again.mean_ms);
  EXPECT_DOUBLE_EQ(stats.value("median_ms", -1.0), again.median_ms);
  EXPECT_DOUBLE_EQ(stats.value("min_ms", -1.0), again.min_ms);
  EXPECT_DOUBLE_EQ(stats.value("max_ms", -1.0), again.max_ms);
  EXPECT_DOUBLE_EQ(stats.value("p90_ms", -1.0), again.p90_ms);
}

// The report's compile and memory columns agree with the stored results they come
// from: compile time = the python runner's compile_ms or the AOTInductor export (export_s), marked
// warm when a cache served it; peak memory = peak RSS on the CPU; memory ratio = eager / compiled.
// Every compiled mode of the root's build has a pass rate counting its accurate cells.
void expect_compile_and_memory_columns(const json& table, const std::map<CellKey, json>& cells, bool cold) {
  std::map<std::string, std::size_t> column;
  for (std::size_t i = 0; i < table["columns"].size(); ++i) column[table["columns"][i].value("key", "")] = i;
  int checked = 0;
  for (const auto& row : table["rows"]) {
    const std::string model = row.value("model", "");
    for (const std::string runtime : {"libtorch", "python"}) {
      const std::string side = kNew + "/" + runtime + "/";
      const json& eager = cells.at({kNew, runtime, "eager", model})["result"];
      for (const std::string mode : {"default"}) {
        SCOPED_TRACE(model + " " + runtime + " " + mode);
        const json& r = cells.at({kNew, runtime, mode, model})["result"];
        ASSERT_TRUE(column.contains("compile/" + side + mode)) << table["columns"].dump(1);
        const json& compile = row["cells"][column["compile/" + side + mode]];
        const double want_ms =
            runtime == "python" ? r["telemetry"].value("compile_ms", -1.0) : 1000 * r.value("export_s", -1.0);
        EXPECT_NEAR(compile.value("value", -1.0), want_ms, 1e-6 * want_ms) << compile.dump(1);
        // A warm compile is marked (python: Inductor's cache; libtorch: the artifact cache).
        EXPECT_EQ(compile.value("text", "").find("(warm)") != std::string::npos, !cold) << compile.dump(1);
        const json& memory = row["cells"][column["memory/" + side + mode]];
        const double rss = r["memory"].value("peak_rss_bytes", 0.0);
        EXPECT_NEAR(memory.value("value", -1.0), rss / (1024 * 1024), 1e-6 * rss) << memory.dump(1);
        const json& ratio = row["cells"][column["memory_ratio/" + side + mode]];
        EXPECT_NEAR(ratio.value("value", -1.0), eager["memory"].value("peak_rss_bytes", 0.0) / rss, 1e-9)
            << ratio.dump(1);
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, 2);
  int rates = 0;
  for (const auto& rate : table["pass_rates"]) {
    if (rate.value("column", "").rfind("latency/" + kNew + "/", 0) != 0) continue;
    EXPECT_EQ(rate.value("attempted", 0), 1) << rate.dump(1);
    EXPECT_EQ(rate.value("passed", 0), 1) << rate.dump(1);  // SqueezeNet compiles accurately
    ++rates;
  }
  EXPECT_EQ(rates, 2) << table["pass_rates"].dump(1);
}

TEST(TorchRoot, CompiledModesOnTwoBuildsColdThenWarm) {
  REQUIRE_TORCH_ROOT();
  CoordinatorProcess coord({BENCHFLEET_FAST_LEASES});
  AgentOptions options =
      agent_options(coord, "two-builds", write_two_builds_config(coord, kNew, BENCHFLEET_TORCH_ROOT));
  // Named relative to this test's working directory, as a user may: the root's exporter runs with
  // another working directory, and once wrote its packages where the agent did not look.
  options.state_dir = std::filesystem::relative(options.state_dir).string();
  ASSERT_FALSE(options.state_dir.empty() || options.state_dir.front() == '/') << options.state_dir;
  AgentProcess agent(options);
  agent.start();
  ASSERT_TRUE(wait_online(coord, {"two-builds"}, 300s)) << agents_of(coord).dump(1);

  // The agent advertises both builds with the torch each really has, and on the CPU torch 2.6
  // offers the compiled modes that need no CUDA graphs, in both runtimes.
  std::map<std::string, json> builds;
  const json listed = agent_named(coord, "two-builds");  // iterating a member of a temporary would dangle
  for (const auto& b : listed["torch_builds"]) builds[b.value("name", "")] = b;
  ASSERT_EQ(builds.size(), 2u) << agent_named(coord, "two-builds").dump(1);
  EXPECT_EQ(builds[kOld].value("version", "").rfind("1.13", 0), 0u) << builds[kOld].dump();
  EXPECT_EQ(builds[kNew].value("version", "").rfind("2.6", 0), 0u) << builds[kNew].dump();
  for (const auto& rt : builds[kNew]["runtimes"]) {
    const auto modes = rt["modes"].get<std::set<std::string>>();
    EXPECT_TRUE(modes.contains("default") && modes.contains("max-autotune-no-cudagraphs")) << rt.dump();
    EXPECT_FALSE(modes.contains("reduce-overhead") || modes.contains("max-autotune")) << rt.dump();
  }

  // One small torchvision model (SqueezeNet compiles in about half MobileNetV3's time), eager
  // and `default`: each compiled cell costs a cold compile (about 40 s alone on 2 cores, minutes
  // beside the rest of the suite), so one model is what the claims need, and max-autotune's cold
  // compile is the runner tests' (test_runner).
  json matrix = cpu_matrix({kSqueezenet}, {1}, {"eager", "default"});
  matrix["name"] = "two torch builds";
  matrix["torch_builds"] = {kOld, kNew};
  matrix["runtimes"] = {"libtorch", "python"};
  const std::string root_id = root_id_of(BENCHFLEET_TORCH_ROOT);

  std::map<CellKey, json> first;
  for (int pass = 0; pass < 2; ++pass) {
    const bool cold = pass == 0;
    SCOPED_TRACE(cold ? "first run (cold)" : "second run (warm)");
    const json run = coord.submit(matrix);
    ASSERT_EQ(run["job_count"], 8);
    ASSERT_TRUE(wait_run_state(coord, run, "done", cold ? 1200s : 600s)) << run_of(coord, run).dump(1);
    const auto cells = results_by_cell(coord, run);
    ASSERT_EQ(cells.size(), 8u);
    for (const auto& [key, row] : cells) {
      const auto& [build, runtime, mode, model] = key;
      SCOPED_TRACE(describe(key));
      const json& r = row.at("result");
      const bool compiled = mode != "eager";
      if (build == kOld && compiled) {
        // Torch 1.13 has neither torch.compile nor AOTInductor: unsupported, with the reason.
        EXPECT_EQ(r.value("status", ""), "unsupported") << r.dump(1);
        EXPECT_FALSE(r.value("error", "").empty()) << r.dump(1);
        continue;
      }
      ASSERT_EQ(r.value("status", ""), "ok") << r.dump(1);
      expect_statistics_recompute(r);
      const json& env = r.at("environment");
      EXPECT_EQ(env.value("build", ""), build) << env.dump(1);
      EXPECT_EQ(env.value("torch_version", "").rfind(build == kOld ? "1.13" : "2.6", 0), 0u) << env.dump(1);
      if (build == kNew) {
        EXPECT_EQ(env.value("build_root", ""), BENCHFLEET_TORCH_ROOT) << env.dump(1);
        EXPECT_EQ(env.value("build_root_id", ""), root_id) << env.dump(1);
      } else {
        EXPECT_FALSE(env.contains("build_root")) << env.dump(1);
      }
      const json& t = r.at("telemetry");
      if (runtime == "python" && compiled) {
        // torch.compile: compile time recorded, cold from an empty Inductor cache, then warm.
        EXPECT_GT(t.value("compile_ms", 0.0), 0.0) << t.dump(1);
        EXPECT_GE(t.value("graphs", 0), 1) << t.dump(1);
        EXPECT_EQ(t.value("inductor_cache", ""), cold ? "cold" : "warm") << t.dump(1);
      }
      if (compiled) {
        // Every compiled result of torch 2.6 carries an accuracy verdict against a
        // float64 reference; SqueezeNet compiles accurately in both runtimes, and any verdict is
        // the rule applied to its own figures (common/accuracy.h).
        ASSERT_TRUE(r.contains("accuracy")) << r.dump(1);
        const json& a = r["accuracy"];
        const double error = a.value("compiled_error", -1.0);
        const double tolerance = a.value("tolerance", -1.0);
        EXPECT_GT(a.value("eager_error", 0.0), 0.0) << a.dump(1);
        EXPECT_GE(tolerance, 3 * a.value("eager_error", 0.0)) << a.dump(1);
        EXPECT_EQ(a.value("verdict", ""), error <= tolerance ? "pass" : "wrong") << a.dump(1);
        if (model == kSqueezenet) {
          EXPECT_EQ(a.value("verdict", ""), "pass") << a.dump(1);
        }
      } else {
        EXPECT_FALSE(r.contains("accuracy")) << r.dump(1);
      }
      if (runtime == "libtorch") {
        // The artifact (an AOTInductor package for compiled modes) is exported the first time
        // and comes from the agent's artifact cache the second time.
        EXPECT_EQ(t.value("artifact_cached", !cold), !cold) << t.dump(1);
        if (compiled && cold) {
          EXPECT_GT(r.value("export_s", 0.0), 0.0) << r.dump(1);
          EXPECT_EQ(t.value("export_inductor_cache", ""), "cold") << t.dump(1);
        }
        if (compiled) {
          EXPECT_EQ(env.value("format", "aotinductor"), "aotinductor") << env.dump(1);
        }
      }
      if (cold) first[key] = r;
    }
    if (!cold) {
      // Warm compiles are faster than cold ones: Inductor's cache really served them.
      for (const std::string& model : {kSqueezenet}) {
        const CellKey key{kNew, "python", "default", model};
        EXPECT_LT(cells.at(key)["result"]["telemetry"].value("compile_ms", 1e12),
                  first.at(key)["telemetry"].value("compile_ms", 0.0))
            << model;
      }
    }

    // The report's headers show the torch version each build's results recorded.
    const json report = coord.get_json(run_url(run) + "/report?format=json");
    ASSERT_EQ(report["tables"].size(), 1u) << report.dump(1);
    expect_compile_and_memory_columns(report["tables"][0], cells, cold);
    std::set<std::string> headers;
    for (const auto& c : report["tables"][0]["columns"]) headers.insert(c.value("header", ""));
    for (const std::string& want : {kOld + " (torch 1.13", kNew + " (torch 2.6"}) {
      bool found = false;
      for (const auto& h : headers) found = found || h.rfind(want, 0) == 0;
      EXPECT_TRUE(found) << want << " in " << json(headers).dump();
    }
  }
  EXPECT_TRUE(poll_until([&] { return agent.spool_entries().empty(); }, 10s));
}

TEST(TorchRoot, BrokenRootGivesErrorsWhileTheOtherBuildServes) {
  REQUIRE_TORCH_ROOT();
  CoordinatorProcess coord({BENCHFLEET_FAST_LEASES});
  // A copy of the root (hard links: instant, no space) with torch removed, python's and C++'s.
  const fs::path broken = fs::path(coord.dir()) / "broken-root";
  const std::string copy = "cp -al '" + std::string(BENCHFLEET_TORCH_ROOT) + "' '" + broken.string() + "'";
  ASSERT_EQ(std::system(copy.c_str()), 0) << copy;
  std::error_code ec;
  ASSERT_GT(fs::remove_all(broken / "usr/lib/python3/dist-packages/torch", ec), 0u) << ec.message();
  for (const auto& entry : fs::directory_iterator(broken / "usr/lib/x86_64-linux-gnu")) {
    if (entry.path().filename().string().rfind("libtorch", 0) == 0) fs::remove(entry.path());
  }

  AgentProcess agent(agent_options(coord, "broken", write_two_builds_config(coord, "broken", broken.string())));
  agent.start();
  ASSERT_TRUE(wait_online(coord, {"broken"}, 300s)) << agents_of(coord).dump(1);

  json matrix = cpu_matrix({kMobilenet}, {1}, {"eager"});
  matrix["torch_builds"] = {kOld, "broken"};
  matrix["runtimes"] = {"libtorch", "python"};
  const json run = coord.submit(matrix);
  ASSERT_TRUE(wait_run_state(coord, run, "done", 300s)) << run_of(coord, run).dump(1);
  const auto cells = results_by_cell(coord, run);
  ASSERT_EQ(cells.size(), 4u);
  for (const std::string runtime : {"libtorch", "python"}) {
    SCOPED_TRACE(runtime);
    const json& good = cells.at({kOld, runtime, "eager", kMobilenet})["result"];
    EXPECT_EQ(good.value("status", ""), "ok") << good.dump(1);
    const json& bad = cells.at({"broken", runtime, "eager", kMobilenet})["result"];
    EXPECT_EQ(bad.value("status", ""), "error") << bad.dump(1);
    EXPECT_NE(bad.value("error", "").find("torch build broken cannot run"), std::string::npos) << bad.dump(1);
    EXPECT_NE(bad.value("error", "").find("--capabilities"), std::string::npos) << bad.dump(1);
  }
  EXPECT_TRUE(agent.running());
}

}  // namespace
}  // namespace benchfleet::testing
