// What the worker integration tests share (worker_measure_test.cpp, worker_job_test.cpp): the real
// benchfleet-worker process on artifacts made by the real exporter
// (agent/python/benchfleet_export.py, run with the torch build's own python).
//
// The artifacts (resnet18 and mobilenet_v3_small, batch 1 and 4, torchscript and
// torchscript-frozen; mobilenet_v3_small torchscript at batch 32 for the memory-cap sweep) are
// exported once per test binary, in parallel, into a temporary directory; it is removed at the
// end unless a test failed. CMake registers the binary as one ctest test, so the exports are not
// repeated per test case.
//
// Every worker run is checked for the process contract first: exactly one JSON line on stdout
// that decodes as a JobResult, and an exit code that mirrors its status.
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/codecs.h"
#include "common/json_reader.h"
#include "common/measurement.h"
#include "common/stats.h"
#include "common/worker_job.h"
#include "tests/support/temp_dir.h"

namespace benchfleet::testing::worker_it {

namespace fs = std::filesystem;
using nlohmann::json;

constexpr const char* kWorkerBin = BENCHFLEET_WORKER_BIN;
constexpr const char* kPython = BENCHFLEET_TORCH_PYTHON;  // a python that can import torch
constexpr const char* kSourceDir = BENCHFLEET_SOURCE_DIR;

constexpr const char* kResnet = "torchvision/resnet18";
constexpr const char* kMobilenet = "torchvision/mobilenet_v3_small";

// mobilenet_v3_small at this batch needs ~150-230 MB of address space in its first call, where
// oneDNN's JIT maps a buffer per kernel (see MemoryLimitSweepGivesOkOrOomNeverACrash).
constexpr int kCapSweepBatch = 32;

// "torchvision/resnet18" -> "resnet18"
inline std::string short_name(const std::string& model) { return fs::path(model).filename().string(); }

// ---- processes ------------------------------------------------------------------------------

inline std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

inline void write_file(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// How a finished child ended and what it wrote.
struct ProcessOutput {
  int wait_status = -1;  // as waitpid reports it
  std::string out;
  std::string err;

  bool exited() const { return wait_status >= 0 && WIFEXITED(wait_status); }
  int exit_code() const { return exited() ? WEXITSTATUS(wait_status) : -1; }
  // For failure messages: how it ended, its stdout and the end of its stderr.
  std::string describe() const {
    std::string how;
    if (wait_status < 0)
      how = "not started";
    else if (WIFEXITED(wait_status))
      how = "exit code " + std::to_string(WEXITSTATUS(wait_status));
    else if (WIFSIGNALED(wait_status))
      how = "killed by signal " + std::to_string(WTERMSIG(wait_status));
    else
      how = "wait status " + std::to_string(wait_status);
    const std::string tail = err.size() > 3000 ? "..." + err.substr(err.size() - 3000) : err;
    return how + "\n--- stdout ---\n" + out + "\n--- stderr ---\n" + tail;
  }
};

// A child started with stdin, stdout and stderr on files, and this process's environment plus
// `extra_env` ("NAME=value"). It gets SIGKILL if this process dies (a test killed by the ctest
// timeout leaves no worker or exporter behind).
class Child {
 public:
  Child(const std::vector<std::string>& argv, const fs::path& in, fs::path out, fs::path err,
        const std::vector<std::string>& extra_env = {})
      : out_(std::move(out)), err_(std::move(err)) {
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    std::vector<char*> env;
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string_view inherited = *e;
      const bool replaced = std::any_of(extra_env.begin(), extra_env.end(), [&](const std::string& x) {
        return inherited.substr(0, inherited.find('=') + 1) == x.substr(0, x.find('=') + 1);
      });
      if (!replaced) env.push_back(*e);
    }
    for (const auto& e : extra_env) env.push_back(const_cast<char*>(e.c_str()));
    env.push_back(nullptr);
    const std::string in_path = in.string(), out_path = out_.string(), err_path = err_.string();
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {  // only async-signal-safe calls from here on
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      const int fd_in = ::open(in_path.c_str(), O_RDONLY | O_CLOEXEC);
      const int fd_out = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      const int fd_err = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
      if (fd_in < 0 || fd_out < 0 || fd_err < 0) ::_exit(126);
      if (::dup2(fd_in, 0) < 0 || ::dup2(fd_out, 1) < 0 || ::dup2(fd_err, 2) < 0) ::_exit(126);
      ::execve(args[0], args.data(), env.data());
      ::_exit(127);
    }
    if (pid_ < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      wait();
    }
  }

  ProcessOutput wait() {
    ProcessOutput result;
    if (pid_ <= 0) return result;
    int status = 0;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
    result.wait_status = status;
    result.out = read_file(out_);
    result.err = read_file(err_);
    return result;
  }

 private:
  pid_t pid_ = -1;
  fs::path out_;
  fs::path err_;
};

// Starts the exporter on one model; its stdout and stderr go to files next to `out_dir`.
inline std::unique_ptr<Child> start_export(const std::string& model, const std::string& format, int batch,
                                           const fs::path& out_dir, const std::string& dtype = "float32") {
  const std::string source = kSourceDir;
  return std::make_unique<Child>(
      std::vector<std::string>{kPython, source + "/agent/python/benchfleet_export.py", "--catalog",
                               source + "/common/catalog/models.yaml", "--model", model, "--batch",
                               std::to_string(batch), "--format", format, "--device", "cpu", "--out", out_dir.string(),
                               "--dtype", dtype},
      "/dev/null", out_dir.string() + ".stdout", out_dir.string() + ".stderr");
}

// ---- the scratch directory and the exported artifacts ----------------------------------------

struct Artifact {
  std::string model;
  std::string format;
  int batch = 0;
  fs::path path;  // model.pt
  json metadata;  // what the exporter printed
};

// Owns the temporary directory and the artifacts exported into it, for the whole test binary.
class Workspace : public ::testing::Environment {
 public:
  static Workspace& get() { return *instance_; }

