// End to end: the README's first command, scripts/quickstart.sh, on the CPU with a shorter
// matrix (tests/data/quickstart-matrix.yaml), run twice. Everything is real: the script starts
// the coordinator and a local agent, submits with the CLI and prints the report; the agent
// exports with /usr/bin/python3 and measures with benchfleet-worker.
//
// Checked: every cell of the printed Markdown table equals the stored result (median in ms with
// three decimals, "OOM" where the worker ran out of memory, speedup = eager / torchscript), the
// OOM cell is there for real, and a second run of the same command works and reuses the running
// services. Set-up (apt, the build) is skipped: this test runs the binaries it was built with.
//
// The script leaves the services running (--detach); a reaper process started first runs
// `quickstart.sh stop` when this test ends, however it ends (even by SIGKILL), so nothing is left
// behind.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/http/client.h"
#include "tests/support/child_process.h"
#include "tests/support/temp_dir.h"

namespace benchfleet::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

constexpr const char* kSourceDir = BENCHFLEET_SOURCE_DIR;
constexpr const char* kBuildDir = BENCHFLEET_BUILD_DIR;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The marks the report puts after a flagged number: "*" for noise, "†" for a budget stop.
std::string marks_for(const std::set<std::string>& flags) {
  const bool budget = flags.contains("ci_not_met");
  return std::string(flags.size() > (budget ? 1u : 0u) ? "*" : "") + (budget ? "†" : "");
}

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// The quick start's environment for this test: its own state directory, a free port, the
// short matrix, this build tree, no set-up.
std::map<std::string, std::string> quickstart_env(const std::string& state) {
  return {{"BENCHFLEET_PORT", "0"},
          {"BENCHFLEET_QUICKSTART_STATE", state},
          {"BENCHFLEET_QUICKSTART_MATRIX", std::string(kSourceDir) + "/tests/data/quickstart-matrix.yaml"},
          {"BENCHFLEET_QUICKSTART_BUILD", kBuildDir},
          {"BENCHFLEET_QUICKSTART_SKIP_SETUP", "1"},
          {"BENCHFLEET_QUICKSTART_TIMEOUT_S", "500"},
          {"PATH", std::getenv("PATH") ? std::getenv("PATH") : "/usr/bin:/bin"}};
}

std::string env_prefix(const std::map<std::string, std::string>& env) {
  std::string s = "env";
  for (const auto& [k, v] : env) s += " " + k + "='" + v + "'";
  return s;
}

// Runs `quickstart.sh stop` when the test process goes away: `cat` sees EOF on its stdin when
// the last write end closes, which the kernel does at our exit, crash or kill included.
class Reaper {
 public:
  explicit Reaper(const std::map<std::string, std::string>& env) {
    const std::string command =
        "cat >/dev/null; " + env_prefix(env) + " " + kSourceDir + "/scripts/quickstart.sh stop >/dev/null 2>&1";
    pipe_ = ::popen(command.c_str(), "we");  // "e": the scripts we start must not hold the pipe open
  }
  ~Reaper() {
    if (pipe_) ::pclose(pipe_);  // closes stdin, waits for the stop
  }
  Reaper(const Reaper&) = delete;
  Reaper& operator=(const Reaper&) = delete;

 private:
  FILE* pipe_ = nullptr;
};

struct ScriptRun {
  int code = -1;
  std::string output;
};

ScriptRun run_quickstart(const std::map<std::string, std::string>& env, const std::string& log,
                         const std::vector<std::string>& args) {
  ChildOptions o;
  o.argv = {"/bin/bash", std::string(kSourceDir) + "/scripts/quickstart.sh"};
  o.argv.insert(o.argv.end(), args.begin(), args.end());
  o.log_file = log;
  o.clean_environment = true;
  o.env_set = env;
  auto child = ChildProcess::start(o);
  if (!child.ok()) return {-1, child.error().message};
  auto status = child->wait_exit(600s);
  ScriptRun r;
  r.code = status ? exit_code(*status) : -1;
  r.output = read_file(log);
  return r;
}

// One Markdown table of the report as printed: its title's batch size, headers and rows.
struct PrintedTable {
  int batch = 0;
  std::vector<std::string> headers;                      // after "Task/Model"
  std::map<std::string, std::vector<std::string>> rows;  // "Task/Model" -> cells
};

