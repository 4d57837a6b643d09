// Integration: a user measures models of their own through the CLI alone, with nothing touched on
// the coordinator or the agent (docs/models.md). In the unstable root (torch 2.14 with
// transformers, no timm), against the real coordinator, agent, worker and runner:
// - a Hugging Face checkpoint directory made here with save_pretrained (and its
//   preprocessor_config.json), uploaded as a tar artifact, measured eager and `default` in both
//   runtimes, with an accuracy verdict;
// - a torchvision model outside the catalog by name (regnet_y_400mf);
// - a Python factory uploaded as a file (and, libtorch, `unsupported`: it needs an export);
// - an exported .pt2 made here, in the python runtime and packaged with AOTInductor;
// - a timm model on a build without timm: `unsupported`, naming timm;
// - bad input, each answered and nothing stored lost: an unknown source, a path escaping its
//   root, an unknown artifact, a factory that raises, one that returns the wrong type, an
//   artifact whose stored bytes no longer match its digest, a redefinition of a model that has
//   results.
//
// Needs the unstable root and its worker (scripts/test.sh makes them); skips without them unless
// BENCHFLEET_REQUIRE_TORCH_ROOT=1.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <string>

#include "tests/integration/agent_test_util.h"
#include "tests/integration/cli_process.h"
#include "tests/integration/torch_root_util.h"

namespace benchfleet::testing {
namespace {

// Runs python3 in the unstable root with `dir` bound (the files it writes land there).
int in_root_python(const std::string& dir, const std::string& script) {
  const std::string file = dir + "/make.py";
  std::ofstream(file) << script;
  const std::string command = std::string(BENCHFLEET_SOURCE_DIR) + "/scripts/in-root.sh " + BENCHFLEET_SID_ROOT +
                              " --bind " + dir + " --chdir " + dir + " -- python3 " + file + " >" + dir +
                              "/make.log 2>&1";
  return std::system(command.c_str());
}

const char* kMakeFiles = R"(
import json, os, torch
from transformers import ViTConfig, ViTForImageClassification
os.makedirs("ckpt", exist_ok=True)
torch.manual_seed(0)
config = ViTConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
                   image_size=32, patch_size=8, num_labels=10)
ViTForImageClassification(config).save_pretrained("ckpt")
json.dump({"image_processor_type": "ViTImageProcessor", "do_resize": True, "size": {"height": 32, "width": 32}},
          open("ckpt/preprocessor_config.json", "w"))

from tiny_net import Net

batch = torch.export.Dim("batch", max=64)
program = torch.export.export(Net().eval(), (torch.randn(2, 3, 32, 32),), dynamic_shapes={"x": {0: batch}})
torch.export.save(program, "tiny.pt2")
)";

// The small network the factory returns and the exported program holds.
const char* kNet = R"(import torch

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3)
        self.fc = torch.nn.Linear(8, 10)

    def forward(self, x):
        return self.fc(self.conv(x).mean((2, 3)))
)";

// A factory file: the network and its function (uploaded alone, so it holds both).
const std::string kFactory = std::string(kNet) + R"(
def make(batch, dtype, device):
    return Net().to(device=device, dtype=dtype), (torch.randn(batch, 3, 32, 32, dtype=dtype, device=device),)
)";

class RegisteredModels : public ::testing::Test {
 protected:
  CliRun cli(std::vector<std::string> args) {
    return CliProcess(coord_.dir(), std::move(args),
                      {{"BENCHFLEET_URL", coord_.base_url()},
                       {"BENCHFLEET_OPERATOR_TOKEN", CoordinatorProcess::kOperatorToken}})
        .wait(std::chrono::minutes(5));
  }
  // `benchfleet artifacts add PATH`: the digest it printed.
  std::string upload(const std::string& path) {
    const CliRun r = cli({"artifacts", "add", path});
    EXPECT_EQ(r.code, 0) << r.err;
    std::smatch m;
    EXPECT_TRUE(std::regex_search(r.out, m, std::regex("sha256:[0-9a-f]{64}"))) << r.out;
    return m.empty() ? "" : m.str();
  }
  // `benchfleet models add FILE` of `yaml`.
  CliRun add_model(const std::string& name, const std::string& yaml, bool new_version = false) {
    const std::string file = coord_.dir() + "/" + name + ".yaml";
    std::ofstream(file) << yaml;
    std::vector<std::string> args = {"models", "add", file};
    if (new_version) args.push_back("--new-version");
    return cli(args);
  }
  json run_and_wait(json matrix, const std::string& name) {
    matrix["name"] = name;
    matrix["torch_builds"] = {"unstable"};
    const json run = coord_.submit(matrix);
    EXPECT_TRUE(wait_run_state(coord_, run, "done", 1200s)) << run_of(coord_, run).dump(1) << coord_.log_tail();
    return run;
  }
  // The run's results by "model mode runtime".
  std::map<std::string, json> results(const json& run) {
    std::map<std::string, json> out;
    for (const json& row : results_of(coord_, run)) {
      const json& job = row.at("job");
      out[job.value("model", "") + " " + job.value("mode", "") + " " + job.value("runtime", "")] = row.at("result");
    }
    return out;
  }

