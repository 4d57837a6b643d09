// Integration: the real `benchfleet` CLI's schedule, series and regressions commands
// against the real coordinator; results come through the agent API from the protocol driver
// (FakeAgent), eight nightly torch versions with a 15% step after the sixth.
#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "common/codecs.h"
#include "common/stats.h"
#include "tests/support/child_process.h"
#include "tests/support/coordinator_process.h"

namespace benchfleet::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kCli = BENCHFLEET_CLI_BIN;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct CliRun {
  int code = -1;
  std::string out;
  std::string err;
};

// The CLI as a child process (as in cli_test.cpp): stdout and stderr to files in `dir`, only the
// BENCHFLEET_* variables given, HOME inside `dir` so no user config file is read.
CliRun run_cli(const std::string& dir, const std::vector<std::string>& args, const std::string& url) {
  static int counter = 0;
  const std::string base = dir + "/cli-history-" + std::to_string(++counter);
  ChildOptions o;
  o.argv = {"/bin/sh", "-c", "exec \"$0\" \"$@\" 2>\"$BF_TEST_ERR\"", kCli};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.log_file = base + ".out";
  o.clean_environment = true;
  o.env_set = {{"BENCHFLEET_URL", url},
               {"BENCHFLEET_OPERATOR_TOKEN", CoordinatorProcess::kOperatorToken},
               {"BF_TEST_ERR", base + ".err"},
               {"HOME", dir},
               {"XDG_CONFIG_HOME", dir + "/xdg"}};
  auto started = ChildProcess::start(o);
  if (!started.ok()) throw std::runtime_error("cannot start the CLI: " + started.error().message);
  ChildProcess process = std::move(started).value();
  CliRun r;
  auto status = process.wait_exit(60s);
  if (!status) {
    process.kill9();
    r.err = "(the CLI did not exit within the limit)";
    return r;
  }
  r.code = exit_code(*status);
  r.out = read_file(base + ".out");
  r.err = read_file(base + ".err");
  return r;
}

std::string nightly(int n) { return "2.7.0.dev2025010" + std::to_string(n); }

// An ok result of 40 samples around 10 ms (nights 1-6) or 11.5 ms (7, 8), CV ~1%, by torch `night`.
json nightly_result(int night) {
  std::vector<double> samples;
  const double level = night <= 6 ? 10.0 : 11.5;
  for (int i = 0; i < 40; ++i) samples.push_back(level * (0.98 + 0.001 * ((i * 13 + night * 7) % 40)));
  return {{"status", "ok"},
          {"stats", compute_statistics(samples)},
          {"samples_ms", samples},
          {"first_call_ms", 250.5},
          {"stop_reason", "max_time"},
          {"environment", {{"torch_version", nightly(night)}, {"torch_git", "abcdef0" + std::to_string(night)}}},
          {"telemetry", json::object()}};
}

class CliHistoryTest : public ::testing::Test {
 protected:
  CliHistoryTest() : coord_({{"--detect-interval-ms", "100"}}) {}

  CliRun cli(const std::vector<std::string>& args) { return run_cli(coord_.dir(), args, coord_.base_url()); }

