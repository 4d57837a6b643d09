// Agents under a real Slurm: a single-node cluster on loopback (slurm-cluster.sh, started
// once for this process), the real coordinator, benchfleet-slurm-launcher submitting
// benchfleet-agent allocations with sbatch, the real worker measuring torchvision models on the
// CPU. Every allocation asks for one fake `gpu:cpu` GRES and one CPU; the node has 4 CPUs, so
// only the launcher's max_allocations keeps the number of allocations down.
//
//   CpuDemoThroughLauncher: examples/cpu-demo.yaml (trimmed to 2 models x batch 1, 4: 8 jobs)
//     runs to the end on launcher-submitted allocations named slurm-bftest-<id>; the timeline
//     shows each allocation submitted, started and ended; squeue (sampled) and the timeline never
//     show more than max_allocations; nothing is submitted once the queue is empty.
//   ScancelMidJobLosesNothing: scancel of the allocation whose agent measures a job; every job
//     ends done, no crash verdict, the interrupted job was finished by a later attempt, and the
//     run's report shows every cell ok.
//   ShortTimeLimitTakesNoJobItCannotFinish: a run whose timeout_s is 600 and a class whose
//     allocations have 1 minute: the launcher submits none for it and says why; an allocation
//     submitted by hand from `benchfleet slurm-script` starts nothing, exits by itself, and Slurm
//     records COMPLETED, not TIMEOUT.
//
// The process exits 77 (skip) with the reason when not root or Slurm is not installed.
// Waits are bounded; nothing asserts how fast something happened.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <set>
#include <thread>

#include "cli/matrix_file.h"
#include "tests/slurm/slurm_support.h"
#include "tests/support/coordinator_process.h"
#include "tests/support/temp_dir.h"

namespace benchfleet::testing {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using namespace std::chrono_literals;

SlurmCluster* g_cluster = nullptr;  // set by main() for the whole process

const std::string kJobName = "benchfleet-cpu";  // the launcher's default for class cpu

template <class F>
bool poll_until(F&& condition, std::chrono::milliseconds limit, std::chrono::milliseconds step = 500ms) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(step);
  }
}