  const fs::path& dir() {
    if (!dir_) dir_.emplace("benchfleet-worker-test");
    return dir_->path();
  }

  // A fresh path in the directory: "<dir>/<stem>-<n><suffix>".
  fs::path fresh_path(const std::string& stem, const std::string& suffix = "") {
    return dir() / (stem + "-" + std::to_string(++counter_) + suffix);
  }

  // Exports every artifact the tests use (once per process), as many at a time as there are
  // CPUs. Failures are kept, with the exporter's output, for export_errors().
  void export_all() {
    if (exported_) return;
    exported_ = true;
    std::vector<std::tuple<std::string, std::string, int>> keys;
    for (const char* model : {kResnet, kMobilenet}) {
      for (const char* format : {"torchscript", "torchscript-frozen"}) {
        for (int batch : {1, 4}) keys.emplace_back(model, format, batch);
      }
    }
    keys.emplace_back(kMobilenet, "torchscript", kCapSweepBatch);
    std::vector<Artifact> wanted;
    for (const auto& [model, format, batch] : keys) {
      const std::string name = short_name(model) + "-" + format + "-b" + std::to_string(batch);
      wanted.push_back({model, format, batch, dir() / name / "model.pt", {}});
    }
    const std::size_t parallel = std::max(1u, std::thread::hardware_concurrency());
    for (std::size_t first = 0; first < wanted.size(); first += parallel) {
      std::vector<std::unique_ptr<Child>> wave;
      for (std::size_t i = first; i < std::min(wanted.size(), first + parallel); ++i) {
        const Artifact& a = wanted[i];
        wave.push_back(start_export(a.model, a.format, a.batch, a.path.parent_path()));
      }
      for (std::size_t i = first; i < std::min(wanted.size(), first + parallel); ++i) {
        Artifact& a = wanted[i];
        const ProcessOutput done = wave[i - first]->wait();
        const std::string what = a.model + " " + a.format + " batch " + std::to_string(a.batch);
        auto meta = parse_json(done.out);
        if (done.exit_code() != 0 || !meta.ok() || !meta->is_object() || meta->value("status", "") != "ok" ||
            !fs::exists(a.path)) {
          errors_ += "exporting " + what + " failed: " + done.describe() + "\n";
          continue;
        }
        a.metadata = *meta;
        artifacts_[{a.model, a.format, a.batch}] = a;
      }
    }
  }
  const std::string& export_errors() const { return errors_; }

