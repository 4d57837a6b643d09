// benchfleet-fault-worker: a test-only stand-in for benchfleet-worker that fails on demand.
// Same command line as the real worker (--job FILE [--out FILE] | --capabilities). It reads the
// job file and, by the job's batch size:
//   batch 3: writes a line to stderr and raises SIGSEGV on itself (no core dump): a crash;
//   batch 5: hangs: writes "<pid> <helper pid>" to fault-worker.pid beside the job file, forks a
//            helper into its own process group, and both sleep ignoring SIGTERM, so only a
//            SIGKILL of the group ends them (each also leaves by itself once orphaned, or after
//            10 minutes, so a killed test leaves nothing behind);
//   batch 7: hangs like batch 5 but outlives its agent (a kill -9 of the agent leaves it, as an
//            orphan on the GPU, for the next agent to find), for at most 2 minutes;
//   batch 9: writes a malformed result file (wrong types) and exits 0;
//   batch 11: writes a well-formed "ok" result whose statistics the samples do not give (a mean
//            of 2.5 for samples whose mean is 2), which the coordinator's checks refuse, and exits 0;
//   batch 13: writes a consistent "ok" result of 200,000 samples (each 2.0 ms; ~800 kB), for a
//            coordinator whose max_body_bytes is smaller, and exits 0;
//   anything else (and --capabilities, and an unreadable job): execs the real worker
//            (BENCHFLEET_REAL_WORKER_BIN) with the same arguments.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

constexpr int kCrashBatch = 3;
constexpr int kHangBatch = 5;
constexpr int kOrphanBatch = 7;
constexpr int kMalformedResultBatch = 9;
constexpr int kInconsistentResultBatch = 11;
constexpr int kBigResultBatch = 13;
constexpr auto kOrphanLimit = std::chrono::minutes(2);
constexpr auto kHangLimit = std::chrono::minutes(10);

[[noreturn]] void exec_real_worker(int argc, char** argv) {
  std::vector<char*> args(argv, argv + argc);
  args[0] = const_cast<char*>(BENCHFLEET_REAL_WORKER_BIN);
  args.push_back(nullptr);
  ::execv(args[0], args.data());
  std::fprintf(stderr, "benchfleet-fault-worker: cannot exec %s: %s\n", args[0], std::strerror(errno));
  ::_exit(1);
}

// Sleeps until orphaned (the parent that started us is gone) or the limit passes.
[[noreturn]] void hang(pid_t parent) {
  const auto deadline = std::chrono::steady_clock::now() + kHangLimit;
  while (::getppid() == parent && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::_exit(7);
}

}  // namespace

int main(int argc, char** argv) {
  std::string job_path;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--job") == 0) job_path = argv[i + 1];
  }
  if (job_path.empty() || job_path == "-") exec_real_worker(argc, argv);
  std::ifstream in(job_path);
  std::stringstream text;
  text << in.rdbuf();
  const auto job = nlohmann::json::parse(text.str(), nullptr, false);
  if (!job.is_object() || !job.contains("batch") || !job["batch"].is_number_integer()) exec_real_worker(argc, argv);
  const int batch = job["batch"].get<int>();
  const std::string model = job.value("model", "?");

  if (batch == kCrashBatch) {
    std::fprintf(stderr, "benchfleet-fault-worker: %s batch %d: crashing with SIGSEGV on purpose\n", model.c_str(),
                 batch);
    std::fflush(stderr);
    ::prctl(PR_SET_DUMPABLE, 0);  // no core dump
    ::signal(SIGSEGV, SIG_DFL);
    ::raise(SIGSEGV);
    return 1;  // not reached
  }
  if (batch == kMalformedResultBatch || batch == kInconsistentResultBatch || batch == kBigResultBatch) {
    std::string out_path;
    for (int i = 1; i + 1 < argc; ++i) {
      if (std::strcmp(argv[i], "--out") == 0) out_path = argv[i + 1];
    }
    if (batch == kMalformedResultBatch) {
      std::ofstream(out_path) << R"({"status": "ok", "stats": {"mean_ms": "fast"}, "samples_ms": "many"})";
    } else if (batch == kBigResultBatch) {
      constexpr int kSamples = 200'000;
      nlohmann::json result = {{"status", "ok"},
                               {"samples_ms", std::vector<double>(kSamples, 2.0)},
                               {"stop_reason", "max_time"},
                               {"stats",
                                {{"mean_ms", 2.0},
                                 {"median_ms", 2.0},
                                 {"p90_ms", 2.0},
                                 {"p99_ms", 2.0},
                                 {"min_ms", 2.0},
                                 {"max_ms", 2.0},
                                 {"stddev_ms", 0.0},
                                 {"cv", 0.0},
                                 {"ci_low_ms", 2.0},
                                 {"ci_high_ms", 2.0},
                                 {"iterations", kSamples}}},
                               {"environment", nlohmann::json::object()},
                               {"telemetry", nlohmann::json::object()}};
      std::ofstream(out_path) << result.dump();
    } else {
      // Samples 1, 2, 3 ms: mean 2; the stats claim 2.5. Everything else is what they give.
      std::ofstream(out_path) << R"({"status": "ok", "samples_ms": [1.0, 2.0, 3.0], "stop_reason": "max_time",)"
                              << R"( "stats": {"mean_ms": 2.5, "median_ms": 2.0, "p90_ms": 2.8, "p99_ms": 2.98,)"
                              << R"( "min_ms": 1.0, "max_ms": 3.0, "stddev_ms": 1.0, "cv": 0.5, "ci_low_ms": 1.0,)"
                              << R"( "ci_high_ms": 3.0, "iterations": 3}, "environment": {}, "telemetry": {}})";
    }
    return 0;
  }
  if (batch == kHangBatch || batch == kOrphanBatch) {
    const bool outlive = batch == kOrphanBatch;
    ::signal(SIGTERM, SIG_IGN);  // inherited by the helper
    const pid_t self = ::getpid();
    const pid_t parent = outlive ? 0 : ::getppid();
    const pid_t helper = ::fork();
    if (helper == 0) {
      if (outlive) {
        std::this_thread::sleep_for(kOrphanLimit);
        ::_exit(7);
      }
      hang(self);
    }
    const std::string pid_file = (std::filesystem::path(job_path).parent_path() / "fault-worker.pid").string();
    { std::ofstream(pid_file + ".tmp") << self << " " << helper << "\n"; }
    std::rename((pid_file + ".tmp").c_str(), pid_file.c_str());
    std::fprintf(stderr, "benchfleet-fault-worker: %s batch %d: hanging on purpose (pid %d, helper %d)\n",
                 model.c_str(), batch, static_cast<int>(self), static_cast<int>(helper));
    std::fflush(stderr);
    if (outlive) {
      std::this_thread::sleep_for(kOrphanLimit);
      ::_exit(7);
    }
    hang(parent);
  }
  exec_real_worker(argc, argv);
}