// The string member `key` of `j`, "" when missing or null (a queued job's agent is null).
std::string text_of(const json& j, const std::string& key) {
  const auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

// examples/cpu-demo.yaml as submitted by `benchfleet submit`, with fewer models and batch sizes.
json cpu_demo(const std::vector<std::string>& models, const std::vector<int>& batches) {
  auto file = cli::load_matrix_file(std::string(BENCHFLEET_SOURCE_DIR) + "/examples/cpu-demo.yaml");
  if (!file.ok()) throw std::runtime_error("examples/cpu-demo.yaml: " + file.error().message);
  json matrix = file->document.json;
  matrix["models"] = models;
  matrix["batch_sizes"] = batches;
  return matrix;
}

// Options of the launcher's one class (cpu) that the tests vary.
struct ClassOptions {
  std::string time_limit = "00:30:00";  // > cpu-demo timeout_s 600 + kill grace + margin
  int max_allocations = 2;
  int idle_exit_s = 8;
  int signal_s = 30;
};

class SlurmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    coord_ = std::make_unique<CoordinatorProcess>(std::initializer_list<CoordinatorProcess::Flag>{
        {"--lease-ttl-s", "10"}, {"--heartbeat-interval-s", "2"}, {"--long-poll-timeout-s", "5"}});
    launcher_dir_ = coord_->dir() + "/launcher";
    fs::create_directories(launcher_dir_);
  }

  void TearDown() override {
    if (launcher_) launcher_->stop();
    const bool cancelled = g_cluster->cancel_all();
    if (HasFailure()) dump_logs();
    EXPECT_TRUE(cancelled) << "jobs left in the queue\n" << g_cluster->log_tails();
    launcher_.reset();
  }

  // The agent's YAML: this coordinator, its enrolment token, the real worker as build debian12
  // (cpu-demo's name for the host's torch), per-allocation state under <coord dir>/agents.
  std::string write_agent_config() {
    std::string path = coord_->dir() + "/agent.yaml";
    std::ofstream(path) << "coordinator: " << coord_->base_url() << "\n"
                        << "enrollment_token: " << CoordinatorProcess::kEnrollmentToken << "\n"
                        << "state_dir: " << coord_->dir() << "/agents\n"
                        << "kill_grace_s: 2\n"
                        << "builds:\n"
                        << "  - {name: debian12, python: " << BENCHFLEET_TORCH_PYTHON
                        << ", worker: " << BENCHFLEET_WORKER_BIN << "}\n";
    return path;
  }

  std::string write_launcher_config(const ClassOptions& c) {
    const std::string token = coord_->dir() + "/operator.token";
    std::ofstream(token) << CoordinatorProcess::kOperatorToken << "\n";
    std::string path = coord_->dir() + "/launcher.yaml";
    std::ofstream(path) << "coordinator: " << coord_->base_url() << "\n"
                        << "api_token_file: " << token << "\n"
                        << "poll_s: 2\n"
                        << "max_submissions_per_minute: 6\n"
                        << "state_dir: " << launcher_dir_ << "\n"
                        << "classes:\n"
                        << "  - gpu_class: cpu\n"
                        << "    partition: test\n"
                        << "    gres: \"gpu:cpu:1\"\n"
                        << "    time_limit: \"" << c.time_limit << "\"\n"
                        << "    cpus_per_task: 1\n"
                        << "    max_allocations: " << c.max_allocations << "\n"
                        << "    signal_s: " << c.signal_s << "\n"
                        << "    idle_exit_s: " << c.idle_exit_s << "\n"
                        << "    agent_command: \"" << BENCHFLEET_AGENT_BIN << " --config " << write_agent_config()
                        << "\"\n";
    return path;
  }

  void start_launcher(const ClassOptions& c, std::vector<std::string> extra_args = {}) {
    launcher_ = std::make_unique<LauncherProcess>(write_launcher_config(c), coord_->dir() + "/launcher.log",
                                                  std::move(extra_args));
  }

  std::vector<json> timeline() const { return read_timeline(launcher_dir_ + "/timeline.jsonl"); }

  json run_of(const json& created) { return coord_->get_json(run_url(created)); }
  std::vector<json> jobs_of(const json& created) {
    return coord_->get_json(run_url(created) + "/jobs?limit=1000").at("jobs").get<std::vector<json>>();
  }
  std::vector<json> results_of(const json& created) {
    return coord_->get_json(run_url(created) + "/results?samples=false&limit=1000")
        .at("results")
        .get<std::vector<json>>();
  }
  bool wait_run_done(const json& created, std::chrono::milliseconds limit) {
    return poll_until([&] { return run_of(created).value("state", "") == "done"; }, limit, 1s);
  }

  // Waits until Slurm lists no allocation of the launcher's class.
  bool wait_no_allocations(std::chrono::milliseconds limit) {
    return poll_until(
        [&] {
          auto rows = g_cluster->squeue(kJobName);
          return rows && rows->empty();
        },
        limit);
  }

  // The allocation logs (<state_dir>/logs/*.out), concatenated with their names.
  std::string allocation_logs(std::size_t max_bytes_each = 4000) const {
    std::string all;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(launcher_dir_ + "/logs", ec)) {
      all += "---- " + entry.path().string() + "\n" + file_tail(entry.path().string(), max_bytes_each) + "\n";
    }
    return all;
  }

  void dump_logs() const {
    std::cerr << "---- launcher log\n"
              << (launcher_ ? launcher_->log_tail() : file_tail(coord_->dir() + "/launcher.log", 6000))
              << "\n---- timeline\n"
              << file_tail(launcher_dir_ + "/timeline.jsonl", 4000) << "\n"
              << allocation_logs() << g_cluster->log_tails();
  }

  std::unique_ptr<CoordinatorProcess> coord_;
  std::string launcher_dir_;
  std::unique_ptr<LauncherProcess> launcher_;
};

