// Integration: submissions checked against the enrolled fleet, through the real CLI and the real
// coordinator. A torch build, GPU class or runtime no enrolled agent offers is refused naming the
// field, the nearest name and what the fleet offers (it would otherwise wait forever);
// --allow-pending queues it for hosts still to come and says so; --dry-run asks the coordinator
// the same, names the modes that will end unsupported, and fails when it could not check; a
// misspelt matrix key is named with the key meant. `compare` and its gate.
#include <gtest/gtest.h>

#include <string>

#include "cli/progress.h"
#include "tests/integration/cli_process.h"
#include "tests/support/coordinator_process.h"

namespace benchfleet::testing {
namespace {

using nlohmann::json;

class FleetCheckTest : public ::testing::Test {
 protected:
  CliRun cli(std::vector<std::string> args, const std::string& token = CoordinatorProcess::kOperatorToken) {
    return CliProcess(coord_.dir(), std::move(args),
                      {{"BENCHFLEET_URL", coord_.base_url()}, {"BENCHFLEET_OPERATOR_TOKEN", token}})
        .wait();
  }

  std::string matrix_file(const std::string& name, const std::string& builds, const std::string& gpus,
                          const std::string& batches_key = "batch_sizes") {
    const std::string path = coord_.dir() + "/" + name;
    write_file(path,
               "name: fleet check\n"
               "models: [torchvision/resnet18]\n" +
                   batches_key + ": [1]\n" + "modes: [eager]\n" + "torch_builds: [" + builds + "]\n" + "gpus: [" +
                   gpus + "]\n");
    return path;
  }

  std::size_t runs() { return coord_.get_json("/api/v1/runs")["runs"].size(); }

