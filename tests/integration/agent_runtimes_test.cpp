// Integration: one benchfleet-agent runs a matrix with both runtimes — libtorch jobs in
// the real benchfleet-worker on the real exporter's artifacts, python jobs in the real
// agent/python/benchfleet_runner.py with the build's python (Debian's torch 1.13: eager only) —
// against the real coordinator, and the report shows both runtimes side by side.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "agent/daemon/memory_cgroup.h"
#include "tests/integration/agent_test_util.h"

namespace benchfleet::testing {
namespace {

TEST(AgentRuntimes, LibtorchAndPythonRunSideBySide) {
  CoordinatorProcess coord({BENCHFLEET_FAST_LEASES});
  AgentOptions options = agent_options(coord, "a1");
  // One thread count for the slot, whichever program runs its jobs (torch 1.13's worker alone
  // picks 1 without it, its python 2 on this machine).
  options.extra_args = {"--cpu-threads", "3"};
  AgentProcess a1(options);
  a1.start();
  ASSERT_TRUE(wait_online(coord, {"a1"})) << agents_of(coord).dump(1);

  // The agent advertises both runtimes of its build, each with the modes its program can run
  // here: the worker eager and torchscript, the runner eager (torch.compile needs torch >= 2.0).
  const json agent = agent_named(coord, "a1");
  std::map<std::string, json> runtimes;
  for (const auto& rt : agent["torch_builds"][0]["runtimes"]) runtimes[rt.value("runtime", "")] = rt["modes"];
  ASSERT_EQ(runtimes.size(), 2u) << agent.dump(1);
  EXPECT_EQ(runtimes["libtorch"], json({"eager", "torchscript"})) << agent.dump(1);
  EXPECT_EQ(runtimes["python"], json({"eager"})) << agent.dump(1);

  json matrix = cpu_matrix({kSqueezenet}, {1}, {"eager", "default"});
  matrix["runtimes"] = {"libtorch", "python"};
  matrix["measurement"]["max_iterations"] = 3;  // a fixed count of 3
  const json run = coord.submit(matrix);
  ASSERT_EQ(run["job_count"], 4);
  ASSERT_TRUE(wait_run_state(coord, run, "done", 90s)) << run_of(coord, run).dump(1);

  // One result per (runtime, mode): eager measured by each runtime's own program; default is a
  // mode neither offers on torch 1.13, so the coordinator ends it `unsupported` with the reason.
  std::map<std::pair<std::string, std::string>, json> by_cell;
  for (const auto& r : results_of(coord, run)) {
    const json& spec = r.at("job");
    EXPECT_TRUE(by_cell.emplace(std::make_pair(spec.value("runtime", ""), spec.value("mode", "")), r).second)
        << r.dump(1);
  }
  ASSERT_EQ(by_cell.size(), 4u) << json(by_cell).dump(1);
  for (const std::string runtime : {"libtorch", "python"}) {
    SCOPED_TRACE(runtime);
    const json& eager = by_cell[{runtime, "eager"}]["result"];
    EXPECT_EQ(eager.value("status", ""), "ok") << eager.dump(1);
    EXPECT_EQ(eager["stats"].value("iterations", 0), 3) << eager.dump(1);
    EXPECT_GT(eager["stats"].value("mean_ms", 0.0), 0.0) << eager.dump(1);
    EXPECT_EQ(eager["environment"].value("cpu_threads", 0), 3) << eager.dump(1);
    // The agent says how much other work shared the host while the job ran (0..1, and the flag).
    ASSERT_TRUE(eager["environment"].contains("host_other_load")) << eager.dump(1);
    const double other = eager["environment"]["host_other_load"].get<double>();
    EXPECT_TRUE(other >= 0 && other <= 1) << other;
    EXPECT_EQ(eager["environment"].value("high_load", !(other >= 0.25)), other >= 0.25) << eager.dump(1);
    const json& compiled = by_cell[{runtime, "default"}]["result"];
    EXPECT_EQ(compiled.value("status", ""), "unsupported") << compiled.dump(1);
    EXPECT_NE(compiled.value("error", "").find(runtime + " runtime"), std::string::npos) << compiled.dump(1);
  }
  // The python job ran in the runner, from the catalog: no artifact was exported or loaded for it.
  const json& python = by_cell[{"python", "eager"}]["result"];
  EXPECT_EQ(python["environment"].value("runtime", ""), "python") << python.dump(1);
  EXPECT_EQ(python["environment"].value("model", ""), kSqueezenet) << python.dump(1);
  EXPECT_FALSE(python["environment"].contains("artifact_sha256")) << python.dump(1);
  EXPECT_FALSE(python["telemetry"].contains("artifact_cached")) << python.dump(1);
  const json& libtorch = by_cell[{"libtorch", "eager"}]["result"];
  // The agent hashed the artifact the worker ran: the very file the exporter made and hashed.
  const std::string artifact_sha256 = libtorch["environment"].value("artifact_sha256", "");
  EXPECT_EQ(artifact_sha256.size(), 64u) << libtorch.dump(1);
  EXPECT_EQ(artifact_sha256.find_first_not_of("0123456789abcdef"), std::string::npos) << libtorch.dump(1);
  EXPECT_EQ(artifact_sha256, libtorch["environment"].value("exporter_sha256", "")) << libtorch.dump(1);
  EXPECT_TRUE(libtorch["telemetry"].contains("artifact_cached")) << libtorch.dump(1);

  // The report: one table, the runtime in every column, eager of both runtimes side by side.
  const json report = coord.get_json(run_url(run) + "/report?format=json");
  ASSERT_EQ(report["tables"].size(), 1u) << report.dump(1);
  const json& table = report["tables"][0];
  ASSERT_EQ(table["rows"].size(), 1u) << table.dump(1);
  // The latency and speedup columns (the compile and memory columns have tests of their own).
  std::map<std::string, std::pair<json, json>> columns;  // key -> (column, cell)
  for (std::size_t c = 0; c < table["columns"].size(); ++c) {
    const std::string key = table["columns"][c].value("key", "");
    if (key.rfind("latency/", 0) != 0 && key.rfind("speedup/", 0) != 0) continue;
    columns[key] = {table["columns"][c], table["rows"][0]["cells"][c]};
  }
  // Headers name the runtime and the torch version that runtime's results recorded (the python
  // side of Debian's build says 1.13.0a0), its unsupported columns included.
  const std::map<std::string, std::tuple<std::string, std::string, std::string>> expected = {
      {"latency/local/libtorch/eager", {"libtorch", "ok", "local (torch 1.13.0) - libtorch - eager"}},
      {"latency/local/libtorch/default", {"libtorch", "unsupported", "local (torch 1.13.0) - libtorch - default"}},
      {"latency/local/python/eager", {"python", "ok", "local (torch 1.13.0a0) - python - eager"}},
      {"latency/local/python/default", {"python", "unsupported", "local (torch 1.13.0a0) - python - default"}},
      {"speedup/local/libtorch/default",
       {"libtorch", "unavailable", "local (torch 1.13.0) - libtorch - default speedup"}},
      {"speedup/local/python/default", {"python", "unavailable", "local (torch 1.13.0a0) - python - default speedup"}},
  };
  ASSERT_EQ(columns.size(), expected.size()) << table.dump(1);
  for (const auto& [key, want] : expected) {
    SCOPED_TRACE(key);
    ASSERT_TRUE(columns.contains(key)) << table.dump(1);
    const auto& [column, cell] = columns[key];
    EXPECT_EQ(column.value("runtime", ""), std::get<0>(want)) << column.dump();
    EXPECT_EQ(cell.value("status", ""), std::get<1>(want)) << cell.dump();
    EXPECT_EQ(column.value("header", ""), std::get<2>(want)) << column.dump();
  }
  const json& python_cell = columns["latency/local/python/eager"].second;
  EXPECT_EQ(python_cell["result_ids"], json({by_cell[{"python", "eager"}]["id"]})) << python_cell.dump();
  // The report's default statistic, the median.
  EXPECT_DOUBLE_EQ(python_cell.value("value", 0.0), python["stats"].value("median_ms", -1.0));

  // The Markdown table (the seeds' format) names the runtime in each header, with its own cells.
  const auto md = coord.get(run_url(run) + "/report?format=md");
  ASSERT_EQ(md.status, 200u) << md.body;
  EXPECT_NE(
      md.body.find("| **Task/Model** | **local (torch 1.13.0) - libtorch - eager** |"
                   " **local (torch 1.13.0) - libtorch - default** | **local (torch 1.13.0a0) - python - eager** |"
                   " **local (torch 1.13.0a0) - python - default** |"),
      std::string::npos)
      << md.body;
  // A cell with noise flags reads "9.325*", one that stopped at its budget "9.325†" (the report
  // marks them; they are measured, not judged).
  const json& python_eager = columns["latency/local/python/eager"].second;
  const json flags = python_eager.value("flags", json::array());
  const bool budget = std::find(flags.begin(), flags.end(), "ci_not_met") != flags.end();
  const std::string flag_mark = std::string(flags.size() > (budget ? 1u : 0u) ? "*" : "") + (budget ? "†" : "");
  EXPECT_NE(md.body.find(python_eager.value("text", "?") + flag_mark + " | unsupported |"), std::string::npos)
      << md.body;
  EXPECT_TRUE(poll_until([&] { return a1.spool_entries().empty(); }, 10s));
}

// The dtype axis through the agent on Debian's torch 1.13: the exporter gets the job's
// dtype and the worker runs the artifact in it; a dtype the CPU lacks kernels for, and amp in the
// libtorch runtime, end `unsupported` with the reason.
TEST(AgentRuntimes, DtypesReachTheExporterAndTheWorker) {
  CoordinatorProcess coord({BENCHFLEET_FAST_LEASES});
  AgentProcess a1(agent_options(coord, "a1"));
  a1.start();
  ASSERT_TRUE(wait_online(coord, {"a1"})) << agents_of(coord).dump(1);

  json matrix = cpu_matrix({kMobilenet}, {1}, {"eager"});
  matrix["dtypes"] = {"bfloat16", "float16", "amp"};
  matrix["measurement"]["max_iterations"] = 3;
  const json run = coord.submit(matrix);
  ASSERT_EQ(run["job_count"], 3);
  ASSERT_TRUE(wait_run_state(coord, run, "done", 120s)) << run_of(coord, run).dump(1);
  std::map<std::string, json> by_dtype;
  for (const auto& r : results_of(coord, run)) by_dtype[r.at("job").value("dtype", "")] = r.at("result");
  ASSERT_EQ(by_dtype.size(), 3u) << json(by_dtype).dump(1);

  const json& bfloat16 = by_dtype["bfloat16"];
  EXPECT_EQ(bfloat16.value("status", ""), "ok") << bfloat16.dump(1);
  EXPECT_EQ(bfloat16["stats"].value("iterations", 0), 3) << bfloat16.dump(1);
  EXPECT_FALSE(bfloat16.contains("accuracy")) << bfloat16.dump(1);  // eager: nothing compiled to judge
  const json& float16 = by_dtype["float16"];
  EXPECT_EQ(float16.value("status", ""), "unsupported") << float16.dump(1);
  EXPECT_NE(float16.value("error", "").find("not implemented for 'Half'"), std::string::npos) << float16.dump(1);
  const json& amp = by_dtype["amp"];
  EXPECT_EQ(amp.value("status", ""), "unsupported") << amp.dump(1);
  EXPECT_NE(amp.value("error", "").find("python runtime"), std::string::npos) << amp.dump(1);
  EXPECT_TRUE(poll_until([&] { return a1.spool_entries().empty(); }, 10s));
}

// The memory cap through the agent, both runtimes: a memory cgroup per job where the agent can
// make one (the kernel kills a job past it, and the agent reports the OOM in the job's phase),
// else each job's own RLIMIT_AS. Either way ResNet-18 fits at batch 1 and runs out of memory at
// batch 256 (its first convolution's output alone is 822 MB) under 300 MB beyond start-up, and
// every result names the cap it ran under.
TEST(AgentRuntimes, MemoryCapIsACgroupWhereTheAgentCanMakeOne) {
  const auto where = agent::this_process_memory_cgroup();  // the agent runs as this test does
  const bool cgroups = where && agent::probe_memory_cgroup(*where).ok();
  CoordinatorProcess coord({BENCHFLEET_FAST_LEASES});
  AgentProcess a1(agent_options(coord, "a1"));
  a1.start();
  ASSERT_TRUE(wait_online(coord, {"a1"})) << agents_of(coord).dump(1);

  json matrix = cpu_matrix({"torchvision/resnet18"}, {1, 256}, {"eager"});
  matrix["runtimes"] = {"libtorch", "python"};
  matrix["memory_limit_mb"] = 300;
  matrix["measurement"]["max_iterations"] = 3;
  const json run = coord.submit(matrix);
  ASSERT_EQ(run["job_count"], 4);
  ASSERT_TRUE(wait_run_state(coord, run, "done", 200s)) << run_of(coord, run).dump(1);
  const std::string kind = !cgroups                                      ? "address-space"
                           : where->version == agent::CgroupVersion::kV1 ? "cgroup-v1"
                                                                         : "cgroup-v2";
  int seen = 0;
  for (const auto& row : results_of(coord, run)) {
    const json& job = row.at("job");
    const json& r = row.at("result");
    SCOPED_TRACE(job.value("runtime", "") + " batch " + std::to_string(job.value("batch", 0)));
    ++seen;
    ASSERT_TRUE(r.contains("memory")) << r.dump(1);
    EXPECT_EQ(r["memory"].value("cap", ""), kind) << r.dump(1);
    EXPECT_EQ(r["memory"].value("cap_bytes", 0), 300 << 20) << r.dump(1);
    if (job.value("batch", 0) == 1) {
      EXPECT_EQ(r.value("status", ""), "ok") << r.dump(1);
      if (cgroups) {  // what the cgroup saw beyond start-up: the weights and activations, under the cap
        EXPECT_GT(r["memory"].value("peak_growth_bytes", 0), 10 << 20) << r.dump(1);
        EXPECT_LT(r["memory"].value("peak_growth_bytes", 0), 300 << 20) << r.dump(1);
      }
      continue;
    }
    EXPECT_EQ(r.value("status", ""), "oom") << r.dump(1);
    // Eager compiles nothing: its first call is its first warm-up call.
    EXPECT_EQ(r["oom"].value("phase", ""), "warmup") << "the first call: " << r.dump(1);
    if (cgroups) {
      EXPECT_NE(r.value("error", "").find("the kernel killed the job in phase warmup at its memory cap"),
                std::string::npos)
          << r.dump(1);
      EXPECT_GE(r["memory"].value("peak_growth_bytes", 0), 250 << 20) << r.dump(1);
    }
  }
  EXPECT_EQ(seen, 4);
  // The report names the cap beside the peak memory.
  const auto md = coord.get(run_url(run) + "/report?format=md");
  ASSERT_EQ(md.status, 200u) << md.body;
  EXPECT_NE(md.body.find("Memory cap: 300 MB per job beyond its start-up"), std::string::npos) << md.body;
  EXPECT_EQ(coord.get_json(run_url(run) + "/report?format=json").value("memory_cap_mb", 0), 300);
  EXPECT_TRUE(poll_until([&] { return a1.spool_entries().empty(); }, 10s));
}

}  // namespace
}  // namespace benchfleet::testing