std::vector<std::string> split_row(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  for (std::size_t i = 1; i < line.size(); ++i) {  // skip the leading '|'
    if (line[i] == '|') {
      const auto b = cell.find_first_not_of(' '), e = cell.find_last_not_of(' ');
      cells.push_back(b == std::string::npos ? "" : cell.substr(b, e - b + 1));
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  return cells;
}

std::vector<PrintedTable> parse_tables(const std::string& output, std::int64_t& run_id) {
  std::vector<PrintedTable> tables;
  std::istringstream in(output);
  std::string line;
  const std::regex title(R"(^### CPU \(batch size: (\d+)\)$)");
  const std::regex heading(R"(^# .* \(run (\d+), median latency in ms\)$)");
  std::smatch m;
  bool latency_table = false;  // the "### " latency table, not its "#### Compile time and memory" one
  while (std::getline(in, line)) {
    if (std::regex_match(line, m, heading)) run_id = std::stoll(m[1]);
    if (line.rfind("#### ", 0) == 0) latency_table = false;
    if (std::regex_match(line, m, title)) {
      tables.push_back({std::stoi(m[1]), {}, {}});
      latency_table = true;
    } else if (!latency_table) {
      continue;
    } else if (!tables.empty() && line.rfind("| **Task/Model** |", 0) == 0) {
      for (std::string h : split_row(line)) {
        if (h.size() > 4) h = h.substr(2, h.size() - 4);  // **bold**
        tables.back().headers.push_back(h);
      }
      tables.back().headers.erase(tables.back().headers.begin());
    } else if (!tables.empty() && line.rfind("| ", 0) == 0 && line.find(":---:") == std::string::npos) {
      auto cells = split_row(line);
      const std::string label = cells.front();
      cells.erase(cells.begin());
      tables.back().rows[label] = cells;
    }
  }
  return tables;
}

// Checks the printed tables against the stored results of `run_id`. Returns the number of OOM
// cells seen (stored and printed as such).
int expect_tables_match_store(const std::string& output, const std::string& base_url, std::int64_t& run_id) {
  run_id = 0;
  const auto tables = parse_tables(output, run_id);
  EXPECT_GT(run_id, 0) << output;
  EXPECT_EQ(tables.size(), 2u) << output;

  http::Client client(base_url);
  auto models = client.get("/api/v1/models");
  EXPECT_TRUE(models.ok());
  std::map<std::string, std::string> label_of;     // catalog id -> "Task/Model"
  const json catalog = json::parse(models->body);  // iterating a member of a temporary would dangle
  for (const json& m : catalog["models"]) {
    label_of[m["id"].get<std::string>()] = m["display_name"].get<std::string>();
  }
  auto results = client.get("/api/v1/runs/" + std::to_string(run_id) + "/results?samples=false&limit=1000");
  EXPECT_TRUE(results.ok());
  const json stored = json::parse(results->body)["results"];
  EXPECT_EQ(stored.size(), 8u);  // 2 models x 2 batches x 2 modes, one attempt each

  int oom_cells = 0;
  std::map<std::tuple<std::string, int, std::string>, json> by_cell;
  // A result's flags: its cell, and speedups from it, read "9.325*" (noise) or "9.325†" (a budget stop).
  std::map<std::tuple<std::string, int, std::string>, std::set<std::string>> flagged;
  std::string build;                              // the matrix's one torch build
  std::map<int, std::set<std::string>> torch_of;  // batch -> torch versions its results recorded
  for (const json& row : stored) {
    const std::string model = row["job"]["model"];
    EXPECT_TRUE(label_of.contains(model)) << model;
    by_cell[{label_of[model], row["job"]["batch"].get<int>(), row["job"]["mode"].get<std::string>()}] = row["result"];
    flagged[{label_of[model], row["job"]["batch"].get<int>(), row["job"]["mode"].get<std::string>()}] =
        row.value("flags", json::array()).get<std::set<std::string>>();
    build = row["job"].value("torch_build", "");
    const std::string version = row["result"]["environment"].value("torch_version", "");
    // Headers show a version without its local suffix ("2.6.0+debian" as "2.6.0").
    if (!version.empty()) torch_of[row["job"]["batch"].get<int>()].insert(version.substr(0, version.find('+')));
  }
  for (const PrintedTable& t : tables) {
    // The build as the headers name it: with the torch its results in this table recorded.
    std::string named = build;
    EXPECT_EQ(torch_of[t.batch].size(), 1u) << "one worker measured batch " << t.batch;
    if (!torch_of[t.batch].empty()) named += " (torch " + *torch_of[t.batch].begin() + ")";
    EXPECT_EQ(t.headers, (std::vector<std::string>{named + " - eager", named + " - torchscript",
                                                   named + " - torchscript speedup"}));
    EXPECT_EQ(t.rows.size(), 2u);
    for (const auto& [label, cells] : t.rows) {
      SCOPED_TRACE(label + " batch " + std::to_string(t.batch));
      if (cells.size() != 3) {
        ADD_FAILURE() << "a row of " << cells.size() << " cells";
        continue;
      }
      std::map<std::string, std::optional<double>> median;
      for (const std::string mode : {"eager", "torchscript"}) {
        auto found = by_cell.find({label, t.batch, mode});
        if (found == by_cell.end()) {
          ADD_FAILURE() << "no stored result for " << label << " batch " << t.batch << " " << mode;
          continue;
        }
        const json& r = found->second;
        const std::string& cell = cells[mode == "eager" ? 0 : 1];
        if (r["status"] == "ok") {
          median[mode] = r["stats"]["median_ms"].get<double>();
          EXPECT_EQ(cell, fixed(*median[mode], 3) + marks_for(flagged[{label, t.batch, mode}]));
        } else {
          EXPECT_EQ(r["status"], "oom") << r.dump();
          EXPECT_EQ(cell, "OOM");
          ++oom_cells;
        }
      }
      if (median["eager"] && median["torchscript"]) {
        std::set<std::string> either = flagged[{label, t.batch, "eager"}];
        either.merge(std::set<std::string>(flagged[{label, t.batch, "torchscript"}]));
        EXPECT_EQ(cells[2], fixed(*median["eager"] / *median["torchscript"], 2) + "x" + marks_for(either));
      } else {
        EXPECT_EQ(cells[2], "-");
      }
    }
  }
  return oom_cells;
}

std::string dashboard_url(const std::string& output) {
  std::smatch m;
  static const std::regex dashboard(R"(Dashboard: (http://127\.0\.0\.1:\d+)/#/runs/\d+)");
  return std::regex_search(output, m, dashboard) ? std::string(m[1]) : std::string();
}

TEST(QuickStart, TwoRunsPrintTheStoredResultsWithARealOomCell) {
  TempDir tmp("benchfleet-qs");
  const fs::path& dir = tmp.path();
  const auto env = quickstart_env((dir / "state").string());
  Reaper reaper(env);

  const ScriptRun first = run_quickstart(env, (dir / "first.log").string(), {"--detach"});
  ASSERT_EQ(first.code, 0) << first.output;
  const std::string url = dashboard_url(first.output);
  ASSERT_FALSE(url.empty()) << first.output;
  std::int64_t run1 = 0;
  // ResNet-18 eager at batch 32 under the 400 MB limit: the worker really ran out of memory.
  EXPECT_EQ(expect_tables_match_store(first.output, url, run1), 1) << first.output;
  http::Client client(url);
  auto oom = client.get("/api/v1/runs/" + std::to_string(run1) +
                        "/results?status=oom&model=torchvision/resnet18&batch=32&mode=eager&samples=false");
  ASSERT_TRUE(oom.ok());
  const json oom_rows = json::parse(oom->body)["results"];
  ASSERT_EQ(oom_rows.size(), 1u) << oom->body;
  // Held by the job's memory cgroup (where the agent can make one) the kernel ended the job; held
  // as its address space, torch's allocation failed and said how much it asked for.
  const json& oom_result = oom_rows[0]["result"];
  if (oom_result["memory"].value("cap", "").rfind("cgroup", 0) == 0) {
    EXPECT_NE(oom_result.value("error", "").find("the kernel killed the job"), std::string::npos) << oom_result.dump();
  } else {
    EXPECT_EQ(oom_result["memory"].value("cap", ""), "address-space") << oom_result.dump();
    EXPECT_GT(oom_result["oom"].value("bytes_requested", std::int64_t{0}), 0) << oom_result.dump();
  }
  // The closing line with the timings (their values depend on the machine's load; no root was
  // made here, so none is said to be ready).
  EXPECT_TRUE(std::regex_search(
      first.output, std::regex(R"(\nTimings: dependencies \d+ s, build \d+ s, first table at \d+ s, all at \d+ s\n)")))
      << first.output;

  // The same command again: the running coordinator and agent are reused; a new run is measured.
  const ScriptRun second = run_quickstart(env, (dir / "second.log").string(), {"--detach"});
  ASSERT_EQ(second.code, 0) << second.output;
  EXPECT_EQ(dashboard_url(second.output), url) << "the running coordinator was reused";
  std::int64_t run2 = 0;
  EXPECT_EQ(expect_tables_match_store(second.output, url, run2), 1) << second.output;
  EXPECT_EQ(run2, run1 + 1);
  auto agents = client.get("/api/v1/agents");
  ASSERT_TRUE(agents.ok());
  EXPECT_EQ(json::parse(agents->body)["agents"].size(), 1u) << "one local agent, not a second one";

  // stop ends both services.
  const ScriptRun stop = run_quickstart(env, (dir / "stop.log").string(), {"stop"});
  EXPECT_EQ(stop.code, 0) << stop.output;
  EXPECT_NE(stop.output.find("agent stopped"), std::string::npos) << stop.output;
  EXPECT_NE(stop.output.find("coordinator stopped"), std::string::npos) << stop.output;
  EXPECT_FALSE(client.get("/healthz", {}, 2s).ok()) << "the coordinator still answers";

  if (::testing::Test::HasFailure()) tmp.keep();
}

}  // namespace
}  // namespace benchfleet::testing
