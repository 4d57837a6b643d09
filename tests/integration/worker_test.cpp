// Integration: the real benchfleet-worker process on artifacts made by the real exporter
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

namespace benchfleet::testing {
namespace {

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
std::string short_name(const std::string& model) { return fs::path(model).filename().string(); }

// ---- processes ------------------------------------------------------------------------------

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

void write_file(const fs::path& path, const std::string& text) {
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
std::unique_ptr<Child> start_export(const std::string& model, const std::string& format, int batch,
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
Workspace* const Workspace::instance_ = static_cast<Workspace*>(::testing::AddGlobalTestEnvironment(new Workspace));

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
std::unique_ptr<Child> start_worker(const std::vector<std::string>& extra_args,
                                    const fs::path& stdin_path = "/dev/null",
                                    const std::vector<std::string>& extra_env = {}) {
  Workspace& ws = Workspace::get();
  std::vector<std::string> argv = {kWorkerBin};
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  return std::make_unique<Child>(argv, stdin_path, ws.fresh_path("worker", ".stdout"),
                                 ws.fresh_path("worker", ".stderr"), extra_env);
}

// Waits for a worker started by start_worker and decodes what it printed.
WorkerRun finish_worker(Child& child) {
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

WorkerRun run_worker_args(const std::vector<std::string>& extra_args, const fs::path& stdin_path = "/dev/null") {
  return finish_worker(*start_worker(extra_args, stdin_path));
}

// Writes a job given as JSON text to a fresh file and returns its path.
fs::path job_file(const std::string& job_text) {
  const fs::path job_path = Workspace::get().fresh_path("job", ".json");
  write_file(job_path, job_text);
  return job_path;
}

// Runs the worker on a job given as JSON text (through a file).
WorkerRun run_worker(const std::string& job_text) { return run_worker_args({"--job", job_file(job_text).string()}); }

// Runs the worker on each job, as many at a time as there are CPUs, with environment additions
// ("NAME=value"); the runs come back in the jobs' order.
std::vector<WorkerRun> run_workers(const std::vector<std::string>& job_texts,
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

MeasurementSpec small_measurement() {
  MeasurementSpec m;
  m.warmup = 2;
  m.min_iterations = 5;
  m.max_iterations = 20;
  m.min_duration_s = 0;
  m.max_duration_s = 10;
  return m;
}

std::string format_of(Mode mode) { return std::string(format_for(mode)); }

// A job for an exported artifact; the measurement is small_measurement().
WorkerJob job_for(const Artifact& a, Mode mode) {
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
WorkerJob job_without_export(Mode mode, const fs::path& artifact, const std::string& format) {
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

std::string text_of(const WorkerJob& job) { return json(job).dump(); }

// The worker's --capabilities answer (once per process).
const json& capabilities() {
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

bool contains(const std::optional<std::string>& text, const std::string& needle) {
  return text && text->find(needle) != std::string::npos;
}

// Asserts the run ended as `status` with its exit code, not by a signal.
void expect_verdict(const WorkerRun& run, ResultStatus status) {
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

struct MeasureCase {
  const char* model;
  Mode mode;
  int batch;
};

class WorkerMeasureTest : public WorkerArtifactTest, public ::testing::WithParamInterface<MeasureCase> {};

TEST_P(WorkerMeasureTest, ReportsAConsistentResult) {
  const auto& [model, mode, batch] = GetParam();
  const Artifact& a = artifact(model, mode, batch);
  const WorkerRun& run = measured(model, mode, batch);
  ASSERT_NO_FATAL_FAILURE(expect_verdict(run, ResultStatus::kOk));
  const JobResult& r = run.result;
  EXPECT_FALSE(r.error.has_value()) << run.describe();
  EXPECT_FALSE(r.oom.has_value());

  ASSERT_TRUE(r.stats.has_value()) << run.describe();
  const Statistics& s = *r.stats;
  EXPECT_EQ(r.samples_ms.size(), static_cast<std::size_t>(s.iterations));
  EXPECT_GE(s.iterations, 5);
  EXPECT_LE(s.iterations, 20);
  for (double sample : r.samples_ms) EXPECT_GT(sample, 0);

  // The worker's statistics are compute_statistics() of its own samples: recomputed from the
  // JSON they agree exactly (JSON numbers round-trip doubles; same default seed).
  const Statistics again = compute_statistics(r.samples_ms);
  EXPECT_DOUBLE_EQ(s.mean_ms, again.mean_ms);
  EXPECT_DOUBLE_EQ(s.median_ms, again.median_ms);
  EXPECT_DOUBLE_EQ(s.p90_ms, again.p90_ms);
  EXPECT_DOUBLE_EQ(s.p99_ms, again.p99_ms);
  EXPECT_DOUBLE_EQ(s.min_ms, again.min_ms);
  EXPECT_DOUBLE_EQ(s.max_ms, again.max_ms);
  EXPECT_DOUBLE_EQ(s.stddev_ms, again.stddev_ms);
  EXPECT_DOUBLE_EQ(s.cv, again.cv);
  EXPECT_DOUBLE_EQ(s.ci_low_ms, again.ci_low_ms);
  EXPECT_DOUBLE_EQ(s.ci_high_ms, again.ci_high_ms);
  EXPECT_EQ(s.iterations, again.iterations);

  EXPECT_LE(s.min_ms, s.median_ms);
  EXPECT_LE(s.median_ms, s.max_ms);
  EXPECT_LE(s.ci_low_ms, s.median_ms);
  EXPECT_LE(s.median_ms, s.ci_high_ms);

  ASSERT_TRUE(r.stop_reason.has_value());
  EXPECT_NE(*r.stop_reason, StopReason::kFixedCount);  // min_iterations < max_iterations
  ASSERT_TRUE(r.first_call_ms.has_value());
  EXPECT_GT(*r.first_call_ms, 0);
  ASSERT_TRUE(r.load_s.has_value());
  EXPECT_GT(*r.load_s, 0);
  ASSERT_TRUE(r.export_s.has_value());  // copied from the exporter's metadata
  EXPECT_DOUBLE_EQ(*r.export_s, a.metadata.at("export_s").get<double>());

  const json& env = r.environment;
  EXPECT_EQ(env.value("torch_version", ""), capabilities().at("torch_version").get<std::string>()) << env.dump();
  EXPECT_FALSE(env.value("torch_version", "").empty()) << env.dump();
  // The worker copies the exporter's hash; its own hash of the file is the agent's to add.
  EXPECT_EQ(env.value("exporter_sha256", ""), a.metadata.at("sha256").get<std::string>()) << env.dump();
  EXPECT_FALSE(env.contains("artifact_sha256")) << env.dump();
  EXPECT_FALSE(env.value("host", "").empty()) << env.dump();
  EXPECT_EQ(env.value("device", ""), "cpu") << env.dump();
  EXPECT_EQ(env.value("format", ""), a.format) << env.dump();

  ASSERT_TRUE(r.memory.has_value());
  ASSERT_TRUE(r.memory->peak_rss_bytes.has_value());
  EXPECT_GT(*r.memory->peak_rss_bytes, 0);
}

std::vector<MeasureCase> measure_cases() {
  std::vector<MeasureCase> out;
  for (const char* model : {kResnet, kMobilenet}) {
    for (Mode mode : {Mode::kEager, Mode::kTorchscript}) {
      for (int batch : {1, 4}) out.push_back({model, mode, batch});
    }
  }
  return out;
}

std::string case_name(const std::string& model, Mode mode) {
  return short_name(model) + "_" + std::string(to_string(mode));
}

INSTANTIATE_TEST_SUITE_P(Models, WorkerMeasureTest, ::testing::ValuesIn(measure_cases()),
                         [](const ::testing::TestParamInfo<MeasureCase>& info) {
                           return case_name(info.param.model, info.param.mode) + "_batch" +
                                  std::to_string(info.param.batch);
                         });

class WorkerBatchTest : public WorkerArtifactTest,
                        public ::testing::WithParamInterface<std::tuple<const char*, Mode>> {};

// Four times the work takes longer: a comparison, not a timing threshold.
TEST_P(WorkerBatchTest, LatencyGrowsWithBatch) {
  const auto& [model, mode] = GetParam();
  const WorkerRun& one = measured(model, mode, 1);
  const WorkerRun& four = measured(model, mode, 4);
  ASSERT_TRUE(one.decoded && one.result.stats) << one.describe();
  ASSERT_TRUE(four.decoded && four.result.stats) << four.describe();
  EXPECT_GT(four.result.stats->median_ms, one.result.stats->median_ms);
}

INSTANTIATE_TEST_SUITE_P(Models, WorkerBatchTest,
                         ::testing::Combine(::testing::Values(kResnet, kMobilenet),
                                            ::testing::Values(Mode::kEager, Mode::kTorchscript)),
                         [](const ::testing::TestParamInfo<std::tuple<const char*, Mode>>& info) {
                           return case_name(std::get<0>(info.param), std::get<1>(info.param));
                         });

TEST_F(WorkerArtifactTest, FixedCountRunsExactlyThatMany) {
  WorkerJob job = job_for(artifact(kMobilenet, Mode::kEager, 1), Mode::kEager);
  job.measurement.min_iterations = 7;
  job.measurement.max_iterations = 7;
  job.measurement.max_duration_s = 120;  // the count, not the clock, ends it
  const WorkerRun run = run_worker(text_of(job));
  ASSERT_NO_FATAL_FAILURE(expect_verdict(run, ResultStatus::kOk));
  EXPECT_EQ(run.result.samples_ms.size(), 7u);
  ASSERT_TRUE(run.result.stats.has_value());
  EXPECT_EQ(run.result.stats->iterations, 7);
  EXPECT_EQ(run.result.stop_reason, StopReason::kFixedCount);
}

// A limit the model cannot fit in: the allocation fails inside LibTorch and the worker reports
// oom (exit 3) with the phase and the size of the failed allocation.
TEST_F(WorkerArtifactTest, MemoryLimitTooSmallIsAnOom) {
  WorkerJob job = job_for(artifact(kResnet, Mode::kEager, 4), Mode::kEager);
  job.memory_limit_mb = 64;
  const WorkerRun run = run_worker(text_of(job));
  ASSERT_NO_FATAL_FAILURE(expect_verdict(run, ResultStatus::kOom));
  ASSERT_TRUE(run.result.oom.has_value()) << run.describe();
  const std::string_view phase = to_string(run.result.oom->phase);
  EXPECT_TRUE(phase == "load" || phase == "compile" || phase == "warmup" || phase == "measure") << phase;
  EXPECT_TRUE(contains(run.result.error, "allocate")) << run.describe();
  if (contains(run.result.error, "tried to allocate")) {
    ASSERT_TRUE(run.result.oom->bytes_requested.has_value()) << run.describe();
    EXPECT_GT(*run.result.oom->bytes_requested, 0);
  }
  // An OOM result still carries the fingerprint, with the exporter's hash of the artifact.
  EXPECT_EQ(run.result.environment.value("exporter_sha256", ""),
            artifact(kResnet, Mode::kEager, 4).metadata.at("sha256").get<std::string>())
      << run.result.environment.dump();
}

// memory_limit_mb 1 is a valid job: the inputs cannot even be allocated (phase load). The worker
// must still print its verdict, and not die of a signal while writing it.
TEST_F(WorkerArtifactTest, TinyMemoryLimitIsAnOomNotACrash) {
  WorkerJob job = job_for(artifact(kResnet, Mode::kEager, 4), Mode::kEager);
  job.memory_limit_mb = 1;
  const WorkerRun run = run_worker(text_of(job));
  ASSERT_NO_FATAL_FAILURE(expect_verdict(run, ResultStatus::kOom));
  ASSERT_TRUE(run.result.oom.has_value()) << run.describe();
  EXPECT_EQ(run.result.oom->phase, OomPhase::kLoad);
}

// mobilenet_v3_small at batch kCapSweepBatch under each of `caps_mb`, run as eager (the traced
// graph op by op, through oneDNN's JIT kernels): every run must end in exactly one result, ok or
// oom with its phase, with the exit code to match; never a signal or a bare exit code.
void expect_every_cap_gives_ok_or_oom(const std::vector<int>& caps_mb, const std::vector<std::string>& extra_env) {
  const Artifact& a = Workspace::get().artifact(kMobilenet, "torchscript", kCapSweepBatch);
  std::vector<std::string> jobs;
  for (int mb : caps_mb) {
    WorkerJob job = job_for(a, Mode::kEager);
    job.memory_limit_mb = mb;
    jobs.push_back(text_of(job));
  }
  const std::vector<WorkerRun> runs = run_workers(jobs, extra_env);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    SCOPED_TRACE("memory_limit_mb " + std::to_string(caps_mb[i]));
    const WorkerRun& run = runs[i];
    ASSERT_TRUE(run.decoded) << run.describe();
    const ResultStatus status = run.result.status;
    ASSERT_TRUE(status == ResultStatus::kOk || status == ResultStatus::kOom) << run.describe();
    ASSERT_NO_FATAL_FAILURE(expect_verdict(run, status));
    EXPECT_EQ(run.result.oom.has_value(), status == ResultStatus::kOom) << run.describe();
  }
}

// Caps around what the first call needs, where oneDNN generates its kernels: each gets a 256 KiB
// mmap, and when that mmap failed under the cap, oneDNN wrote the kernel through the null
// pointer and the worker died of SIGSEGV (in about half of these runs, 180 MB every time).
TEST_F(WorkerArtifactTest, MemoryLimitSweepGivesOkOrOomNeverACrash) {
  std::vector<int> caps_mb;
  for (int mb = 160; mb <= 210; mb += 10) caps_mb.push_back(mb);
  expect_every_cap_gives_ok_or_oom(caps_mb, {});
}

// With more threads, libgomp started its team under the cap and, unable to map a thread's stack,
// exited the worker (code 1, no result) at these caps every time.
TEST_F(WorkerArtifactTest, MemoryLimitWithManyThreadsGivesOkOrOomNeverAnExit) {
  expect_every_cap_gives_ok_or_oom({60, 100}, {"OMP_NUM_THREADS=8"});
}

TEST_F(WorkerArtifactTest, OutFileHoldsTheResultAndStdoutStaysEmpty) {
  WorkerJob job = job_for(artifact(kMobilenet, Mode::kTorchscript, 1), Mode::kTorchscript);
  job.measurement.min_iterations = 3;
  job.measurement.max_iterations = 3;
  const fs::path job_path = Workspace::get().fresh_path("job", ".json");
  write_file(job_path, text_of(job));
  const fs::path out = Workspace::get().fresh_path("result", ".json");
  const WorkerRun run = run_worker_args({"--job", job_path.string(), "--out", out.string()});
  EXPECT_EQ(run.process.exit_code(), 0) << run.describe();
  EXPECT_EQ(run.process.out, "");
  EXPECT_FALSE(fs::exists(out.string() + ".tmp"));
  const std::string text = read_file(out);
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.find('\n'), text.size() - 1) << text;  // one line
  auto parsed = parse_json(text);
  ASSERT_TRUE(parsed.ok()) << text;
  auto result = decode<JobResult>(*parsed);
  ASSERT_TRUE(result.ok()) << result.error().describe();
  EXPECT_EQ(result->status, ResultStatus::kOk);
  EXPECT_EQ(result->samples_ms.size(), 3u);
}

// ---- jobs the worker refuses before loading anything (no export needed) ----------------------

class WorkerJobTest : public ::testing::Test {
 protected:
  static fs::path missing_artifact(const std::string& name) { return Workspace::get().fresh_path("missing") / name; }
};

TEST_F(WorkerJobTest, CompiledModesNeedAotInductorWhichLibTorchLacks) {
  if (capabilities().at("aoti").get<bool>()) GTEST_SKIP() << "this worker has AOTInductor";
  for (Mode mode : {Mode::kDefault, Mode::kMaxAutotune, Mode::kMaxAutotuneNoCudagraphs}) {
    SCOPED_TRACE(to_string(mode));
    const WorkerRun run = run_worker(text_of(job_without_export(mode, missing_artifact("model.pt2"), "aotinductor")));
    ASSERT_NO_FATAL_FAILURE(expect_verdict(run, ResultStatus::kUnsupported));
    EXPECT_TRUE(contains(run.result.error, "AOTInductor")) << run.describe();
    EXPECT_TRUE(contains(run.result.error, capabilities().at("torch_version").get<std::string>())) << run.describe();
  }
}

TEST_F(WorkerJobTest, ReduceOverheadOnCpuIsUnsupported) {
  const WorkerRun run =
      run_worker(text_of(job_without_export(Mode::kReduceOverhead, missing_artifact("model.pt2"), "aotinductor")));
  ASSERT_NO_FATAL_FAILURE(expect_verdict(run, ResultStatus::kUnsupported));
  EXPECT_TRUE(contains(run.result.error, "CUDA")) << run.describe();
}

TEST_F(WorkerJobTest, CudaDeviceWithoutCudaIsUnsupported) {
  if (capabilities().at("cuda_available").get<bool>()) GTEST_SKIP() << "this worker sees a CUDA device";
  for (Mode mode : {Mode::kEager, Mode::kTorchscript}) {
    SCOPED_TRACE(to_string(mode));
    WorkerJob job = job_without_export(mode, missing_artifact("model.pt"), format_of(mode));
    job.device = "cuda";
    const WorkerRun run = run_worker(text_of(job));
    ASSERT_NO_FATAL_FAILURE(expect_verdict(run, ResultStatus::kUnsupported));
    EXPECT_TRUE(contains(run.result.error, "CUDA")) << run.describe();
  }
}

TEST_F(WorkerJobTest, CorruptArtifactIsAnError) {
  const fs::path dir = Workspace::get().fresh_path("corrupt");
  fs::create_directories(dir);
  std::mt19937 rng(7);
  std::string bytes(64 * 1024, '\0');
  for (char& c : bytes) c = static_cast<char>(rng() & 0xff);
  write_file(dir / "model.pt", bytes);
  const WorkerRun run = run_worker(text_of(job_without_export(Mode::kEager, dir / "model.pt", "torchscript")));
  ASSERT_NO_FATAL_FAILURE(expect_verdict(run, ResultStatus::kError));
  EXPECT_FALSE(run.result.oom.has_value());
  // The fingerprint is still there (the artifact's format, no exporter's metadata to copy).
  EXPECT_EQ(run.result.environment.value("format", ""), "torchscript") << run.result.environment.dump();
  EXPECT_FALSE(run.result.environment.contains("exporter_sha256")) << run.result.environment.dump();
  EXPECT_FALSE(run.result.environment.contains("artifact_sha256")) << run.result.environment.dump();
}

TEST_F(WorkerJobTest, MissingArtifactIsAnErrorNamingIt) {
  const fs::path path = missing_artifact("model.pt");
  const WorkerRun run = run_worker(text_of(job_without_export(Mode::kEager, path, "torchscript")));
  ASSERT_NO_FATAL_FAILURE(expect_verdict(run, ResultStatus::kError));
  EXPECT_TRUE(contains(run.result.error, path.string())) << run.describe();
}

TEST_F(WorkerJobTest, NotJsonIsAnError) {
  const fs::path job_path = Workspace::get().fresh_path("job", ".txt");
  write_file(job_path, "this is not { json");
  const WorkerRun run = run_worker_args({"--job", "-"}, job_path);  // through stdin
  ASSERT_NO_FATAL_FAILURE(expect_verdict(run, ResultStatus::kError));
  EXPECT_EQ(run.result.error.value_or("").rfind("job: ", 0), 0u) << run.describe();
}

TEST_F(WorkerJobTest, UnreadableJobFileIsAnErrorNamingIt) {
  const fs::path path = Workspace::get().fresh_path("no-such-job", ".json");
  const WorkerRun run = run_worker_args({"--job", path.string()});
  ASSERT_NO_FATAL_FAILURE(expect_verdict(run, ResultStatus::kError));
  EXPECT_TRUE(contains(run.result.error, path.string())) << run.describe();
}

TEST_F(WorkerJobTest, BatchZeroIsAnErrorNamingBatch) {
  json job = job_without_export(Mode::kEager, missing_artifact("model.pt"), "torchscript");
  job["batch"] = 0;
  const WorkerRun run = run_worker(job.dump());
  ASSERT_NO_FATAL_FAILURE(expect_verdict(run, ResultStatus::kError));
  EXPECT_TRUE(contains(run.result.error, "batch")) << run.describe();
}

TEST_F(WorkerJobTest, WrongFormatForTheModeIsAnErrorNamingFormat) {
  const WorkerRun run =
      run_worker(text_of(job_without_export(Mode::kEager, missing_artifact("model.pt"), "torchscript-frozen")));
  ASSERT_NO_FATAL_FAILURE(expect_verdict(run, ResultStatus::kError));
  EXPECT_TRUE(contains(run.result.error, "format")) << run.describe();
  EXPECT_TRUE(contains(run.result.error, "torchscript-frozen")) << run.describe();
}

TEST_F(WorkerJobTest, UnknownFieldIsAnErrorNamingIt) {
  json job = job_without_export(Mode::kEager, missing_artifact("model.pt"), "torchscript");
  job["warmup_iterations"] = 3;
  const WorkerRun run = run_worker(job.dump());
  ASSERT_NO_FATAL_FAILURE(expect_verdict(run, ResultStatus::kError));
  EXPECT_TRUE(contains(run.result.error, "warmup_iterations")) << run.describe();
}

// A python-runtime job is benchfleet_runner.py's: the worker refuses it rather than measuring
// something else, naming the field.
TEST_F(WorkerJobTest, PythonRuntimeJobIsAnErrorNamingRuntime) {
  WorkerJob job = job_without_export(Mode::kEager, missing_artifact("model.pt"), "torchscript");
  job.runtime = Runtime::kPython;
  const WorkerRun run = run_worker(text_of(job));
  ASSERT_NO_FATAL_FAILURE(expect_verdict(run, ResultStatus::kError));
  EXPECT_TRUE(contains(run.result.error, "runtime")) << run.describe();
  EXPECT_TRUE(contains(run.result.error, "benchfleet_runner.py")) << run.describe();
}

// The same result either way; with --out, stdout stays empty. (An invalid job gives a result
// without timings, so the two runs can be compared byte for byte.)
TEST_F(WorkerJobTest, OutFileHoldsWhatStdoutWouldHave) {
  json job = job_without_export(Mode::kEager, missing_artifact("model.pt"), "torchscript");
  job["batch"] = 0;
  const fs::path job_path = Workspace::get().fresh_path("job", ".json");
  write_file(job_path, job.dump());
  const WorkerRun to_stdout = run_worker_args({"--job", job_path.string()});
  ASSERT_TRUE(to_stdout.decoded) << to_stdout.describe();

  const fs::path out = Workspace::get().fresh_path("result", ".json");
  const WorkerRun to_file = run_worker_args({"--job", job_path.string(), "--out", out.string()});
  EXPECT_EQ(to_file.process.exit_code(), to_stdout.process.exit_code()) << to_file.describe();
  EXPECT_EQ(to_file.process.out, "");
  EXPECT_EQ(read_file(out), to_stdout.process.out);
  EXPECT_FALSE(fs::exists(out.string() + ".tmp"));
}

TEST_F(WorkerJobTest, CapabilitiesOfThisBuild) {
  const json& caps = capabilities();
  ASSERT_TRUE(caps.contains("modes")) << caps.dump();
  EXPECT_FALSE(caps.value("torch_version", "").empty()) << caps.dump();
  const json cpu = caps["modes"].value("cpu", json::array());
  EXPECT_NE(std::find(cpu.begin(), cpu.end(), "eager"), cpu.end()) << caps.dump();
  EXPECT_NE(std::find(cpu.begin(), cpu.end(), "torchscript"), cpu.end()) << caps.dump();
  EXPECT_EQ(std::find(cpu.begin(), cpu.end(), "reduce-overhead"), cpu.end()) << caps.dump();  // CUDA graphs
  if (!caps.at("aoti").get<bool>()) {
    EXPECT_EQ(cpu, json({"eager", "torchscript"})) << caps.dump();
  }
  if (!caps.at("cuda_available").get<bool>()) {
    EXPECT_EQ(caps["modes"].at("cuda"), json::array()) << caps.dump();
  }
  // This host: Debian's CPU LibTorch 1.13.
  if (caps.value("torch_version", "").rfind("1.", 0) == 0) {
    EXPECT_FALSE(caps.at("aoti").get<bool>());
    EXPECT_EQ(caps["modes"].at("cpu"), json({"eager", "torchscript"}));
    EXPECT_EQ(caps["modes"].at("cuda"), json::array());
  }
}

// ---- dtypes ------------------------------------------------------------------------

class WorkerDtypeTest : public ::testing::Test {
 protected:
  // mobilenet_v3_small exported in bfloat16 at batch 1 (once per process); bfloat16 convolutions
  // run on the CPU in LibTorch 1.13 and 2.x.
  static const Artifact& bfloat16_artifact() {
    static const Artifact a = [] {
      const fs::path out = Workspace::get().fresh_path("mobilenet-bfloat16");
      const ProcessOutput done = start_export(kMobilenet, "torchscript", 1, out, "bfloat16")->wait();
      auto meta = parse_json(done.out);
      if (done.exit_code() != 0 || !meta.ok()) throw std::runtime_error("bfloat16 export: " + done.describe());
      return Artifact{kMobilenet, "torchscript", 1, out / "model.pt", *meta};
    }();
    return a;
  }
  static WorkerJob bfloat16_job() {
    WorkerJob job = job_for(bfloat16_artifact(), Mode::kEager);
    job.dtype = Dtype::kBfloat16;
    return job;
  }
};

TEST_F(WorkerDtypeTest, ABfloat16ArtifactIsMeasuredInBfloat16) {
  const WorkerJob job = bfloat16_job();
  ASSERT_EQ(job.inputs.at(0).dtype, "bfloat16");  // the worker makes its inputs in the exporter's dtype
  const WorkerRun run = run_worker(text_of(job));
  ASSERT_NO_FATAL_FAILURE(expect_verdict(run, ResultStatus::kOk));
  EXPECT_GT(run.result.stats->median_ms, 0.0);
  EXPECT_FALSE(run.result.accuracy.has_value()) << run.describe();  // eager: nothing compiled to judge
}

TEST_F(WorkerDtypeTest, AJobOfAnotherDtypeThanItsArtifactIsAnError) {
  WorkerJob job = bfloat16_job();
  job.dtype = Dtype::kFloat32;
  const WorkerRun run = run_worker(text_of(job));
  ASSERT_NO_FATAL_FAILURE(expect_verdict(run, ResultStatus::kError));
  EXPECT_TRUE(contains(run.result.error, "dtype: is float32, but the artifact was exported in bfloat16"))
      << run.describe();
}

TEST_F(WorkerDtypeTest, AmpIsThePythonRuntimesAlone) {
  WorkerJob job = bfloat16_job();
  job.dtype = Dtype::kAmp;
  job.artifact_metadata.erase("dtype");
  const WorkerRun run = run_worker(text_of(job));
  ASSERT_NO_FATAL_FAILURE(expect_verdict(run, ResultStatus::kUnsupported));
  EXPECT_TRUE(contains(run.result.error, "python runtime only")) << run.describe();
}

// A kernel without the job's dtype ("slow_conv2d_cpu" not implemented for 'Half' in LibTorch
// 1.13) makes the job unsupported with LibTorch's line, not an error. The exporter cannot trace a
// float16 model where the kernel is missing, so the bfloat16 module is converted to float16.
TEST_F(WorkerDtypeTest, AKernelWithoutTheDtypeMakesTheJobUnsupported) {
  if (capabilities().value("torch_version", "").rfind("1.", 0) != 0) {
    GTEST_SKIP() << "LibTorch " << capabilities().value("torch_version", "") << " has CPU float16 convolutions";
  }
  Workspace& ws = Workspace::get();
  const fs::path half = ws.fresh_path("mobilenet-float16", ".pt");
  const ProcessOutput converted =
      Child({kPython, "-c",
             "import sys, torch; m = torch.jit.load(sys.argv[1]); m.half(); torch.jit.save(m, sys.argv[2])",
             bfloat16_artifact().path.string(), half.string()},
            "/dev/null", ws.fresh_path("half", ".stdout"), ws.fresh_path("half", ".stderr"))
          .wait();
  ASSERT_EQ(converted.exit_code(), 0) << converted.describe();
  WorkerJob job = bfloat16_job();
  job.artifact = half.string();
  job.dtype = Dtype::kFloat16;
  job.artifact_metadata["dtype"] = "float16";
  job.artifact_metadata.erase("outputs");
  for (auto& input : job.inputs) input.dtype = "float16";
  const WorkerRun run = run_worker(text_of(job));
  ASSERT_NO_FATAL_FAILURE(expect_verdict(run, ResultStatus::kUnsupported));
  EXPECT_TRUE(contains(run.result.error, "float16 on cpu is not supported by this LibTorch")) << run.describe();
  EXPECT_TRUE(contains(run.result.error, "not implemented for 'Half'")) << run.describe();
}

// The exporter and the worker agree: neither makes nor runs AOTInductor packages here.
TEST_F(WorkerJobTest, ExporterAndWorkerAgreeOnAotInductor) {
  if (capabilities().at("aoti").get<bool>()) GTEST_SKIP() << "this worker has AOTInductor";
  Workspace& ws = Workspace::get();
  const fs::path out = ws.fresh_path("aoti");
  const ProcessOutput exported = start_export(kResnet, "aotinductor", 1, out)->wait();
  EXPECT_EQ(exported.exit_code(), 4) << exported.describe();
  auto meta = parse_json(exported.out);
  ASSERT_TRUE(meta.ok()) << exported.describe();
  EXPECT_EQ(meta->value("status", ""), "unsupported") << exported.describe();
  EXPECT_FALSE(fs::exists(out / "model.pt2"));

  const WorkerRun run = run_worker(text_of(job_without_export(Mode::kDefault, out / "model.pt2", "aotinductor")));
  ASSERT_NO_FATAL_FAILURE(expect_verdict(run, ResultStatus::kUnsupported));
}

}  // namespace
}  // namespace benchfleet::testing