  // REQUIRES: export_all() ran and export_errors() is empty.
  const Artifact& artifact(const std::string& model, const std::string& format, int batch) const {
    return artifacts_.at({model, format, batch});
  }

  void TearDown() override {
    if (dir_ && ::testing::UnitTest::GetInstance()->Failed()) {
      std::fprintf(stderr, "worker_test: kept %s for inspection\n", dir_->str().c_str());
      dir_->keep();
    }
    dir_.reset();
  }

 private:
  std::optional<TempDir> dir_;
  int counter_ = 0;
  bool exported_ = false;
  std::string errors_;
  std::map<std::tuple<std::string, std::string, int>, Artifact> artifacts_;

  static Workspace* const instance_;
};

// Registered before main() runs the tests; gtest owns it and calls TearDown at the end.
inline Workspace* const Workspace::instance_ =
    static_cast<Workspace*>(::testing::AddGlobalTestEnvironment(new Workspace));

// ---- running the worker ---------------------------------------------------------------------

// One worker process and the result it printed.
struct WorkerRun {
  ProcessOutput process;
  bool decoded = false;  // stdout was exactly one line holding a valid JobResult
  std::string decode_error;
  JobResult result;

  std::string describe() const { return decode_error + "\n" + process.describe(); }
};

// Starts the worker with these arguments (and environment additions, "NAME=value").
inline std::unique_ptr<Child> start_worker(const std::vector<std::string>& extra_args,
                                           const fs::path& stdin_path = "/dev/null",
                                           const std::vector<std::string>& extra_env = {}) {
  Workspace& ws = Workspace::get();
  std::vector<std::string> argv = {kWorkerBin};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  return std::make_unique<Child>(argv, stdin_path, ws.fresh_path("worker", ".stdout"),
                                 ws.fresh_path("worker", ".stderr"), extra_env);
}

// Waits for a worker started by start_worker and decodes what it printed.
inline WorkerRun finish_worker(Child& child) {
  WorkerRun run;
  run.process = child.wait();
  const std::string& out = run.process.out;
  if (out.empty() || out.back() != '\n' || out.find('\n') != out.size() - 1) {
    run.decode_error = "stdout is not exactly one line";
    return run;
  }
  auto parsed = parse_json(out);
  if (!parsed.ok()) {
    run.decode_error = "stdout is not JSON: " + parsed.error().describe();
    return run;
  }
  auto result = decode<JobResult>(*parsed);
  if (!result.ok()) {
    run.decode_error = "stdout is not a JobResult: " + result.error().describe();
    return run;
  }
  run.result = std::move(*result);
  run.decoded = true;
  return run;
}

inline WorkerRun run_worker_args(const std::vector<std::string>& extra_args, const fs::path& stdin_path = "/dev/null") {
  return finish_worker(*start_worker(extra_args, stdin_path));
}

// Writes a job given as JSON text to a fresh file and returns its path.
inline fs::path job_file(const std::string& job_text) {
  const fs::path job_path = Workspace::get().fresh_path("job", ".json");
  write_file(job_path, job_text);
  return job_path;
}

// Runs the worker on a job given as JSON text (through a file).
inline WorkerRun run_worker(const std::string& job_text) {
  return run_worker_args({"--job", job_file(job_text).string()});
}

// Runs the worker on each job, as many at a time as there are CPUs, with environment additions
// ("NAME=value"); the runs come back in the jobs' order.
inline std::vector<WorkerRun> run_workers(const std::vector<std::string>& job_texts,
                                          const std::vector<std::string>& extra_env = {}) {
  const std::size_t parallel = std::max(1u, std::thread::hardware_concurrency());
  std::vector<WorkerRun> runs;
  for (std::size_t first = 0; first < job_texts.size(); first += parallel) {
    std::vector<std::unique_ptr<Child>> wave;
    for (std::size_t i = first; i < std::min(job_texts.size(), first + parallel); ++i) {
      wave.push_back(start_worker({"--job", job_file(job_texts[i]).string()}, "/dev/null", extra_env));
    }
    for (auto& child : wave) runs.push_back(finish_worker(*child));
  }
  return runs;
}

inline MeasurementSpec small_measurement() {
  MeasurementSpec m;
  m.warmup = 2;
  m.min_iterations = 5;
  m.max_iterations = 20;
  m.min_duration_s = 0;
  m.max_duration_s = 10;
  return m;
}

inline std::string format_of(Mode mode) { return std::string(format_for(mode)); }

// A job for an exported artifact; the measurement is small_measurement().
inline WorkerJob job_for(const Artifact& a, Mode mode) {
  WorkerJob job;
  job.model = a.model;
  job.artifact = a.path.string();
  job.format = a.format;
  job.batch = a.batch;
  job.mode = mode;
  job.device = "cpu";
  auto inputs = decode<std::vector<TensorSpec>>(a.metadata.at("inputs"));
  if (!inputs.ok()) throw std::runtime_error("exporter inputs: " + inputs.error().describe());
  job.inputs = *inputs;
  job.measurement = small_measurement();
  job.artifact_metadata = a.metadata;
  return job;
}

// A job for an artifact that is never loaded (the worker refuses it earlier, or it is missing
// or corrupt): resnet-like inputs at batch 1.
inline WorkerJob job_without_export(Mode mode, const fs::path& artifact, const std::string& format) {
  WorkerJob job;
  job.model = kResnet;
  job.artifact = artifact.string();
  job.format = format;
  job.batch = 1;
  job.mode = mode;
  job.inputs = {TensorSpec{"pixel_values", {1, 3, 224, 224}, "float32", std::nullopt}};
  job.measurement = small_measurement();
  return job;
}

inline std::string text_of(const WorkerJob& job) { return json(job).dump(); }

// The worker's --capabilities answer (once per process).
inline const json& capabilities() {
  static const json caps = [] {
    Workspace& ws = Workspace::get();
    Child child({kWorkerBin, "--capabilities"}, "/dev/null", ws.fresh_path("caps", ".stdout"),
                ws.fresh_path("caps", ".stderr"));
    const ProcessOutput done = child.wait();
    auto parsed = parse_json(done.out);
    if (done.exit_code() != 0 || !parsed.ok()) throw std::runtime_error("--capabilities: " + done.describe());
    return *parsed;
  }();
  return caps;
}

inline bool contains(const std::optional<std::string>& text, const std::string& needle) {
  return text && text->find(needle) != std::string::npos;
}

// Asserts the run ended as `status` with its exit code, not by a signal.
inline void expect_verdict(const WorkerRun& run, ResultStatus status) {
  ASSERT_TRUE(run.decoded) << run.describe();
  EXPECT_TRUE(run.process.exited()) << run.describe();
  EXPECT_EQ(to_string(run.result.status), to_string(status)) << run.describe();
  EXPECT_EQ(run.process.exit_code(), exit_code_for(status)) << run.describe();
  if (status != ResultStatus::kOk) {
    EXPECT_FALSE(run.result.error.value_or("").empty()) << run.describe();
    EXPECT_TRUE(run.result.samples_ms.empty()) << run.describe();
    EXPECT_FALSE(run.result.stats.has_value()) << run.describe();
  }
}

// ---- fixtures -------------------------------------------------------------------------------

// Tests that need the exported artifacts.
class WorkerArtifactTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { Workspace::get().export_all(); }
  void SetUp() override { ASSERT_EQ(Workspace::get().export_errors(), ""); }

  static const Artifact& artifact(const std::string& model, Mode mode, int batch) {
    return Workspace::get().artifact(model, format_of(mode), batch);
  }

  // The worker's result for (model, mode, batch) with small_measurement(), measured once and
  // shared by the tests that look at it.
  static const WorkerRun& measured(const std::string& model, Mode mode, int batch) {
    static std::map<std::tuple<std::string, Mode, int>, WorkerRun> runs;
    const auto key = std::make_tuple(model, mode, batch);
    auto it = runs.find(key);
    if (it == runs.end()) {
      it = runs.emplace(key, run_worker(text_of(job_for(artifact(model, mode, batch), mode)))).first;
    }
    return it->second;
  }
};

}  // namespace benchfleet::testing::worker_it