  CoordinatorProcess coord_{{BENCHFLEET_FAST_LEASES}};
};

TEST_F(RegisteredModels, FiveSourcesThroughTheCliAlone) {
  REQUIRE_ROOTS(missing_root(BENCHFLEET_SID_ROOT, BENCHFLEET_SID_ROOT_WORKER, "sid"));
  const std::string src = coord_.dir() + "/src";
  std::filesystem::create_directories(src);
  std::ofstream(src + "/tiny_net.py") << kNet;
  ASSERT_EQ(in_root_python(src, kMakeFiles), 0) << read_file(src + "/make.log");
  std::ofstream(src + "/tiny_factory.py") << kFactory;
  std::ofstream(src + "/raising.py")
      << "def make(batch, dtype, device):\n    raise ValueError('no weights for batch')\n";
  std::ofstream(src + "/wrong.py") << "def make(batch, dtype, device):\n    return 'a string'\n";
  std::ofstream(src + "/corrupt.py") << "# another artifact\n" << kFactory;

  const std::string ckpt = upload(src + "/ckpt");
  const std::string factory = upload(src + "/tiny_factory.py");
  const std::string raising = upload(src + "/raising.py");
  const std::string wrong = upload(src + "/wrong.py");
  const std::string corrupt = upload(src + "/corrupt.py");
  const std::string program = upload(src + "/tiny.pt2");
  EXPECT_EQ(upload(src + "/tiny_factory.py"), factory) << "content-addressed";

  const std::map<std::string, std::string> definitions = {
      {"vit", "id: acme/tiny-vit\nsource: huggingface\ntask: Image Classification\nname: TinyViT\nartifact: " + ckpt},
      {"regnet", "id: acme/regnet\nsource: torchvision\narchitecture: regnet_y_400mf\n"},
      {"factory", "id: acme/factory\nsource: python\nfactory: tiny_factory:make\nartifact: " + factory},
      {"raising", "id: acme/raising\nsource: python\nfactory: raising:make\nartifact: " + raising},
      {"wrong", "id: acme/wrong\nsource: python\nfactory: wrong:make\nartifact: " + wrong},
      {"corrupt", "id: acme/corrupt\nsource: python\nfactory: corrupt:make\nartifact: " + corrupt},
      {"exported", "id: acme/exported\nsource: exported\nartifact: " + program},
      {"timm", "id: acme/timm-resnet\nsource: timm\narchitecture: resnet18\n"},
  };
  for (const auto& [name, yaml] : definitions) {
    const CliRun r = add_model(name, yaml);
    EXPECT_EQ(r.code, 0) << name << ": " << r.err;
    EXPECT_NE(r.out.find("created"), std::string::npos) << r.out;
  }

  // Bad input: a 400 naming the field, nothing stored.
  const auto refused = [&](const json& definition, const std::string& field) {
    const auto r = coord_.post("/api/v1/models", definition);
    EXPECT_EQ(r.status, 400u) << r.body;
    EXPECT_EQ(r.json().value().value("field", ""), field) << r.body;
  };
  refused({{"id", "acme/x"}, {"source", "onnx"}}, "source");
  refused({{"id", "acme/x"}, {"source", "exported"}, {"path", coord_.dir() + "/../etc/x.pt2"}}, "path");
  refused({{"id", "acme/x"}, {"source", "exported"}, {"artifact", "sha256:" + std::string(64, 'e')}}, "artifact");
  const CliRun bad_file = add_model("bad", "id: acme/x\nsource: python\nfactory: not a factory\n");
  EXPECT_NE(bad_file.code, 0);
  EXPECT_NE(bad_file.err.find("line 3"), std::string::npos) << "the file's line of the field: " << bad_file.err;
  EXPECT_EQ(coord_.get_json("/api/v1/models").at("models").size(), 15u + definitions.size());

  // The artifact whose stored bytes changed after its upload: the agent's download no longer
  // hashes to its digest.
  std::ofstream(coord_.db_path() + ".artifacts/" + corrupt.substr(7)) << "# not the uploaded bytes\n\n" << kFactory;

  const std::string config = coord_.dir() + "/agent.yaml";
  std::ofstream(config) << "artifact_dir: " << kept_test_dir("registered-models") << "\n"
                        << "builds:\n"
                        << "  - {name: unstable, python: /usr/bin/python3, root: " << BENCHFLEET_SID_ROOT
                        << ", worker: " << BENCHFLEET_SID_ROOT_WORKER << "}\n";
  AgentProcess agent(agent_options(coord_, "own-models", config));
  agent.start();
  ASSERT_TRUE(wait_online(coord_, {"own-models"}, 300s)) << agents_of(coord_).dump(1);

  // The checkpoint: eager and default in both runtimes.
  json vit_matrix = cpu_matrix({"acme/tiny-vit"}, {2}, {"eager", "default"});
  vit_matrix["runtimes"] = {"libtorch", "python"};
  const json vit_run = run_and_wait(vit_matrix, "a checkpoint of our own");
  for (const auto& [cell, r] : results(vit_run)) {
    SCOPED_TRACE(cell);
    ASSERT_EQ(r.value("status", ""), "ok") << r.dump(1);
    if (cell.find(" default ") != std::string::npos) {
      EXPECT_EQ(r.at("accuracy").value("verdict", ""), "pass") << r.dump(1);
    }
  }
  EXPECT_EQ(results(vit_run).size(), 4u);
  const std::string report = coord_.get(run_url(vit_run) + "/report?format=md").body;
  EXPECT_NE(report.find("Image Classification/TinyViT"), std::string::npos) << report;

  // The other sources, eager in the python runtime; the exported program and the factory in the
  // libtorch runtime too.
  json python = cpu_matrix({"acme/regnet", "acme/factory", "acme/raising", "acme/wrong", "acme/corrupt",
                            "acme/exported", "acme/timm-resnet"},
                           {2}, {"eager"});
  python["runtimes"] = {"python"};
  const auto by_cell = results(run_and_wait(python, "the other sources"));
  const auto status_of = [&](const std::string& cell) { return by_cell.at(cell).value("status", ""); };
  const auto error_of = [&](const std::string& cell) { return by_cell.at(cell).value("error", ""); };
  EXPECT_EQ(status_of("acme/regnet eager python"), "ok") << by_cell.at("acme/regnet eager python").dump(1);
  EXPECT_EQ(status_of("acme/factory eager python"), "ok") << by_cell.at("acme/factory eager python").dump(1);
  EXPECT_EQ(status_of("acme/exported eager python"), "ok") << by_cell.at("acme/exported eager python").dump(1);
  EXPECT_EQ(status_of("acme/raising eager python"), "error");
  EXPECT_NE(error_of("acme/raising eager python").find("ValueError: no weights for batch"), std::string::npos)
      << error_of("acme/raising eager python");
  EXPECT_EQ(status_of("acme/wrong eager python"), "error");
  EXPECT_NE(error_of("acme/wrong eager python").find("str"), std::string::npos) << error_of("acme/wrong eager python");
  EXPECT_EQ(status_of("acme/corrupt eager python"), "error");
  EXPECT_NE(error_of("acme/corrupt eager python").find(corrupt), std::string::npos)
      << error_of("acme/corrupt eager python");
  EXPECT_EQ(status_of("acme/timm-resnet eager python"), "unsupported");
  EXPECT_NE(error_of("acme/timm-resnet eager python").find("timm"), std::string::npos);

  json libtorch = cpu_matrix({"acme/exported", "acme/factory"}, {2}, {"default"});
  libtorch["runtimes"] = {"libtorch"};
  const auto packaged = results(run_and_wait(libtorch, "an exported program, packaged"));
  EXPECT_EQ(packaged.at("acme/exported default libtorch").value("status", ""), "ok")
      << packaged.at("acme/exported default libtorch").dump(1);
  EXPECT_EQ(packaged.at("acme/factory default libtorch").value("status", ""), "unsupported");
  EXPECT_NE(packaged.at("acme/factory default libtorch").value("error", "").find("exported"), std::string::npos);

  // A model with results keeps its definition: a new one needs --new-version, and the series of
  // the two never mix.
  const std::string changed = definitions.at("regnet") + "name: RegNet 800\n";
  const CliRun conflict = add_model("regnet2", changed);
  EXPECT_NE(conflict.code, 0);
  EXPECT_NE(conflict.err.find("new_version"), std::string::npos) << conflict.err;
  const CliRun v2 = add_model("regnet2", changed, true);
  EXPECT_EQ(v2.code, 0) << v2.err;
  EXPECT_NE(v2.out.find("acme/regnet@2"), std::string::npos) << v2.out;
  const CliRun shown = cli({"models", "show", "acme/regnet"});
  EXPECT_EQ(shown.code, 0) << shown.err;
  EXPECT_NE(shown.out.find("versions: 1 2"), std::string::npos) << shown.out;
  const CliRun removed = cli({"models", "rm", "acme/regnet"});
  EXPECT_NE(removed.code, 0) << "a model with results is retired, not removed";
  EXPECT_EQ(cli({"models", "rm", "acme/regnet", "--retire"}).code, 0);
}

}  // namespace
}  // namespace benchfleet::testing
