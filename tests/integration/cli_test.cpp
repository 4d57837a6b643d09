// Integration: the real `benchfleet` CLI binary against the real coordinator. Results arrive
// through the agent API from a protocol driver (FakeAgent), so each test decides what the run
// contains; the agent daemon with real workers is covered by quickstart_test.
//
// The in-process tests at the end drive watch_run() with an injected terminal and clock: each
// "sleep" posts the next result, so the progress bar is checked frame by frame.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/fleet_client.h"
#include "cli/progress.h"
#include "cli/watch.h"
#include "slurm/launcher_config.h"
#include "slurm/sbatch_script.h"
#include "tests/integration/cli_process.h"
#include "tests/support/child_process.h"
#include "tests/support/coordinator_process.h"
#include "tests/support/temp_dir.h"

namespace benchfleet::testing {
namespace {

using nlohmann::json;
using namespace std::chrono_literals;

const std::string kResnet18 = "torchvision/resnet18";
const std::string kSqueezenet = "torchvision/squeezenet1_1";

class CliTest : public ::testing::Test {
 protected:
  CliTest() : coord_({{"--long-poll-timeout-s", "1"}}) {}

  std::map<std::string, std::string> env(bool with_token = true) const {
    std::map<std::string, std::string> e = {{"BENCHFLEET_URL", coord_.base_url()}};
    if (with_token) e["BENCHFLEET_OPERATOR_TOKEN"] = CoordinatorProcess::kOperatorToken;
    return e;
  }

  CliRun cli(std::vector<std::string> args, bool with_token = true) {
    return CliProcess(coord_.dir(), std::move(args), env(with_token)).wait();
  }

  // A matrix file in the coordinator's directory.
  std::string matrix_file(const std::string& name, const std::string& yaml) {
    const std::string path = coord_.dir() + "/" + name;
    write_file(path, yaml);
    return path;
  }

  static std::string two_by_two(const std::string& extra = "") {
    return "name: cli test\n"
           "models: [" +
           kResnet18 + ", " + kSqueezenet +
           "]\n"
           "batch_sizes: [1, 8]\n"
           "modes: [eager]\n"
           "torch_builds: [local]\n"
           "gpus: [cpu]\n" +
           extra;
  }

  FakeAgent agent() {
    return FakeAgent(coord_,
                     FakeAgent::descriptor("cli-agent", {{"cpu", "cpu"}}, {{"local", {"eager", "torchscript"}}}));
  }

  // Leases every job and posts a verdict chosen by `verdict(job spec)`.
  static int serve_all(FakeAgent& a, const std::function<json(const json&)>& verdict, int max_jobs = 100) {
    int served = 0;
    while (served < max_jobs) {
      auto lease = a.lease_job("cpu", 1);
      if (!lease) break;
      EXPECT_EQ(a.post_result(*lease, verdict(lease->spec())).status, 201u);
      ++served;
    }
    return served;
  }

  json runs() { return coord_.get_json("/api/v1/runs")["runs"]; }