  std::string write(const std::string& name, const std::string& text) {
    std::string path = coord_.dir() + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  CoordinatorProcess coord_;
};

TEST_F(CliHistoryTest, ScheduleAddListShowPauseResumeDelete) {
  const std::string file = write("nightly.yaml",
                                 "name: nightly resnet\n"
                                 "models: [microsoft/resnet-50]\n"
                                 "batch_sizes: [1, 4]\n"
                                 "modes: [eager]\n"
                                 "torch_builds: [nightly]\n"
                                 "gpus: [a100]\n");
  CliRun added = cli({"schedule", "add", file, "--cron", "30 2 * * *"});
  ASSERT_EQ(added.code, 0) << added.err;
  EXPECT_NE(added.out.find("added schedule 1 \"nightly resnet\" (30 2 * * * UTC), next run due"), std::string::npos)
      << added.out;

  CliRun bad_cron = cli({"schedule", "add", file, "--cron", "0 25 * * *"});
  EXPECT_EQ(bad_cron.code, 1);
  EXPECT_NE(bad_cron.err.find("hour"), std::string::npos) << bad_cron.err;
  const std::string unknown = write("unknown.yaml",
                                    "name: typo\n"
                                    "models: [microsoft/resnet-50, no/such-model]\n"
                                    "batch_sizes: [1]\nmodes: [eager]\ntorch_builds: [nightly]\ngpus: [a100]\n");
  CliRun bad_model = cli({"schedule", "add", unknown, "--cron", "@daily"});
  EXPECT_EQ(bad_model.code, 1);
  EXPECT_NE(bad_model.err.find(unknown + ": line 2:"), std::string::npos) << bad_model.err;
  EXPECT_EQ(cli({"schedule", "add", file}).code, 2) << "--cron is required";

  CliRun listed = cli({"schedule", "list"});
  ASSERT_EQ(listed.code, 0) << listed.err;
  EXPECT_NE(listed.out.find("NEXT DUE (UTC)"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("30 2 * * *"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("enabled"), std::string::npos) << listed.out;
  CliRun shown = cli({"schedule", "show", "1"});
  ASSERT_EQ(shown.code, 0) << shown.err;
  EXPECT_NE(shown.out.find("batch sizes: 1,4"), std::string::npos) << shown.out;

  CliRun paused = cli({"schedule", "pause", "1"});
  ASSERT_EQ(paused.code, 0) << paused.err;
  EXPECT_EQ(paused.out, "schedule 1 paused\n");
  EXPECT_NE(cli({"schedule", "list"}).out.find("paused"), std::string::npos);
  EXPECT_EQ(coord_.get_json("/api/v1/schedules/1")["enabled"], false);
  CliRun resumed = cli({"schedule", "resume", "1"});
  ASSERT_EQ(resumed.code, 0) << resumed.err;
  EXPECT_NE(resumed.out.find("resumed; next run due"), std::string::npos) << resumed.out;
  CliRun json_list = cli({"schedule", "list", "--json"});
  ASSERT_EQ(json_list.code, 0);
  EXPECT_EQ(json::parse(json_list.out)["schedules"][0]["enabled"], true);

  CliRun deleted = cli({"schedule", "delete", "1"});
  ASSERT_EQ(deleted.code, 0) << deleted.err;
  EXPECT_EQ(deleted.out, "deleted schedule 1 (its runs stay)\n");
  CliRun gone = cli({"schedule", "show", "1"});
  EXPECT_EQ(gone.code, 1);
  EXPECT_NE(gone.err.find("404"), std::string::npos) << gone.err;
  EXPECT_EQ(cli({"schedule", "pause", "x"}).code, 2);
  EXPECT_EQ(cli({"schedule"}).code, 2) << "a schedule command is required";
}

TEST_F(CliHistoryTest, SeriesAndRegressionsShowTheStepAndItsBisectRange) {
  FakeAgent agent(coord_, FakeAgent::descriptor("nightly-box", {{"gpu0", "a100"}}, {{"nightly", {"eager"}}}));
  for (int night = 1; night <= 8; ++night) {
    coord_.submit(matrix({kResnet}, {1}, {"eager"}, {"a100"}, {"nightly"}));
    auto lease = agent.lease_job("gpu0", 1);
    ASSERT_TRUE(lease.has_value()) << "night " << night;
    ASSERT_EQ(agent.post_result(*lease, nightly_result(night)).status, 201u);
  }

  CliRun series = cli({"series", "--model", kResnet, "--gpu", "a100", "--build", "nightly"});
  ASSERT_EQ(series.code, 0) << series.err;
  EXPECT_NE(series.out.find("LAST TORCH"), std::string::npos) << series.out;
  EXPECT_NE(series.out.find(nightly(8)), std::string::npos) << series.out;
  // A model name no series and no catalog id has: named, with the one meant, not "no series".
  CliRun unknown = cli({"series", "--model", "resnet"});
  EXPECT_EQ(unknown.code, 1) << unknown.out;
  EXPECT_NE(unknown.err.find("unknown model \"resnet\" (not in the model catalog (did you mean"), std::string::npos)
      << unknown.err;
  // Filters that match none of the series there are: no series.
  EXPECT_EQ(cli({"series", "--model", kResnet, "--gpu", "h100"}).out, "no series match\n");
  CliRun bad_mode = cli({"series", "--mode", "fast"});
  EXPECT_EQ(bad_mode.code, 1);
  EXPECT_NE(bad_mode.err.find("mode"), std::string::npos) << bad_mode.err;

  CliRun shown = cli({"series", "show", "1"});
  ASSERT_EQ(shown.code, 0) << shown.err;
  EXPECT_NE(shown.out.find("series 1: microsoft/resnet-50 b1 eager/float32/libtorch a100 nightly"), std::string::npos)
      << shown.out;
  std::size_t at = 0;
  for (int night = 1; night <= 8; ++night) {  // the points in version order
    at = shown.out.find(nightly(night), at);
    ASSERT_NE(at, std::string::npos) << "night " << night << " missing or out of order:\n" << shown.out;
  }
  CliRun page = cli({"series", "show", "1", "--limit", "2"});
  ASSERT_EQ(page.code, 0) << page.err;
  EXPECT_NE(page.out.find("(more points: --after-point"), std::string::npos) << page.out;

  CliRun open;
  ASSERT_TRUE(eventually(
      [&] {
        open = cli({"regressions"});
        return open.code == 0 && open.out.find("LAST GOOD -> FIRST BAD") != std::string::npos;
      },
      20s))
      << open.out << open.err;
  EXPECT_NE(open.out.find(nightly(6) + " (abcdef06) -> " + nightly(7) + " (abcdef07)"), std::string::npos) << open.out;
  EXPECT_NE(open.out.find("x1.15"), std::string::npos) << open.out;

  CliRun acked = cli({"regressions", "ack", "1", "--note", "bisecting"});
  ASSERT_EQ(acked.code, 0) << acked.err;
  EXPECT_NE(acked.out.find("regression 1 acknowledged"), std::string::npos) << acked.out;
  EXPECT_NE(acked.out.find("note: bisecting"), std::string::npos) << acked.out;
  EXPECT_EQ(cli({"regressions"}).out, "no regressions match\n");
  CliRun as_json = cli({"regressions", "--state", "acknowledged", "--json"});
  ASSERT_EQ(as_json.code, 0) << as_json.err;
  EXPECT_EQ(json::parse(as_json.out)["regressions"][0]["note"], "bisecting");
  EXPECT_NE(cli({"regressions", "resolve", "1"}).out.find("regression 1 resolved"), std::string::npos);
  EXPECT_NE(cli({"regressions", "reopen", "1"}).out.find("regression 1 open"), std::string::npos);
  EXPECT_EQ(cli({"regressions", "--state", "closed"}).code, 2);
  EXPECT_EQ(cli({"regressions", "ack"}).code, 2);
  CliRun missing = cli({"regressions", "resolve", "99"});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("404"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace benchfleet::testing