TEST_F(SlurmTest, CpuDemoThroughLauncher) {
  const ClassOptions c;  // max_allocations 2
  // (d) squeue sampled every half second for the whole run.
  std::atomic<int> most_listed{0};
  std::atomic<int> samples{0};
  std::atomic<bool> sampling{true};
  std::thread sampler([&] {
    while (sampling) {
      if (auto rows = g_cluster->squeue(kJobName)) {
        most_listed = std::max<int>(most_listed, static_cast<int>(rows->size()));
        ++samples;
      }
      std::this_thread::sleep_for(500ms);
    }
  });
  struct StopSampler {
    std::atomic<bool>& flag;
    std::thread& thread;
    ~StopSampler() {
      flag = false;
      thread.join();
    }
  } stop_sampler{sampling, sampler};

  const json created =
      coord_->submit(cpu_demo({"torchvision/mobilenet_v3_small", "torchvision/squeezenet1_1"}, {1, 4}));  // 8 jobs
  start_launcher(c);
  ASSERT_TRUE(wait_run_done(created, 300s)) << run_of(created).dump();

  // Every job done, each by an agent named after a Slurm allocation of this launcher.
  std::map<std::string, int> jobs_per_allocation;
  for (const json& job : jobs_of(created)) {
    EXPECT_EQ(job.value("status", ""), "done") << job.dump();
    const auto allocation = allocation_of_agent(text_of(job, "agent"));
    ASSERT_TRUE(allocation.has_value()) << "agent name " << text_of(job, "agent") << " is not slurm-bftest-<id>";
    ++jobs_per_allocation[*allocation];
  }
  EXPECT_EQ(run_of(created).at("jobs").value("failed", -1), 0);

  // The agents exit on their own once idle (idle_exit_s), and the launcher sees them end.
  ASSERT_TRUE(wait_no_allocations(90s)) << "allocations still listed after the run";
  std::vector<std::string> started, ended;
  ASSERT_TRUE(poll_until(
      [&] {
        const auto events = timeline();
        started = timeline_ids(events, "started");
        ended = timeline_ids(events, "ended");
        return !started.empty() && std::is_permutation(started.begin(), started.end(), ended.begin(), ended.end());
      },
      30s))
      << "started and ended allocations differ";
  const auto events = timeline();
  for (const auto& [allocation, jobs] : jobs_per_allocation) {
    EXPECT_NE(std::find(started.begin(), started.end(), allocation), started.end())
        << "allocation " << allocation << " ran " << jobs << " job(s) but the timeline has no start for it";
    std::cout << "allocation " << allocation << ": " << jobs << " job(s)\n";
  }
  int submitted_count = 0;
  for (const json& e : events) {
    if (e.value("event", "") == "submitted") submitted_count += e.value("count", 0);
    if (e.value("event", "") == "ended") {
      // An agent that exits when idle ends its allocation cleanly.
      EXPECT_EQ(e.value("state", ""), "COMPLETED") << e.dump();
    }
    std::cout << e.dump() << "\n";
  }
  EXPECT_EQ(submitted_count, static_cast<int>(started.size()));

  // Each agent read its allocation's time left from squeue (array tasks included), so its
  // deadline was known.
  const std::string logs = allocation_logs(20000);
  EXPECT_EQ(logs.find("cannot read the allocation's time left"), std::string::npos) << logs;
  for (const auto& allocation : started) {
    EXPECT_NE(logs.find("as agent slurm-bftest-" + allocation + ":"), std::string::npos) << logs;
  }
  std::size_t time_left_lines = 0;
  for (auto at = logs.find(" s left\n"); at != std::string::npos; at = logs.find(" s left\n", at + 1)) {
    ++time_left_lines;
  }
  EXPECT_GE(time_left_lines, started.size()) << logs;

  // (d) never more than max_allocations pending + running.
  EXPECT_GT(samples.load(), 0);
  EXPECT_GE(most_listed.load(), 1);
  EXPECT_LE(most_listed.load(), c.max_allocations) << "squeue listed more allocations than max_allocations";
  EXPECT_LE(max_outstanding(events), c.max_allocations) << "the timeline had more outstanding than max_allocations";

  // An empty queue submits nothing: three more reconcile periods change nothing.
  std::this_thread::sleep_for(7s);
  EXPECT_EQ(timeline_ids(timeline(), "submitted").size(), timeline_ids(events, "submitted").size());
  auto rows = g_cluster->squeue(kJobName);
  ASSERT_TRUE(rows.has_value());
  EXPECT_TRUE(rows->empty());
}

// A job of `created` in one of `statuses` on a Slurm allocation whose agent holds its lease
// (GET /api/v1/agents), as {job, its agent}, skipping the agents in `skip_agents`; polled every 200 ms up to `limit`.
// `seen` gets the last jobs and agents looked at, for a failure message.
std::optional<std::pair<json, std::string>> find_leased_job(CoordinatorProcess& coord, const json& created,
                                                            const std::set<std::string>& statuses,
                                                            const std::set<std::string>& skip_agents,
                                                            std::chrono::milliseconds limit, std::string& seen) {
  std::optional<std::pair<json, std::string>> found;
  poll_until(
      [&] {
        const json jobs = coord.get_json(run_url(created) + "/jobs?limit=1000").at("jobs");
        const json agents = coord.get_json("/api/v1/agents").at("agents");  // a loop over a temporary's member dangles
        seen = jobs.dump() + "\n" + agents.dump();
        for (const json& job : jobs) {
          const std::string agent = text_of(job, "agent");
          if (!statuses.contains(text_of(job, "status")) || !allocation_of_agent(agent) ||
              skip_agents.contains(agent)) {
            continue;
          }
          for (const json& a : agents) {
            if (text_of(a, "name") != agent) continue;
            for (const json& lease : a.value("leases", json::array())) {
              if (lease.value("job_id", std::int64_t{0}) == job.value("id", std::int64_t{-1})) {
                found = std::make_pair(job, agent);
                return true;
              }
            }
          }
        }
        return false;
      },
      limit, 200ms);
  return found;
}

