// The CLI's text views of the API's JSON: runs, agents, result lines.
#include <gtest/gtest.h>

#include <string>

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

}  // namespace
}  // namespace benchfleet::cli