  CoordinatorProcess coord_;
};

TEST_F(CliTest, SubmitWaitShowsProgressAndEndsWithTheRun) {
  const std::string file = matrix_file("m.yaml", two_by_two());
  CliProcess submit(coord_.dir(), {"submit", file, "--wait", "--print-id", "--interval", "0.1"}, env());
  ASSERT_TRUE(eventually([&] { return runs().size() == 1; }));
  FakeAgent a = agent();
  // The largest cell of ResNet-18 runs out of memory; the rest is ok.
  const int served = serve_all(a, [](const json& spec) {
    std::this_thread::sleep_for(150ms);  // let the CLI see intermediate states
    return spec["model"] == kResnet18 && spec["batch"] == 8 ? oom_result("warmup", 123456789) : ok_result(10.0);
  });
  EXPECT_EQ(served, 4);
  const CliRun r = submit.wait();
  EXPECT_EQ(r.code, 0) << r.err;
  const std::int64_t id = runs()[0]["id"].get<std::int64_t>();
  EXPECT_EQ(r.out, std::to_string(id) + "\n");  // --print-id: only the id on stdout
  // Not a terminal: plain lines, the last one the summary.
  EXPECT_NE(r.err.find("run " + std::to_string(id) + " "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("jobs finished"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << "no bar drawing without a terminal";
  EXPECT_NE(r.err.find("run " + std::to_string(id) + " done after "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(": 4/4 jobs (ok 3 · oom 1)\n"), std::string::npos) << r.err;
}

TEST_F(CliTest, ExitCodeSaysTheRunHadFailuresOrWasCancelled) {
  const std::string file = matrix_file("m.yaml", two_by_two());
  {
    CliProcess submit(coord_.dir(), {"submit", file, "--wait", "--interval", "0.1"}, env());
    ASSERT_TRUE(eventually([&] { return runs().size() == 1; }));
    FakeAgent a = agent();
    serve_all(a, [](const json& spec) {
      if (spec["batch"] == 8) return json{{"status", "crash"}, {"signal", 11}, {"error", "worker killed by signal 11"}};
      return ok_result(5.0);
    });
    const CliRun r = submit.wait();
    EXPECT_EQ(r.code, cli::kExitRunFailed) << r.err;
    EXPECT_NE(r.out.find("submitted run "), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("crash 2"), std::string::npos) << r.err;
    // --wait ends with the run's tables on stdout, the crashes in them.
    const std::size_t table = r.out.find("### CPU (batch size: 8)");
    EXPECT_NE(table, std::string::npos) << r.out;
    EXPECT_NE(r.out.find("| crash |", table), std::string::npos) << r.out;
  }
  {
    CliProcess submit(coord_.dir(), {"submit", file, "--wait", "--interval", "0.1"}, env());
    ASSERT_TRUE(eventually([&] { return runs().size() == 2; }));
    const std::string id = std::to_string(runs()[0]["id"].get<std::int64_t>());
    const CliRun cancel = cli({"cancel", id});
    EXPECT_EQ(cancel.code, 0) << cancel.err;
    EXPECT_EQ(cancel.out, "cancelled run " + id + ": 4 jobs stopped\n");
    const CliRun r = submit.wait();
    EXPECT_EQ(r.code, cli::kExitRunCancelled) << r.err;
    EXPECT_NE(r.out.find("(run " + id + ", median latency in ms)"), std::string::npos) << "the report of what ran";
    EXPECT_NE(r.err.find("run " + id + " cancelled"), std::string::npos) << r.err;
    // Cancelling again is not an error for the server; the CLI says what happened.
    const CliRun again = cli({"cancel", id});
    EXPECT_EQ(again.code, 0);
    EXPECT_EQ(again.out, "run " + id + " was already cancelled\n");
  }
}

TEST_F(CliTest, ModelsBuildsAndModesSayWhatTheFleetCanRun) {
  const CliRun models = cli({"models"});
  EXPECT_EQ(models.code, 0) << models.err;
  EXPECT_NE(models.out.find("torchvision/resnet18"), std::string::npos) << models.out;
  const std::size_t vit = models.out.find("google/vit-base-patch16-224");
  ASSERT_NE(vit, std::string::npos) << models.out;
  EXPECT_LT(models.out.find("  vit-base-patch16-224  ", vit), models.out.find('\n', vit)) << "its short name";

  const CliRun none = cli({"builds"});
  EXPECT_EQ(none.out, "no agents enrolled: no torch builds are offered\n");
  FakeAgent a = agent();
  const CliRun builds = cli({"builds"});
  EXPECT_EQ(builds.code, 0) << builds.err;
  EXPECT_NE(builds.out.find("BUILD"), std::string::npos) << builds.out;
  const std::size_t local = builds.out.find("\nlocal ");
  ASSERT_NE(local, std::string::npos) << builds.out;
  const std::string row = builds.out.substr(local + 1, builds.out.find('\n', local + 1) - local - 1);
  EXPECT_NE(row.find("2.0.0+test"), std::string::npos) << row;
  EXPECT_NE(row.find("cpu"), std::string::npos) << row;
  EXPECT_NE(row.find("libtorch: eager torchscript"), std::string::npos) << row;
  EXPECT_NE(row.find("1/1 online"), std::string::npos) << row;
  const CliRun json_builds = cli({"builds", "--json"});
  EXPECT_EQ(json::parse(json_builds.out)["agents"][0]["name"], "cli-agent");

  const CliRun modes = cli({"modes"});
  EXPECT_EQ(modes.code, 0) << modes.err;
  const auto line_of = [&](const std::string& mode) {
    const std::size_t at = modes.out.find("\n" + mode + " ");
    return at == std::string::npos ? std::string() : modes.out.substr(at + 1, modes.out.find('\n', at + 1) - at - 1);
  };
  EXPECT_NE(line_of("torchscript").find("local/libtorch"), std::string::npos) << modes.out;
  EXPECT_NE(line_of("max-autotune").find(" -"), std::string::npos) << "no one offers it: " << modes.out;
}

TEST_F(CliTest, InvalidFilesAreRefusedBeforeAnythingIsStored) {
  // A field error found locally names the file, the line and the field.
  const std::string bad = matrix_file("bad.yaml", two_by_two("measurement:\n  warmup: -1\n"));
  CliRun r = cli({"submit", bad});
  EXPECT_EQ(r.code, cli::kExitError);
  EXPECT_EQ(r.err, "benchfleet: " + bad + ": line 8: measurement.warmup: must be between 0 and 100000\n");
  // A catalog id only the coordinator knows is unknown: its problem detail, at the file's line.
  std::string unknown_yaml = two_by_two();
  unknown_yaml.replace(unknown_yaml.find(kSqueezenet), kSqueezenet.size(), "acme/unknown-net");
  const std::string unknown = matrix_file("unknown.yaml", unknown_yaml);
  r = cli({"submit", unknown});
  EXPECT_EQ(r.code, cli::kExitError);
  EXPECT_EQ(r.err.rfind("benchfleet: " + unknown + ": line 2: submit: HTTP 400: models[1]: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("acme/unknown-net"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find('{'), std::string::npos) << "the detail, not raw JSON: " << r.err;
  // --dry-run validates without submitting.
  const std::string good = matrix_file("good.yaml", two_by_two());
  r = cli({"submit", good, "--dry-run"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("valid; 4 jobs"), std::string::npos) << r.out;
  // A write without the operator token: the server's detail and a hint.
  r = cli({"submit", good}, /*with_token=*/false);
  EXPECT_EQ(r.code, cli::kExitError);
  EXPECT_NE(r.err.find("submit: HTTP 401: "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("BENCHFLEET_OPERATOR_TOKEN"), std::string::npos) << r.err;
  // Bad command lines are usage errors.
  EXPECT_EQ(cli({"report", "0"}).code, cli::kExitUsage);
  EXPECT_EQ(cli({"report", "1", "--format", "xml"}).code, cli::kExitUsage);
  EXPECT_EQ(cli({"frobnicate"}).code, cli::kExitUsage);
  // A mistyped command: the one meant is named.
  const CliRun typo = cli({"comapre", "1", "2"});
  EXPECT_EQ(typo.code, cli::kExitUsage);
  EXPECT_NE(typo.err.find("unknown command \"comapre\" (did you mean \"compare\"?)"), std::string::npos) << typo.err;
  EXPECT_TRUE(runs().empty()) << "nothing was stored";
}

// Text stored before the display rule existed (or by anything that bypassed it) reaches the
// terminal as visible escapes: an agent name holding a title-setting OSC and a screen clear, a
// run error holding colour codes.
TEST_F(CliTest, TextFromTheServerReachesTheTerminalEscaped) {
  const std::string file = matrix_file("m.yaml", two_by_two());
  CliRun submitted = cli({"submit", file, "--print-id"});
  ASSERT_EQ(submitted.code, 0) << submitted.err;
  const std::string id = submitted.out.substr(0, submitted.out.size() - 1);
  FakeAgent a = agent();
  serve_all(a, [](const json&) { return json{{"status", "error"}, {"error", "failed"}}; });
  // Written with the coordinator stopped, as a database from before the rule would be.
  coord_.stop();
  const std::string osc = "'node' || char(27) || ']0;owned' || char(7) || char(27) || '[2J'";
  const std::string boom = "'boom' || char(27) || '[41mX' || char(8238)";
  const std::string sql = "UPDATE agents SET name = " + osc + ", descriptor = json_set(descriptor, '$.name', " + osc +
                          "); UPDATE results SET error = " + boom + ", body = json_set(body, '$.error', " + boom + ");";
  ASSERT_EQ(std::system(("sqlite3 '" + coord_.db_path() + "' \"" + sql + "\"").c_str()), 0);
  coord_.restart();

  for (const std::vector<std::string>& args : {std::vector<std::string>{"agents"},
                                               {"agents", "--json"},
                                               {"watch", id},
                                               {"report", id},
                                               {"report", id, "--format", "csv"}}) {
    const CliRun r = cli(args);
    SCOPED_TRACE(args.front() + " " + args.back());
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find('\x07'), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("\xe2\x80\xae"), std::string::npos) << r.out;
  }
  const CliRun agents = cli({"agents"});
  EXPECT_NE(agents.out.find("node\\x1b]0;owned\\x07\\x1b[2J"), std::string::npos) << agents.out;
  const CliRun watched = cli({"watch", id});
  EXPECT_NE(watched.out.find("boom\\x1b[41mX\\u{202e}"), std::string::npos) << watched.out;
}

TEST_F(CliTest, ReadCommandsShowWhatTheApiHolds) {
  const std::string file = matrix_file("m.yaml", two_by_two());
  CliRun submitted = cli({"submit", file, "--print-id", "--name", "renamed"});
  ASSERT_EQ(submitted.code, 0) << submitted.err;
  const std::string id = submitted.out.substr(0, submitted.out.size() - 1);
  FakeAgent a = agent();
  serve_all(a, [](const json& spec) {
    return spec["model"] == kResnet18 && spec["batch"] == 8 ? oom_result("measure", 1 << 20) : ok_result(7.25);
  });

  CliRun r = cli({"runs"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("ID  NAME"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("renamed  done   4/4       ok 3, oom 1"), std::string::npos) << r.out;
  r = cli({"runs", "--json"});
  EXPECT_EQ(json::parse(r.out)["runs"], runs());

  r = cli({"run", id});
  EXPECT_NE(r.out.find("state:         done"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("models:        " + kResnet18 + ", " + kSqueezenet), std::string::npos) << r.out;

  // The report is the endpoint's, byte for byte, on stdout or in a file; both default to the median.
  r = cli({"report", id});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, coord_.get("/api/v1/runs/" + id + "/report?format=md&stat=median").body);
  EXPECT_EQ(r.out, coord_.get("/api/v1/runs/" + id + "/report?format=md").body);
  EXPECT_NE(r.out.find("| OOM |"), std::string::npos) << r.out;
  const std::string csv_path = coord_.dir() + "/report.csv";
  r = cli({"report", id, "--format", "csv", "--stat", "mean", "-o", csv_path});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(read_file(csv_path), coord_.get("/api/v1/runs/" + id + "/report?format=csv&stat=mean").body);
  r = cli({"report", "999"});
  EXPECT_EQ(r.code, cli::kExitError);
  EXPECT_EQ(r.err, "benchfleet: report of run 999: HTTP 404: run 999 does not exist\n");

  // watch on a finished run prints its results and ends at once.
  r = cli({"watch", id});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 4) << r.out;
  EXPECT_NE(r.out.find("oom         " + kResnet18 + "  batch 8  eager  local/cpu/libtorch  phase measure"),
            std::string::npos)
      << r.out;

  r = cli({"agents"});
  EXPECT_NE(r.out.find("cli-agent"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cpu=cpu"), std::string::npos) << r.out;
}

TEST_F(CliTest, DrainByNameAndConfigFilePrecedence) {
  FakeAgent a = agent();
  // URL and token from a config file (token through operator_token_file).
  const std::string token_file = coord_.dir() + "/op-token";
  write_file(token_file, std::string(CoordinatorProcess::kOperatorToken) + "\n");
  const std::string config = coord_.dir() + "/cli.yaml";
  write_file(config, "url: " + coord_.base_url() + "\noperator_token_file: " + token_file + "\n");
  CliRun r = CliProcess(coord_.dir(), {"--config", config, "drain", "cli-agent"}, {}).wait();
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, "agent " + std::to_string(a.id()) +
                       " (cli-agent) is draining: it finishes its jobs and takes no new ones\n");
  EXPECT_TRUE(coord_.get_json("/api/v1/agents")["agents"][0]["draining"].get<bool>());
  // The environment wins over the file, and a flag over the environment.
  r = CliProcess(coord_.dir(), {"--config", config, "drain", "cli-agent", "--resume"},
                 {{"BENCHFLEET_URL", "http://127.0.0.1:1"}})
          .wait();
  EXPECT_EQ(r.code, cli::kExitError);
  EXPECT_NE(r.err.find("cannot reach the coordinator at http://127.0.0.1:1"), std::string::npos) << r.err;
  r = CliProcess(coord_.dir(),
                 {"--config", config, "--url", coord_.base_url(), "drain", std::to_string(a.id()), "--resume"},
                 {{"BENCHFLEET_URL", "http://127.0.0.1:1"}})
          .wait();
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(coord_.get_json("/api/v1/agents")["agents"][0]["draining"].get<bool>());
  // The default config file ($XDG_CONFIG_HOME/benchfleet/cli.yaml) is read when present.
  std::filesystem::create_directories(coord_.dir() + "/xdg/benchfleet");
  write_file(coord_.dir() + "/xdg/benchfleet/cli.yaml", "url: " + coord_.base_url() + "\n");
  r = CliProcess(coord_.dir(), {"agents"}, {}).wait();
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("cli-agent"), std::string::npos);
  // A config file with an unknown key is refused, naming it.
  write_file(config, "url: " + coord_.base_url() + "\ntokn: x\n");
  r = CliProcess(coord_.dir(), {"--config", config, "agents"}, {}).wait();
  EXPECT_EQ(r.code, cli::kExitError);
  EXPECT_NE(r.err.find("tokn"), std::string::npos) << r.err;
  r = cli({"drain", "nobody"});
  EXPECT_EQ(r.code, cli::kExitError);
  EXPECT_NE(r.err.find("no agent is named \"nobody\""), std::string::npos);
}

// ---- slurm-script: no coordinator involved -------------------------------------------

TEST(CliSlurmScript, PrintsTheLaunchersScriptForAClassAndNamesWhatIsWrong) {
  const TempDir tmp("benchfleet-cli-slurm");
  const std::string dir = tmp.str();
  const std::string config = dir + "/launcher.yaml";
  write_file(config, R"(coordinator: http://127.0.0.1:8080
state_dir: )" + dir + R"(/state
classes:
  - gpu_class: a100
    partition: gpu
    gres: "gpu:a100:1"
    account: bench
    time_limit: "01:30:00"
    cpus_per_task: 8
    idle_exit_s: 90
    agent_command: "/opt/benchfleet/bin/benchfleet-agent --config /etc/benchfleet/agent.yaml"
    sbatch_options: ["--exclusive"]
  - gpu_class: cpu
    agent_command: "benchfleet-agent"
)");
  // No coordinator listens at this URL, and no token is set: the command needs neither.
  const std::map<std::string, std::string> env = {{"BENCHFLEET_URL", "http://127.0.0.1:9"}};
  auto run = [&](std::vector<std::string> args) { return CliProcess(dir, std::move(args), env).wait(); };

  CliRun r = run({"slurm-script", "--launcher-config", config, "--class", "a100"});
  ASSERT_EQ(r.code, cli::kExitOk) << r.err;
  auto loaded = slurm::load_launcher_config(config);
  ASSERT_TRUE(loaded.ok()) << loaded.error().describe();
  EXPECT_EQ(r.out, slurm::render_sbatch_script(*loaded, *loaded->find_class("a100")));
  EXPECT_TRUE(r.out.starts_with("#!/bin/bash\n")) << r.out;
  for (const std::string& line : std::vector<std::string>{
           "#SBATCH --job-name=benchfleet-a100\n", "#SBATCH --partition=gpu\n", "#SBATCH --gres=gpu:a100:1\n",
           "#SBATCH --account=bench\n", "#SBATCH --time=01:30:00\n", "#SBATCH --cpus-per-task=8\n",
           "#SBATCH --exclusive\n", "#SBATCH --output=" + dir + "/state/logs/slurm-%A_%a.out\n",
           "\nexec /opt/benchfleet/bin/benchfleet-agent --config /etc/benchfleet/agent.yaml --allocation slurm "
           "--idle-exit-s 90\n"}) {
    EXPECT_NE(r.out.find(line), std::string::npos) << line << " not in:\n" << r.out;
  }
  EXPECT_NE(r.err.find("mkdir -p " + dir + "/state/logs"), std::string::npos) << r.err;
  // bash reads it (syntax only).
  write_file(dir + "/a100.sbatch", r.out);
  EXPECT_EQ(std::system(("bash -n " + dir + "/a100.sbatch").c_str()), 0);

  r = run({"slurm-script", "--launcher-config", config, "--class", "cpu"});
  ASSERT_EQ(r.code, cli::kExitOk) << r.err;
  EXPECT_EQ(r.out.find("--partition"), std::string::npos) << r.out;  // not configured, not given
  EXPECT_NE(r.out.find("exec benchfleet-agent --allocation slurm --idle-exit-s 120\n"), std::string::npos) << r.out;

  r = run({"slurm-script", "--launcher-config", config, "--class", "t4"});
  EXPECT_EQ(r.code, cli::kExitError);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_NE(r.err.find("--class: no class \"t4\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("configured: a100, cpu"), std::string::npos) << r.err;

  write_file(dir + "/bad.yaml", "classes:\n  - gpu_class: a100\n    agent_command: x\n    max_allocations: 0\n");
  r = run({"slurm-script", "--launcher-config", dir + "/bad.yaml", "--class", "a100"});
  EXPECT_EQ(r.code, cli::kExitError);
  EXPECT_NE(r.err.find("classes[0].max_allocations"), std::string::npos) << r.err;

  r = run({"slurm-script", "--launcher-config", dir + "/missing.yaml", "--class", "a100"});
  EXPECT_EQ(r.code, cli::kExitError);
  EXPECT_NE(r.err.find("--launcher-config " + dir + "/missing.yaml"), std::string::npos) << r.err;

  r = run({"slurm-script", "--launcher-config", config});
  EXPECT_EQ(r.code, cli::kExitUsage);
  EXPECT_NE(r.err.find("--class"), std::string::npos) << r.err;
}

// ---- watch_run in process, on an injected terminal ---------------------------------------------

TEST_F(CliTest, TerminalBarUpdatesInPlaceWithCountsAndEta) {
  auto created = coord_.submit(json::parse(R"({"name": "tty", "models": [")" + kResnet18 + R"(", ")" + kSqueezenet +
                                           R"("], "batch_sizes": [1, 2, 4], "modes": ["eager"],
                                            "torch_builds": ["local"], "gpus": ["cpu"]})"));
  const std::int64_t id = created["id"].get<std::int64_t>();
  FakeAgent a = agent();
  std::ostringstream out, err;
  double now = 0;
  int sleeps = 0;
  cli::Console console{
      out,
      err,
      /*err_is_terminal=*/true,
      /*width=*/100,
      [&] { return now; },
      [&](double s) {
        // Each poll interval, one more job finishes (the batch-4 ResNet OOMs).
        now += s;
        ++sleeps;
        if (auto lease = a.lease_job("cpu", 0)) {
          const json& spec = lease->spec();
          a.post_result(*lease, spec["model"] == kResnet18 && spec["batch"] == 4 ? oom_result() : ok_result(3.0));
        }
        return true;
      }};
  cli::FleetClient client(coord_.base_url(), "", 10s);
  cli::WatchOptions options;
  options.interval_s = 10;
  options.show_results = true;
  const int code = cli::watch_run(client, id, options, console);
  EXPECT_EQ(code, cli::kExitOk);
  EXPECT_GE(sleeps, 6);
  const std::string e = err.str();
  // Frames are redrawn in place; counts grow; the ETA is the coordinator's, from the jobs' own
  // times (milliseconds here: leased and answered at once), not the poll rate (10 s a job).
  EXPECT_NE(e.find("\r\x1b[2Krun " + std::to_string(id) + " [------------------------------] 0/6 0%  ETA --"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("2/6 33%  ok 2  ETA 0s"), std::string::npos) << e;
  EXPECT_NE(e.find("6/6 100%  ok 5 · oom 1"), std::string::npos) << e;
  EXPECT_NE(e.find("[##############################] 6/6 100%"), std::string::npos) << e;
  EXPECT_NE(e.find("\nrun " + std::to_string(id) + " done after 1m00s: 6/6 jobs (ok 5 · oom 1)\n"), std::string::npos)
      << e;
  // A line per result on stdout, in the order they were stored.
  const std::string o = out.str();
  EXPECT_EQ(std::count(o.begin(), o.end(), '\n'), 6) << o;
  EXPECT_NE(o.find("oom         " + kResnet18 + "  batch 4"), std::string::npos) << o;
}

TEST_F(CliTest, WatchStopsOnInterruptionAndLeavesTheRunAlone) {
  auto created = coord_.submit(json::parse(R"({"name": "int", "models": [")" + kResnet18 +
                                           R"("], "batch_sizes": [1], "modes": ["eager"],
                                            "torch_builds": ["local"], "gpus": ["cpu"]})"));
  const std::int64_t id = created["id"].get<std::int64_t>();
  std::ostringstream out, err;
  cli::Console console{out, err, false, 80, [] { return 0.0; }, [](double) { return false; }};
  cli::FleetClient client(coord_.base_url(), "", 10s);
  EXPECT_EQ(cli::watch_run(client, id, {}, console), cli::kExitInterrupted);
  EXPECT_NE(err.str().find("run " + std::to_string(id) + " goes on"), std::string::npos) << err.str();
  EXPECT_EQ(coord_.get_json("/api/v1/runs/" + std::to_string(id))["state"], "queued");
  // An unknown run is an error at once, not a wait.
  EXPECT_EQ(cli::watch_run(client, 999, {}, console), cli::kExitError);
}

}  // namespace
}  // namespace benchfleet::testing