TEST_F(SlurmTest, ScancelMidJobLosesNothing) {
  // 8 jobs of at least 4 s of measurement each (an export of a second or two before), so a job is
  // certainly caught in each phase.
  json matrix = cpu_demo({"torchvision/mobilenet_v3_small", "torchvision/squeezenet1_1"}, {1, 4});
  matrix["measurement"]["min_duration_s"] = 4;
  matrix["measurement"]["max_iterations"] = 5000;  // else 100 iterations end it first
  const json created = coord_->submit(matrix);
  start_launcher(ClassOptions{});

  // Two allocations cancelled: one while its job is leased (the agent exporting the model), one
  // while the worker measures (running).
  struct Victim {
    std::int64_t job = 0;
    int attempt = 0;
    std::string agent, allocation;
  };
  std::vector<Victim> victims;
  std::set<std::string> cancelled_agents;  // not picked again while Slurm is still ending them
  for (const std::string phase : {"leased", "running"}) {
    std::string seen;
    const auto found = find_leased_job(*coord_, created, {phase}, cancelled_agents, 180s, seen);
    ASSERT_TRUE(found.has_value()) << "no job seen " << phase << " on a Slurm allocation; last seen:\n" << seen;
    const Victim v{found->first.at("id"), found->first.at("attempt"), found->second,
                   *allocation_of_agent(found->second)};
    std::cout << "scancel " << v.allocation << " while its agent holds job " << v.job << " attempt " << v.attempt
              << " (" << phase << ")\n";
    ASSERT_TRUE(g_cluster->scancel(v.allocation));
    victims.push_back(v);
    cancelled_agents.insert(v.agent);
  }

  ASSERT_TRUE(wait_run_done(created, 300s)) << run_of(created).dump();
  EXPECT_EQ(run_of(created).at("jobs").value("failed", -1), 0);
  std::map<std::int64_t, json> jobs;
  for (const json& job : jobs_of(created)) {
    EXPECT_EQ(text_of(job, "status"), "done") << job.dump();
    jobs[job.at("id")] = job;
  }
  // Nothing lost: every stored verdict is ok (no crash or error from a killed worker or exporter).
  for (const json& r : results_of(created)) {
    EXPECT_EQ(r.at("result").value("status", ""), "ok") << "job " << r.value("job_id", 0) << ": " << r.dump();
  }
  // The run's report shows every cell measured, the interrupted ones too: none failed or crashed.
  const json report = coord_->get_json(run_url(created) + "/report?format=json");
  int latency_cells = 0;
  for (const json& table : report.at("tables")) {
    const json& columns = table.at("columns");
    for (const json& row : table.at("rows")) {
      const json& cells = row.at("cells");
      for (std::size_t i = 0; i < cells.size(); ++i) {
        if (text_of(columns.at(i), "kind") != "latency_ms") continue;
        ++latency_cells;
        EXPECT_EQ(text_of(cells[i], "status"), "ok")
            << text_of(row, "model") << " " << text_of(columns.at(i), "header") << ": " << cells[i].dump();
      }
    }
  }
  EXPECT_EQ(latency_cells, 8) << report.dump();
  for (const Victim& v : victims) {
    const json& job = jobs[v.job];
    EXPECT_TRUE(job.value("attempt", 0) > v.attempt || text_of(job, "agent") != v.agent)
        << "job " << v.job << " was finished by the cancelled allocation " << v.allocation << ": " << job.dump();
    for (const json& r : results_of(created)) {
      if (r.value("job_id", std::int64_t{0}) == v.job) {
        EXPECT_NE(text_of(r, "agent"), v.agent) << "the cancelled agent reported job " << v.job << ": " << r.dump();
      }
    }
    // The launcher saw the cancelled allocation end as such.
    EXPECT_TRUE(poll_until(
        [&] {
          for (const json& e : timeline()) {
            if (text_of(e, "event") == "ended" && text_of(e, "slurm_job_id") == v.allocation) {
              return text_of(e, "state") == "CANCELLED";
            }
          }
          return false;
        },
        60s))
        << "no ended/CANCELLED event for " << v.allocation;
  }
}

