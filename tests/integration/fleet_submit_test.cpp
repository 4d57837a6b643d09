// Integration: submissions checked against the enrolled fleet, through the real CLI and the real
// coordinator. A torch build or GPU class no enrolled agent offers is refused naming the field,
// the nearest name and what the fleet offers (it would otherwise wait forever); --allow-pending
// queues it for hosts still to come and says so; --dry-run asks the coordinator the same; a
// misspelt matrix key is named with the key meant.
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
  CliRun cli(std::vector<std::string> args) {
    return CliProcess(coord_.dir(), std::move(args),
                      {{"BENCHFLEET_URL", coord_.base_url()},
                       {"BENCHFLEET_OPERATOR_TOKEN", CoordinatorProcess::kOperatorToken}})
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

// `benchfleet compare` for CI: two runs of one build, B 50% slower in one cell (their CIs of the
// median, 0.9x-1.1x of each, apart) and the same in the other; --fail-if-slower's exit code says whether a significant
// slowdown passes the threshold, naming the cell; two builds of one run are compared when the run is given twice.
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
  const std::string b = run(15.0);  // ResNet-18 50% slower; SqueezeNet the same

  CliRun r = cli({"compare", a, b});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("# A = run " + a + " debian13 vs B = run " + b + " debian13 (median latency in ms"),
            std::string::npos)
      << r.out;
  // The fixture's results are flagged (ci_not_met): the ratio carries the mark.
  EXPECT_NE(r.out.find("| CPU (batch size: 1) | Image Classification/ResNet-18 | eager | 10.000 | 15.000 | 0.67x"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("| ▼ slower |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| 5.000 | 5.000 | 1.00x"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("| ≈ no significant change |"), std::string::npos) << r.out;

  r = cli({"compare", a, b, "--fail-if-slower", "10"});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("1 significant slowdown(s) beyond 10% (B against A):"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("Image Classification/ResNet-18 | eager: 10 -> 15 ms (+50.0%)"), std::string::npos) << r.err;
  r = cli({"compare", a, b, "--fail-if-slower", "60"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("no significant slowdown beyond 60%"), std::string::npos) << r.err;
  r = cli({"compare", b, a, "--fail-if-slower", "0"});
  EXPECT_EQ(r.code, 0) << "B faster is no slowdown: " << r.err;

  r = cli({"compare", a, b, "--format", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["cells"].size(), 2u) << r.out;
  EXPECT_EQ(j["stat"], "median");
  r = cli({"compare", a, a});
  EXPECT_EQ(r.code, cli::kExitError);
  EXPECT_NE(r.err.find("against itself: name two of its builds"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace benchfleet::testing
