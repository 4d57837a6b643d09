// Helpers shared by the agent integration tests (agent_test.cpp, agent_fault_test.cpp): the real
// coordinator, benchfleet-agent daemons and workers (the real one and benchfleet-fault-worker) as
// processes on loopback, with tiny CPU matrices of torchvision models.
//
// Every wait is bounded (caps of 60-120 s on this 2-core box, where an export takes ~3 s); no
// test passes or fails on how fast something happened.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/agent_process.h"
#include "tests/support/coordinator_process.h"

namespace benchfleet::testing {

using nlohmann::json;
using namespace std::chrono_literals;

inline const std::string kMobilenet = "torchvision/mobilenet_v3_small";
inline const std::string kSqueezenet = "torchvision/squeezenet1_1";

// Short intervals so expiry and reconnection happen within seconds.
#define BENCHFLEET_FAST_LEASES \
  {"--lease-ttl-s", "3"}, {"--heartbeat-interval-s", "1"}, { "--long-poll-timeout-s", "2" }

// A matrix on the cpu class with a quick measurement (warm-up 1, 3 to 5 iterations).
inline json cpu_matrix(const std::vector<std::string>& models, const std::vector<int>& batches,
                       const std::vector<std::string>& modes, const std::string& build = "local",
                       std::optional<int> timeout_s = std::nullopt) {
  json m = {
      {"name", "agent-it"},
      {"models", models},
      {"batch_sizes", batches},
      {"modes", modes},
      {"torch_builds", {build}},
      {"gpus", {"cpu"}},
      {"runtimes", {"libtorch"}},
      {"measurement",
       {{"warmup", 1}, {"min_iterations", 3}, {"max_iterations", 5}, {"min_duration_s", 0}, {"max_duration_s", 5}}}};
  if (timeout_s) m["timeout_s"] = *timeout_s;
  return m;
}

// An agent of `coord` named `name`, its state in <coord dir>/agent-<name> (kept with the
// coordinator's directory when the test fails).
inline AgentOptions agent_options(const CoordinatorProcess& coord, const std::string& name,
                                  const std::string& config_file = "") {
  AgentOptions o;
  o.binary = BENCHFLEET_AGENT_BIN;
  o.name = name;
  o.coordinator_url = coord.base_url();
  o.state_dir = coord.dir() + "/agent-" + name;
  o.config_file = config_file;
  o.enrollment_token = CoordinatorProcess::kEnrollmentToken;
  return o;
}

// An agent config declaring two torch builds: `local` (the real worker) and `faulty`
// (benchfleet-fault-worker: batch 3 crashes, batch 5 hangs), with a 1 s kill grace.
inline std::string write_fault_config(const CoordinatorProcess& coord) {
  const std::string path = coord.dir() + "/agent-faulty.yaml";
  std::ofstream(path) << "kill_grace_s: 1\n"
                      << "builds:\n"
                      << "  - {name: local, python: " << BENCHFLEET_TORCH_PYTHON
                      << ", worker: " << BENCHFLEET_WORKER_BIN << "}\n"
                      << "  - {name: faulty, python: " << BENCHFLEET_TORCH_PYTHON
                      << ", worker: " << BENCHFLEET_FAULT_WORKER_BIN << "}\n";
  return path;
}

// Polls `condition` every `step` until it holds or `limit` passes; whether it held.
template <class F>
bool poll_until(F&& condition, std::chrono::milliseconds limit, std::chrono::milliseconds step = 200ms) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (true) {
    if (condition()) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(step);
  }
}

inline json agents_of(CoordinatorProcess& coord) { return coord.get_json("/api/v1/agents").at("agents"); }

// The agent named `name` in GET /api/v1/agents, or null.
inline json agent_named(CoordinatorProcess& coord, const std::string& name) {
  for (const auto& a : agents_of(coord)) {
    if (a.value("name", "") == name) return a;
  }
  return nullptr;
}

// Waits until every agent in `names` is listed online (enrolled and polling).
inline bool wait_online(CoordinatorProcess& coord, const std::vector<std::string>& names,
                        std::chrono::milliseconds limit = 60s) {
  return poll_until(
      [&] {
        for (const auto& n : names) {
          const json a = agent_named(coord, n);
          if (a.is_null() || !a.value("online", false)) return false;
        }
        return true;
      },
      limit);
}

inline json run_of(CoordinatorProcess& coord, const json& created) { return coord.get_json(run_url(created)); }

// Waits until the run's state is `state` ("done", "cancelled"); whether it got there.
inline bool wait_run_state(CoordinatorProcess& coord, const json& created, const std::string& state,
                           std::chrono::milliseconds limit = 120s) {
  return poll_until([&] { return run_of(coord, created).value("state", "") == state; }, limit, 250ms);
}

// Every result of the run (without samples).
inline std::vector<json> results_of(CoordinatorProcess& coord, const json& created) {
  const json page = coord.get_json(run_url(created) + "/results?samples=false&limit=1000");
  return page.at("results").get<std::vector<json>>();
}

// (job id, attempt) of a worker from its command line: --job <work>/job-<id>-<attempt>/job.json.
inline std::optional<std::pair<std::int64_t, int>> worker_job(pid_t worker) {
  const auto args = command_line(worker);
  for (std::size_t i = 0; i + 1 < args.size(); ++i) {
    if (args[i] != "--job") continue;
    const std::string dir = std::filesystem::path(args[i + 1]).parent_path().filename().string();
    std::int64_t job = 0;
    int attempt = 0;
    if (std::sscanf(dir.c_str(), "job-%" SCNd64 "-%d", &job, &attempt) == 2) return std::make_pair(job, attempt);
  }
  return std::nullopt;
}

// Waits until `agent` runs a worker; returns it frozen (see AgentProcess::freeze) with the job
// and attempt that worker measures, so that job is certainly neither finished nor reported
// until the agent is thawed. nullopt (agent running) when no worker showed up within `limit`.
struct RunningJob {
  pid_t worker = 0;
  std::int64_t job_id = 0;
  int attempt = 0;
};
inline std::optional<RunningJob> freeze_with_running_worker(AgentProcess& agent,
                                                            std::chrono::milliseconds limit = 90s) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (!agent.children_named("benchfleet-work").empty()) {
      agent.freeze();
      for (pid_t w : agent.children_named("benchfleet-work")) {
        if (auto job = worker_job(w)) return RunningJob{w, job->first, job->second};
      }
      agent.thaw();  // it ended just before the freeze: look again
    }
    std::this_thread::sleep_for(20ms);
  }
  return std::nullopt;
}

// The fault worker's "<pid> <helper pid>" in <state>/work/<slot>/job-*/fault-worker.pid, with
// the job id; nullopt while there is none.
struct HangingWorker {
  pid_t pid = 0;
  pid_t helper = 0;
  std::int64_t job_id = 0;
};
inline std::optional<HangingWorker> hanging_worker(const AgentProcess& agent) {
  std::error_code ec;
  for (const auto& dir : std::filesystem::recursive_directory_iterator(agent.state_dir() + "/work", ec)) {
    if (dir.path().filename() != "fault-worker.pid") continue;
    HangingWorker h;
    std::ifstream(dir.path()) >> h.pid >> h.helper;
    int attempt = 0;
    const std::string job_dir = dir.path().parent_path().filename().string();
    if (h.pid > 0 && h.helper > 0 && std::sscanf(job_dir.c_str(), "job-%" SCNd64 "-%d", &h.job_id, &attempt) == 2)
      return h;
  }
  return std::nullopt;
}

}  // namespace benchfleet::testing
