// The CLI's text views of the API's JSON: runs, agents, result lines.
#include <gtest/gtest.h>

#include <string>

#include "cli/fleet_views.h"
#include "cli/views.h"

namespace benchfleet::cli {
namespace {

using nlohmann::json;

TEST(Views, TextTableAlignsUtf8) {
  EXPECT_EQ(render_text_table({"A", "B"}, {{"ü1", "x"}, {"long", "y"}}), "A     B\nü1    x\nlong  y\n");
}

TEST(Views, RunsAndAgents) {
  json run = {{"id", 7},        {"name", "demo"},     {"state", "done"},
              {"job_count", 6}, {"finished_jobs", 6}, {"results", {{"ok", 5}, {"oom", 1}, {"error", 0}}}};
  json list = {{"runs", json::array({run})}, {"next_before", nullptr}};
  list["runs"][0]["gpus"] = {"cpu"};
  list["runs"][0]["torch_builds"] = {"local"};
  list["runs"][0]["created_at"] = "2026-11-21T20:05:00.123Z";
  const std::string runs = runs_view(list);
  EXPECT_NE(runs.find("ID  NAME"), std::string::npos) << runs;
  EXPECT_NE(runs.find("7   demo  done   6/6       ok 5, oom 1  cpu   local   2026-11-21 20:05:00"), std::string::npos)
      << runs;
  EXPECT_EQ(runs_view(json{{"runs", json::array()}}), "no runs yet\n");

  json agents = {
      {"agents",
       json::array({json{{"id", 2},
                         {"name", "gpu-host"},
                         {"hostname", "h1"},
                         {"slots", json::array({json{{"id", "gpu0"},
                                                     {"gpu_class", "a100"},
                                                     {"gpu", {{"name", "NVIDIA A100"}, {"memory_mb", 40960}}}}})},
                         {"torch_builds", json::array({json{{"name", "stable"}, {"version", "2.11.0"}}})},
                         {"last_seen_at", "2026-11-21T20:05:00.123Z"},
                         {"online", true},
                         {"draining", true},
                         {"leases", json::array({json{{"slot", "gpu0"}, {"job_id", 5}, {"run_id", 7}}})}}})}};
  const std::string view = agents_view(agents);
  EXPECT_NE(view.find("gpu0=a100 (NVIDIA A100, 40960 MiB)"), std::string::npos) << view;
  EXPECT_NE(view.find("stable 2.11.0"), std::string::npos) << view;
  EXPECT_NE(view.find("online, draining"), std::string::npos) << view;
  EXPECT_NE(view.find("gpu0: job 5 (run 7)"), std::string::npos) << view;
}

TEST(Views, ResultLines) {
  json job = {{"model", "torchvision/resnet18"}, {"batch", 32},  {"mode", "eager"},
              {"torch_build", "local"},          {"gpu", "cpu"}, {"runtime", "libtorch"}};
  json oom = {{"id", 3},
              {"job", job},
              {"result", {{"status", "oom"}, {"oom", {{"phase", "warmup"}, {"bytes_requested", 102760448}}}}}};
  EXPECT_EQ(result_line(oom),
            "oom         torchvision/resnet18  batch 32  eager  local/cpu/libtorch  phase warmup, 102.8 MB requested");
  json ok = {
      {"id", 4}, {"job", job}, {"result", {{"status", "ok"}, {"stats", {{"mean_ms", 12.3456}, {"median_ms", 12.0}}}}}};
  EXPECT_NE(result_line(ok).find("mean 12.346 ms, median 12.000 ms"), std::string::npos);
  json error = {{"id", 5}, {"job", job}, {"result", {{"status", "error"}, {"error", "first line\nsecond"}}}};
  EXPECT_EQ(result_line(error).substr(result_line(error).size() - 12), "  first line");
}

// Another dtype than float32 is named with the runtime; the accuracy verdict and the
// noise flags follow the latency.
TEST(Views, ResultLinesShowDtypeAccuracyAndFlags) {
  json job = {{"model", "torchvision/resnet18"},
              {"batch", 1},
              {"mode", "default"},
              {"torch_build", "trixie"},
              {"gpu", "cpu"},
              {"runtime", "python"},
              {"dtype", "bfloat16"}};
  json row = {
      {"id", 9},
      {"job", job},
      {"result",
       {{"status", "ok"},
        {"stats", {{"mean_ms", 10.0}, {"median_ms", 9.5}}},
        {"accuracy",
         {{"verdict", "wrong"}, {"compiled_error", 0.049}, {"eager_error", 4.3e-7}, {"tolerance", 1.0129e-4}}}}},
      {"flags", {"high_cv", "ci_not_met"}}};
  EXPECT_EQ(result_line(row),
            "ok          torchvision/resnet18  batch 1  default  trixie/cpu/python/bfloat16  mean 10.000 ms, median "
            "9.500 ms  accuracy wrong (0.049 > 0.000101)  flagged high_cv,ci_not_met");
  row["job"]["dtype"] = "float32";
  row["result"]["accuracy"] = {{"verdict", "unchecked"}, {"detail", "no reference"}};
  row["flags"] = json::array();
  EXPECT_EQ(result_line(row),
            "ok          torchvision/resnet18  batch 1  default  trixie/cpu/python  mean 10.000 ms, median 9.500 ms"
            "  accuracy unchecked");
}

TEST(Views, RunShowsDtypesCompileOptionsAndNoise) {
  json run = {{"id", 3},
              {"name", "acc"},
              {"matrix",
               {{"dtypes", {"float32", "float16"}},
                {"dynamic", true},
                {"shape_walk", true},
                {"noise", {{"max_cv", 0.05}, {"max_clock_drop", 0.1}}}}}};
  const std::string view = run_view(run);
  EXPECT_NE(view.find("dtypes:        float32, float16\n"), std::string::npos) << view;
  EXPECT_NE(view.find("compile:       dynamic shapes, shape walk\n"), std::string::npos) << view;
  EXPECT_NE(view.find("noise flags:   cv > 0.05, clock drop > 0.1\n"), std::string::npos) << view;
  run["matrix"]["dynamic"] = false;
  run["matrix"]["shape_walk"] = false;
  EXPECT_NE(run_view(run).find("compile:       -\n"), std::string::npos) << run_view(run);
}

TEST(FleetViews, BuildsAreMergedOverAgentsWithTheirOnlineCount) {
  const json agents = {{"agents",
                        {{{"name", "a"},
                          {"online", true},
                          {"slots", {{{"id", "gpu0"}, {"gpu_class", "a100"}}}},
                          {"torch_builds",
                           {{{"name", "stable"},
                             {"version", "2.6.0"},
                             {"runtimes", {{{"runtime", "python"}, {"modes", {"eager", "default"}}}}}}}}},
                         {{"name", "b"},
                          {"online", false},
                          {"slots", {{{"id", "gpu0"}, {"gpu_class", "h100"}}}},
                          {"torch_builds",
                           {{{"name", "stable"},
                             {"version", "2.6.1"},
                             {"runtimes", {{{"runtime", "libtorch"}, {"modes", {"eager"}}}}}}}}}}}};
  const std::string view = builds_view(agents);
  EXPECT_NE(view.find("stable  2.6.0, 2.6.1  a100, h100   libtorch: eager; python: eager default  1/2 online"),
            std::string::npos)
      << view;
  const std::string modes = modes_view(agents);
  EXPECT_NE(modes.find("stable/libtorch, stable/python"), std::string::npos) << modes;
  EXPECT_EQ(builds_view(json::object()), "no agents enrolled: no torch builds are offered\n");
}

TEST(FleetViews, ModelsShowTheirShortNames) {
  const json models = {{"models",
                        {{{"id", "torchvision/resnet18"},
                          {"display_name", "Image Classification/ResNet-18"},
                          {"source", "torchvision"}}}}};
  EXPECT_EQ(models_view(models),
            "ID                    SHORT NAME  TASK/MODEL                      SOURCE\n"
            "torchvision/resnet18  resnet18    Image Classification/ResNet-18  torchvision\n");
}

}  // namespace
}  // namespace benchfleet::cli