TEST_F(SlurmTest, ShortTimeLimitTakesNoJobItCannotFinish) {
  // One job that may take up to 600 s; the class's allocations have 1 minute.
  json matrix = cpu_demo({"torchvision/mobilenet_v3_small"}, {1});
  matrix["modes"] = {"eager"};
  matrix["timeout_s"] = 600;
  const json created = coord_->submit(matrix);
  ClassOptions c;
  c.time_limit = "1";
  c.max_allocations = 1;
  c.idle_exit_s = 300;  // so only the deadline can make it leave
  c.signal_s = 20;

  // The launcher submits nothing for it (queued_by_timeout): an allocation would start, give the
  // job back and end, over and over. It says why.
  start_launcher(c, {"--once"});
  const auto once = launcher_->wait_exit(60s);
  ASSERT_TRUE(once.has_value()) << "launcher --once did not exit";
  EXPECT_EQ(exit_code(*once), 0) << launcher_->log_tail();
  EXPECT_TRUE(timeline_ids(timeline(), "submitted").empty()) << file_tail(launcher_dir_ + "/timeline.jsonl", 4000);
  EXPECT_NE(launcher_->log_tail().find("does not fit in time_limit 1"), std::string::npos) << launcher_->log_tail();

  // An allocation submitted by hand, from the script `benchfleet slurm-script` prints for the
  // class, meets the job all the same: its agent must not start it.
  const std::string script = coord_->dir() + "/manual.sh";
  const Captured printed = capture(sh_quote(BENCHFLEET_CLI_BIN) + " slurm-script --launcher-config " +
                                   sh_quote(coord_->dir() + "/launcher.yaml") + " --class cpu >" + sh_quote(script));
  ASSERT_EQ(printed.code, 0) << printed.output;
  fs::create_directories(launcher_dir_ + "/logs");  // the script's --output directory
  const Captured submitted = capture("sbatch --parsable " + sh_quote(script));
  ASSERT_EQ(submitted.code, 0) << submitted.output;
  const std::string id = submitted.output.substr(0, submitted.output.find_first_of(";\n"));
  ASSERT_FALSE(id.empty()) << submitted.output;

  ASSERT_TRUE(wait_no_allocations(120s)) << "the 1-minute allocation is still listed";
  std::map<std::string, CompletedJob> done;
  ASSERT_TRUE(poll_until(
      [&] {
        done = g_cluster->completed_jobs();
        return done.contains(id);
      },
      20s))
      << "Slurm recorded no end for job " << id;
  EXPECT_EQ(done[id].state, "COMPLETED") << "the agent did not leave before the limit (" << done[id].state << ")";
  std::cout << "allocation " << id << ": " << done[id].start_time << " -> " << done[id].end_time << " "
            << done[id].state << "\n";

  const std::string logs = allocation_logs(20000);
  EXPECT_NE(logs.find("exiting: "), std::string::npos) << logs;
  // The job was given back untouched: still queued, nothing stored.
  for (const json& job : jobs_of(created)) EXPECT_EQ(job.value("status", ""), "queued") << job.dump();
  EXPECT_TRUE(results_of(created).empty());
}

}  // namespace
}  // namespace benchfleet::testing

// Starts the cluster once for the process (skipping with 77 when it cannot run here), then the
// tests; the cluster is stopped and removed at the end, or by its reaper if this process dies.
int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (::testing::GTEST_FLAG(list_tests)) return RUN_ALL_TESTS();
  using benchfleet::testing::capture;
  using benchfleet::testing::sh_quote;
  const auto check = capture(sh_quote(std::string(BENCHFLEET_SOURCE_DIR) + "/tests/slurm/slurm-cluster.sh") + " check");
  if (check.code == 77) {
    std::cout << check.output;
    return 77;
  }
  if (check.code != 0) {
    std::cerr << "slurm-cluster.sh check failed: " << check.output;
    return 1;
  }
  try {
    const benchfleet::testing::TempDir dir("benchfleet-slurm");  // `stop` removes it first
    benchfleet::testing::SlurmCluster cluster(dir.str());
    benchfleet::testing::g_cluster = &cluster;
    const int rc = RUN_ALL_TESTS();
    benchfleet::testing::g_cluster = nullptr;
    return rc;
  } catch (const std::exception& e) {
    std::cerr << "slurm_test: " << e.what() << "\n";
    return 1;
  }
}
