// Shared by the worker benchmarks (worker_overhead, cpp_vs_python): starting child processes
// with a wall clock around them, exporting artifacts with the torch build's python, writing
// worker jobs and reading their results. Failures throw BenchError; the benchmarks' main()
// turns that into a message and exit status 1.
#pragma once

#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "common/types.h"
#include "common/worker_job.h"

namespace benchfleet::bench {

struct BenchError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Where the benchmarks find their tools; defaults are compiled in from the build tree.
struct Tools {
  std::string worker;      // benchfleet-worker binary
  std::string python;      // a python with torch (and torchvision for the model comparison)
  std::string source_dir;  // repository root: agent/python/benchfleet_export.py, bench/torch_timing.py
};
Tools default_tools();

// What both worker benchmarks take: the timed loop's length, the tools and a kept work directory.
struct WorkerBenchOptions {
  int iterations = 0;
  int warmup = 0;
  std::string workdir;
  bool keep = false;
  Tools tools = default_tools();
};
// Adds --iterations, --warmup, --worker, --python, --source-dir, --workdir and --keep to `app`;
// `python_needs` and `source_holds` say what the benchmark wants of those two.
void add_worker_bench_options(CLI::App& app, WorkerBenchOptions& o, const std::string& python_needs,
                              const std::string& source_holds);

// A scratch directory (mkdtemp under $TMPDIR), removed on destruction unless kept.
class ScratchDir {
 public:
  // `requested` non-empty: use (and create) that directory and keep it.
  explicit ScratchDir(const std::string& requested, bool keep);
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  bool keep_ = false;
};

struct ProcessResult {
  int exit_code = -1;  // -1 when killed by a signal
  int signal = 0;
  double wall_s = 0;  // from just before posix_spawn to waitpid's return
};

// Runs argv[0] (a path, no shell) with stdout and stderr sent to the given files (empty: inherited).
// The child inherits this process's environment (set OMP_NUM_THREADS before calling).
ProcessResult run_process(const std::vector<std::string>& argv, const std::filesystem::path& stdout_file,
                          const std::filesystem::path& stderr_file);

// /proc/loadavg's first three fields ("0.52 0.61 0.70"), to print next to figures taken on a
// shared machine; "?" when unreadable.
std::string load_average();

std::string read_text(const std::filesystem::path& path);
void write_text(const std::filesystem::path& path, const std::string& text);
// The last `lines` lines of a file, for error messages.
std::string tail_of(const std::filesystem::path& path, int lines = 15);

// Runs `argv` (a python command line) and throws with its stderr tail unless it exits 0.
void run_checked(const std::string& what, const std::vector<std::string>& argv, const std::filesystem::path& dir);

// Exports catalog model `model` at `batch` as `format` into `dir` with agent/python/benchfleet_export.py
// and returns its metadata.json.
nlohmann::json export_model(const Tools& tools, const std::string& model, int batch, const std::string& format,
                            const std::filesystem::path& dir);

// A CPU job for `artifact` described by exporter-style `metadata` (its `inputs`), with a fixed
// count of `iterations` timed calls after `warmup` untimed ones (the seeds' "300 runs" shape).
WorkerJob make_job(const nlohmann::json& metadata, const std::filesystem::path& artifact, Mode mode, int iterations,
                   int warmup);

struct WorkerRun {
  JobResult result;
  double wall_s = 0;  // process start to exit, result written
};
// Writes the job to dir/<tag>.job.json, runs the worker process on it and returns its (ok) result.
WorkerRun run_worker(const Tools& tools, const WorkerJob& job, const std::filesystem::path& dir,
                     const std::string& tag);

// Throws unless the result is ok with exactly `iterations` samples.
void require_ok(const JobResult& result, int iterations, const std::string& what);

// Median and mean of samples in milliseconds.
struct Summary {
  double median_ms = 0;
  double mean_ms = 0;
};
Summary summarize(std::span<const double> samples_ms);

}  // namespace benchfleet::bench
