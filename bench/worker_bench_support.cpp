#include "bench/worker_bench_support.h"

#include <chrono>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <sstream>
#include <system_error>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/codecs.h"
#include "common/json_reader.h"
#include "common/measurement.h"
#include "common/stats.h"

extern char** environ;

namespace benchfleet::bench {

namespace fs = std::filesystem;

Tools default_tools() { return Tools{BENCHFLEET_BENCH_WORKER, BENCHFLEET_BENCH_PYTHON, BENCHFLEET_BENCH_SOURCE_DIR}; }

ScratchDir::ScratchDir(const std::string& requested, bool keep) : keep_(keep) {
  if (!requested.empty()) {
    path_ = fs::absolute(requested);
    fs::create_directories(path_);
    keep_ = true;
    return;
  }
  std::string pattern = (fs::temp_directory_path() / "benchfleet-bench-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) throw BenchError("mkdtemp failed for " + pattern);
  path_ = pattern;
}

ScratchDir::~ScratchDir() {
  if (keep_) return;
  std::error_code ec;
  fs::remove_all(path_, ec);
}

ProcessResult run_process(const std::vector<std::string>& argv, const fs::path& stdout_file,
                          const fs::path& stderr_file) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string out = stdout_file.string();
  const std::string err = stderr_file.string();
  if (!out.empty()) posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (!err.empty()) posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  ProcessResult r;
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw BenchError("cannot start " + argv[0] + ": " + std::generic_category().message(rc));
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) throw BenchError("waitpid failed for " + argv[0]);
  }
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

std::string load_average() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  if (!(in >> a >> b >> c)) return "?";
  return a + " " + b + " " + c;
}

std::string read_text(const fs::path& path) {
  std::ifstream in(path);
  if (!in) throw BenchError("cannot read " + path.string());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  if (!out) throw BenchError("cannot write " + path.string());
}

std::string tail_of(const fs::path& path, int lines) {
  std::ifstream in(path);
  std::deque<std::string> last;
  for (std::string line; std::getline(in, line);) {
    last.push_back(line);
    if (static_cast<int>(last.size()) > lines) last.pop_front();
  }
  std::string out;
  for (const auto& l : last) out += "    " + l + "\n";
  return out;
}

namespace {

std::string describe(const ProcessResult& r) {
  return r.signal != 0 ? "killed by signal " + std::to_string(r.signal) : "exit " + std::to_string(r.exit_code);
}

nlohmann::json read_json(const fs::path& path) {
  auto json = parse_json(read_text(path), 64);
  if (!json.ok()) throw BenchError(path.string() + ": " + json.error().describe());
  return *json;
}

}  // namespace

void run_checked(const std::string& what, const std::vector<std::string>& argv, const fs::path& dir) {
  static int counter = 0;
  const std::string step = "step" + std::to_string(++counter);
  const fs::path out = dir / (step + ".stdout");
  const fs::path log = dir / (step + ".stderr");
  const auto r = run_process(argv, out, log);
  if (r.exit_code != 0) {
    throw BenchError(what + " failed (" + describe(r) + "); stdout:\n" + tail_of(out, 5) + "  stderr:\n" +
                     tail_of(log));
  }
}

nlohmann::json export_model(const Tools& tools, const std::string& model, int batch, const std::string& format,
                            const fs::path& dir) {
  fs::create_directories(dir);
  run_checked("exporting " + model + " batch " + std::to_string(batch),
              {tools.python, tools.source_dir + "/agent/python/benchfleet_export.py", "--model", model, "--batch",
               std::to_string(batch), "--format", format, "--device", "cpu", "--out", dir.string()},
              dir);
  return read_json(dir / "metadata.json");
}

WorkerJob make_job(const nlohmann::json& metadata, const fs::path& artifact, Mode mode, int iterations, int warmup) {
  WorkerJob job;
  job.model = metadata.value("model", std::string("bench"));
  job.artifact = fs::absolute(artifact).string();
  job.format = std::string(format_for(mode));
  job.batch = metadata.value("batch", 1);
  job.mode = mode;
  job.device = "cpu";
  auto inputs = decode<std::vector<TensorSpec>>(metadata.at("inputs"), "inputs");
  if (!inputs.ok()) throw BenchError("metadata: " + inputs.error().describe());
  job.inputs = std::move(*inputs);
  job.measurement.warmup = warmup;
  job.measurement.min_iterations = iterations;
  job.measurement.max_iterations = iterations;
  job.measurement.min_duration_s = 0;
  job.measurement.max_duration_s = 86400;
  return job;
}

WorkerRun run_worker(const Tools& tools, const WorkerJob& job, const fs::path& dir, const std::string& tag) {
  const fs::path job_file = dir / (tag + ".job.json");
  const fs::path out_file = dir / (tag + ".result.json");
  const fs::path log = dir / (tag + ".stderr");
  write_text(job_file, nlohmann::json(job).dump());
  fs::remove(out_file);
  const auto p = run_process({tools.worker, "--job", job_file.string(), "--out", out_file.string()}, {}, log);
  if (!fs::exists(out_file)) {
    throw BenchError("worker (" + tag + ") wrote no result (" + describe(p) + "); stderr:\n" + tail_of(log));
  }
  auto result = decode<JobResult>(read_json(out_file), "result");
  if (!result.ok()) throw BenchError("worker (" + tag + ") result: " + result.error().describe());
  if (p.exit_code != exit_code_for(result->status)) {
    throw BenchError("worker (" + tag + ") " + describe(p) + " does not match its status " +
                     std::string(to_string(result->status)));
  }
  return WorkerRun{std::move(*result), p.wall_s};
}

void require_ok(const JobResult& result, int iterations, const std::string& what) {
  if (result.status != ResultStatus::kOk) {
    throw BenchError(what + ": status " + std::string(to_string(result.status)) + ": " + result.error.value_or(""));
  }
  if (result.samples_ms.size() != static_cast<std::size_t>(iterations)) {
    throw BenchError(what + ": " + std::to_string(result.samples_ms.size()) + " samples, expected " +
                     std::to_string(iterations));
  }
}

Summary summarize(std::span<const double> samples_ms) {
  if (samples_ms.empty()) throw BenchError("no samples");
  return Summary{median(samples_ms), mean(samples_ms)};
}

void add_worker_bench_options(CLI::App& app, WorkerBenchOptions& o, const std::string& python_needs,
                              const std::string& source_holds) {
  app.add_option("--iterations", o.iterations, "timed iterations per run")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  app.add_option("--warmup", o.warmup, "untimed warm-up calls after the first call")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  app.add_option("--worker", o.tools.worker, "benchfleet-worker binary")->capture_default_str();
  app.add_option("--python", o.tools.python, "python with " + python_needs)->capture_default_str();
  app.add_option("--source-dir", o.tools.source_dir, "repository root (" + source_holds + ")")->capture_default_str();
  app.add_option("--workdir", o.workdir, "keep the artifacts, jobs and results here (default: a removed temp dir)");
  app.add_flag("--keep", o.keep, "keep the temp dir");
}

}  // namespace benchfleet::bench