  CoordinatorProcess coord_;
};

TEST_F(FleetCheckTest, ATypoedBuildOrClassIsRefusedNamingTheFleetUnlessAllowedToWait) {
  // A CPU-only host with Debian 12's and 13's torch.
  FakeAgent host(
      coord_, FakeAgent::descriptor("cpu-host", {{"cpu", "cpu"}}, {{"debian12", {"eager"}}, {"debian13", {"eager"}}}));

  const std::string typo = matrix_file("typo.yaml", "debain13", "cpu");
  CliRun r = cli({"submit", typo});
  EXPECT_EQ(r.code, cli::kExitError) << r.out << r.err;
  EXPECT_NE(r.err.find(typo + ": line 5: submit: HTTP 400: torch_builds[0]: no enrolled agent offers torch build "
                              "\"debain13\" (did you mean \"debian13\"?); the fleet offers: debian12, debian13"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("--allow-pending"), std::string::npos) << r.err;

  // --dry-run asks the coordinator, and says the same.
  r = cli({"submit", typo, "--dry-run"});
  EXPECT_EQ(r.code, cli::kExitError) << r.out << r.err;
  EXPECT_NE(r.out.find("valid; 1 jobs"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("line 5: check: HTTP 400: torch_builds[0]: no enrolled agent offers torch build \"debain13\""),
            std::string::npos)
      << r.err;

  // A GPU class on a CPU-only fleet.
  const std::string a100 = matrix_file("a100.yaml", "debian13", "a100");
  r = cli({"submit", a100});
  EXPECT_EQ(r.code, cli::kExitError);
  EXPECT_NE(r.err.find("line 6: submit: HTTP 400: gpus[0]: no enrolled agent has a slot of GPU class \"a100\"; the "
                       "fleet has: cpu"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(runs(), 0u) << "nothing refused was stored";

  // Hosts still to come: queued, and said.
  r = cli({"submit", a100, "--dry-run", "--allow-pending"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("some jobs wait for hosts still to come"), std::string::npos) << r.out;
  EXPECT_EQ(runs(), 0u) << "a dry run stores nothing";
  r = cli({"submit", a100, "--allow-pending"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("submitted run "), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("pending, for hosts still to come: gpus[0]: no enrolled agent has a slot of GPU class \"a100\""),
            std::string::npos)
      << r.err;
  EXPECT_EQ(runs(), 1u);

  // What the fleet offers passes, and the dry run says so.
  const std::string good = matrix_file("good.yaml", "debian12, debian13", "cpu");
  r = cli({"submit", good, "--dry-run"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("valid; 2 jobs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the fleet can run every job"), std::string::npos) << r.out;
  r = cli({"submit", good});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err, "") << "nothing pending";

  // The API answers problem+json naming the field; allow_pending must be true or false.
  const json matrix = {{"name", "api"},         {"models", {"torchvision/resnet18"}},
                       {"batch_sizes", {1}},    {"modes", {"eager"}},
                       {"torch_builds", {"x"}}, {"gpus", {"cpu"}}};
  auto refused = coord_.post("/api/v1/runs", matrix);
  EXPECT_EQ(refused.status, 400u) << refused.body;
  EXPECT_EQ(json::parse(refused.body)["field"], "torch_builds[0]") << refused.body;
  EXPECT_EQ(coord_.post("/api/v1/runs?allow_pending=yes", matrix).status, 400u);
  auto queued = coord_.post("/api/v1/runs?allow_pending=true", matrix);
  EXPECT_EQ(queued.status, 201u) << queued.body;
  EXPECT_EQ(json::parse(queued.body)["pending"][0]["field"], "torch_builds[0]") << queued.body;
}

TEST_F(FleetCheckTest, AnEmptyFleetRefusesNothingAndAMisspeltKeyIsNamedWithTheKeyMeant) {
  // No agent yet (a Slurm launcher starts them for the queue): queued.
  CliRun r = cli({"submit", matrix_file("early.yaml", "nightly", "h100")});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(runs(), 1u);

  const std::string misspelt = matrix_file("misspelt.yaml", "nightly", "h100", "batch_size");
  r = cli({"submit", misspelt});
  EXPECT_EQ(r.code, cli::kExitError);
  EXPECT_NE(r.err.find("line 3: batch_size: is not a known field (did you mean \"batch_sizes\"?)"), std::string::npos)
      << r.err;
  const std::string extra = coord_.dir() + "/extra.yaml";
  write_file(extra, read_file(matrix_file("base.yaml", "nightly", "h100")) + "timeout: 60\n");
  r = cli({"submit", extra});
  EXPECT_EQ(r.code, cli::kExitError);
  EXPECT_NE(r.err.find("timeout: is not a known field (did you mean \"timeout_s\"?)"), std::string::npos) << r.err;
}

// Two builds on unequal terms: the report (and the compare view, from the report's columns) says
// what changes speed besides torch; on equal terms it says nothing.
TEST_F(FleetCheckTest, BuildsWithDifferentThreadCountsGetAWarningEqualOnesNone) {
  FakeAgent host(
      coord_, FakeAgent::descriptor("cpu-host", {{"cpu", "cpu"}}, {{"debian12", {"eager"}}, {"debian13", {"eager"}}}));
  const auto run_with_threads = [&](int threads12, int threads13) {
    const std::string file = matrix_file("m.yaml", "debian12, debian13", "cpu");
    const CliRun r = cli({"submit", file, "--print-id"});
    EXPECT_EQ(r.code, 0) << r.err;
    const std::string id = r.out.substr(0, r.out.find('\n'));
    for (int i = 0; i < 2; ++i) {
      auto lease = host.lease_job("cpu", 1);
      if (!lease) {
        ADD_FAILURE() << "no job to lease";
        break;
      }
      json result = ok_result(10.0);
      const bool old = lease->spec()["torch_build"] == "debian12";
      result["environment"] = {{"torch_version", old ? "1.13.0" : "2.6.0"},
                               {"cpu_model", "AMD EPYC"},
                               {"cpu_threads", old ? threads12 : threads13}};
      EXPECT_EQ(host.post_result(*lease, result).status, 201u);
    }
    return coord_.get_json("/api/v1/runs/" + id + "/report?format=json");
  };
  const json unequal = run_with_threads(1, 2);
  EXPECT_EQ(unequal["tables"][0]["fingerprint_warnings"], json({"cpu_threads: debian12 1; debian13 2"}))
      << unequal["tables"][0].dump(1);
  EXPECT_EQ(unequal["tables"][0]["columns"][0]["fingerprints"][0]["cpu_threads"], 1);
  const CliRun md = cli({"report", unequal["run_id"].dump()});
  EXPECT_NE(md.out.find("⚠ The builds compared here differ in what changes speed"), std::string::npos) << md.out;

  const json equal = run_with_threads(2, 2);
  EXPECT_EQ(equal["tables"][0]["fingerprint_warnings"], json::array()) << equal["tables"][0].dump(1);
  EXPECT_EQ(cli({"report", equal["run_id"].dump()}).out.find("⚠"), std::string::npos);
}

// `benchfleet compare` for CI: two runs of one build, B twice as slow in one cell (their CIs of the
// median, 0.9x-1.1x of each, apart, and beyond the CPU's run-to-run noise floor) and the same in
// the other; --fail-if-slower's exit code says whether a significant slowdown passes the
// threshold, naming the cell; two builds of one run are compared when the run is given twice; a
// gate that compared fewer cells than A measured (a misspelt build, other batch sizes) fails with
// its own exit code, and an unknown build is an error naming the run's builds.
TEST_F(FleetCheckTest, CompareFailsOnlyOnASignificantSlowdownBeyondTheThreshold) {
  FakeAgent host(coord_, FakeAgent::descriptor("cpu-host", {{"cpu", "cpu"}}, {{"debian13", {"eager"}}}));
  const std::string file = coord_.dir() + "/two.yaml";
  write_file(file,
             "name: two models\n"
             "models: [torchvision/resnet18, torchvision/squeezenet1_1]\n"
             "batch_sizes: [1]\nmodes: [eager]\ntorch_builds: [debian13]\ngpus: [cpu]\n");
  const auto run = [&](double resnet_ms) {
    const CliRun r = cli({"submit", file, "--print-id"});
    EXPECT_EQ(r.code, 0) << r.err;
    for (int i = 0; i < 2; ++i) {
      auto lease = host.lease_job("cpu", 1);
      if (!lease) {
        ADD_FAILURE() << "no job to lease";
        break;
      }
      const bool resnet = lease->spec()["model"] == "torchvision/resnet18";
      EXPECT_EQ(host.post_result(*lease, ok_result(resnet ? resnet_ms : 5.0)).status, 201u);
    }
    return r.out.substr(0, r.out.find('\n'));
  };
  const std::string a = run(10.0);
  const std::string b = run(20.0);  // ResNet-18 twice as slow (beyond the CPU's 80% floor); SqueezeNet the same

  CliRun r = cli({"compare", a, b});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("# A = run " + a + " debian13 vs B = run " + b + " debian13 (median latency in ms"),
            std::string::npos)
      << r.out;
  // The fixture's results are flagged (ci_not_met): the ratio carries the mark.
  EXPECT_NE(r.out.find("| CPU (batch size: 1) | Image Classification/ResNet-18 | eager | 10.000 | 20.000 | 0.50x"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("| ▼ slower |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| 5.000 | 5.000 | 1.00x"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| ≈ no significant change |"), std::string::npos) << r.out;

  r = cli({"compare", a, b, "--fail-if-slower", "10"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("1 significant slowdown(s) beyond 10% (B against A):"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Image Classification/ResNet-18 | eager: 10.000 -> 20.000 ms (+100.0%; beyond the run-to-run "
                       "noise floor (80%)"),
            std::string::npos)
      << r.err;
  r = cli({"compare", a, b, "--fail-if-slower", "120"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("no significant slowdown beyond 120%"), std::string::npos) << r.err;
  r = cli({"compare", b, a, "--fail-if-slower", "0"});
  EXPECT_EQ(r.code, 0) << "B faster is no slowdown: " << r.err;

  r = cli({"compare", a, b, "--format", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["cells"].size(), 2u) << r.out;
  EXPECT_EQ(j["stat"], "median");
  EXPECT_EQ(j["expected"], 2);
  EXPECT_EQ(j["compared"], 2);
  EXPECT_EQ(j["cells"][0]["noise"], "floor");
  r = cli({"compare", a, a});
  EXPECT_EQ(r.code, cli::kExitError);
  EXPECT_NE(r.err.find("against itself: name two of its builds"), std::string::npos) << r.err;

  // All compared: the gate judges (exit 0 here: nothing slower beyond 120%).
  r = cli({"compare", a, b, "--fail-if-slower", "120", "--min-cells", "2"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("no significant slowdown beyond 120% in 2 cells"), std::string::npos) << r.err;
  // More cells asked than compared: the gate cannot pass.
  r = cli({"compare", a, b, "--min-cells", "3"});
  EXPECT_EQ(r.code, cli::kExitIncomplete) << r.err;
  EXPECT_NE(r.err.find("compared 2 of the 3 cells asked (--min-cells); the gate cannot pass"), std::string::npos)
      << r.err;
  // An unknown build: the coordinator's error, naming what the run has.
  r = cli({"compare", a, b, "--build-a", "debain13", "--fail-if-slower", "5"});
  EXPECT_EQ(r.code, cli::kExitError) << r.err;
  EXPECT_NE(r.err.find("run " + a + " has no torch build \"debain13\"; its builds: debian13"), std::string::npos)
      << r.err;
  // Nothing in common (another batch size): compared nothing, so the gate fails closed.
  write_file(file,
             "name: batch 4\nmodels: [torchvision/resnet18]\n"
             "batch_sizes: [4]\nmodes: [eager]\ntorch_builds: [debian13]\ngpus: [cpu]\n");
  const CliRun c = cli({"submit", file, "--print-id"});
  ASSERT_EQ(c.code, 0) << c.err;
  const std::string batch4 = c.out.substr(0, c.out.find('\n'));
  auto lease = host.lease_job("cpu", 1);
  ASSERT_TRUE(lease);
  EXPECT_EQ(host.post_result(*lease, ok_result(40.0)).status, 201u);
  r = cli({"compare", batch4, b, "--fail-if-slower", "5"});
  EXPECT_EQ(r.code, cli::kExitIncomplete) << r.out << r.err;
  EXPECT_NE(r.err.find("compared 0 of A's 1 measured cells; the gate cannot pass"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not compared: CPU (batch size: 4) | Image Classification/ResNet-18 | eager: B has no CPU "
                       "(batch size: 4) table"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("Compared 0 of A's 1 measured cells."), std::string::npos) << r.out;
}

// `compare --aa RUN`: the run's matrix again (a slice of its models), with fresh processes per cell,
// followed to its end; how far each cell moved between them; and the run against its repeat, an
// A/A that reads no change.
TEST_F(FleetCheckTest, CompareAaRepeatsARunAndShowsHowFarFreshProcessesMove) {
  FakeAgent host(coord_, FakeAgent::descriptor("cpu-host", {{"cpu", "cpu"}}, {{"debian13", {"eager"}}}));
  const std::string file = coord_.dir() + "/two.yaml";
  write_file(file,
             "name: two models\nmodels: [torchvision/resnet18, torchvision/squeezenet1_1]\n"
             "batch_sizes: [1]\nmodes: [eager]\ntorch_builds: [debian13]\ngpus: [cpu]\n");
  CliRun r = cli({"submit", file, "--print-id"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::string run = r.out.substr(0, r.out.find('\n'));
  for (int i = 0; i < 2; ++i) {
    auto lease = host.lease_job("cpu", 1);
    ASSERT_TRUE(lease);
    EXPECT_EQ(host.post_result(*lease, ok_result(11.0)).status, 201u);
  }

  CliProcess aa(
      coord_.dir(), {"compare", "--aa", run, "--repetitions", "3", "--models", "torchvision/resnet18"},
      {{"BENCHFLEET_URL", coord_.base_url()}, {"BENCHFLEET_OPERATOR_TOKEN", CoordinatorProcess::kOperatorToken}});
  // Three fresh processes of ResNet-18, 10, 11 and 12 ms: 20% apart.
  for (double ms : {10.0, 11.0, 12.0}) {
    auto lease = host.lease_job("cpu", 30);
    ASSERT_TRUE(lease) << "the A/A's job";
    EXPECT_EQ(lease->spec()["model"], "torchvision/resnet18");
    EXPECT_EQ(host.post_result(*lease, ok_result(ms)).status, 201u);
  }
  r = aa.wait();
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  const std::string repeat = std::to_string(std::stoll(run) + 1);
  EXPECT_NE(
      r.out.find("A/A: run " + repeat + " repeats run " + run + "'s matrix with 3 fresh processes per cell (3 jobs)"),
      std::string::npos)
      << r.out;
  EXPECT_NE(
      r.out.find("| CPU (batch size: 1) | Image Classification/ResNet-18 | debian13 - eager | 3 | 10.000 | 12.000 | "
                 "20.0% |"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Run-to-run noise over 1 cells: median spread 20.0%, worst 20.0%"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("compare " + run + ":debian13 " + repeat + ":debian13: 0 of 1 cells read as a change"),
            std::string::npos)
      << r.out;
  const json repeated = coord_.get_json("/api/v1/runs/" + repeat);
  EXPECT_EQ(repeated["matrix"]["repetitions"], 3);
  EXPECT_EQ(repeated["matrix"]["name"], "A/A of run " + run);

  r = cli({"compare", "--aa", run, "--models", "torchvision/vit"});
  EXPECT_EQ(r.code, cli::kExitError);
  EXPECT_NE(r.err.find("--models: run " + run + " did not measure torchvision/vit"), std::string::npos) << r.err;
  r = cli({"compare", "--aa", run, repeat});
  EXPECT_EQ(r.code, cli::kExitError);
  EXPECT_NE(r.err.find("--aa takes one run"), std::string::npos) << r.err;
}

// A dry run names what would wait forever (a runtime no agent offers) and what would end
// unsupported (a CUDA-graph mode on the CPU), and fails when it could not check (a wrong token).
TEST_F(FleetCheckTest, ADryRunNamesRuntimesAndModesTheFleetCannotRun) {
  FakeAgent host(coord_,
                 FakeAgent::descriptor("cpu-host", {{"cpu", "cpu"}}, {{"unstable", {"eager", "default"}, "python"}}));
  const std::string file = coord_.dir() + "/ro.yaml";
  write_file(file,
             "name: ro\nmodels: [torchvision/resnet18]\nbatch_sizes: [1]\nmodes: [eager, reduce-overhead]\n"
             "torch_builds: [unstable]\ngpus: [cpu]\nruntimes: [python]\n");
  CliRun r = cli({"submit", file, "--dry-run"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("the fleet takes every job, but some will end unsupported:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("modes[1]: reduce-overhead on build \"unstable\", runtime python, GPU class \"cpu\" will end "
                       "unsupported: it replays CUDA graphs"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("the fleet can run every job"), std::string::npos) << r.out;

  write_file(file,
             "name: lt\nmodels: [torchvision/resnet18]\nbatch_sizes: [1]\nmodes: [eager]\n"
             "torch_builds: [unstable]\ngpus: [cpu]\nruntimes: [libtorch]\n");
  r = cli({"submit", file, "--dry-run"});
  EXPECT_EQ(r.code, cli::kExitError) << r.out;
  EXPECT_NE(r.err.find("no enrolled agent offers runtime \"libtorch\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the fleet offers: python"), std::string::npos) << r.err;

  r = cli({"submit", file, "--dry-run"}, "wrong-token");
  EXPECT_EQ(r.code, cli::kExitError) << r.out << r.err;
  EXPECT_NE(r.out.find("not checked against the coordinator"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace benchfleet::testing
