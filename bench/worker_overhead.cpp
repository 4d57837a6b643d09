// worker_overhead: what the worker's harness adds to each timed iteration, and what a worker
// process costs from spawn to result. Prints figures; it is not a timed test.
//
// A trivial TorchScript module (x + 1 on a [1, 8] tensor, exported at run time with the torch
// build's python) runs `--iterations` timed calls after `--warmup` untimed ones, `--runs` times, as:
//   (b) a bare loop in this process: torch::jit::load, graph executor optimisation off (the
//       worker's eager mode), forward timed with steady_clock around each call;
//   (c) benchfleet::worker::run_job in this process (the worker library: runner, timer,
//       StoppingRule, statistics);
//   (a) the benchfleet-worker binary, spawned with a job file (what the agent does).
// The per-iteration difference to (b) is the harness overhead inside the timed region; the
// loop wall time per iteration also counts what happens between timed calls.
#include <CLI/CLI.hpp>

#include <torch/csrc/jit/runtime/graph_executor.h>
#include <torch/script.h>
#include <torch/torch.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "agent/worker/capabilities.h"
#include "agent/worker/measure.h"
#include "bench/worker_bench_support.h"
#include "common/stats.h"

namespace {

using namespace benchfleet;
using namespace benchfleet::bench;
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Options : WorkerBenchOptions {
  int runs = 5;
  int threads = 1;
  Options() {
    iterations = 1000;
    warmup = 50;
  }
};

// One run of one variant: its samples and the wall time of the whole timed loop.
struct RunFigures {
  double median_ms = 0;
  double mean_ms = 0;
  double loop_ms_per_iteration = 0;
  // Loop wall time per iteration minus the mean sample: the work between timed calls.
  double between_ms() const { return loop_ms_per_iteration - mean_ms; }
};

struct Variant {
  std::string name;
  std::vector<RunFigures> runs;
  void add(std::span<const double> samples, double loop_ms_per_iteration) {
    const Summary s = summarize(samples);
    runs.push_back({s.median_ms, s.mean_ms, loop_ms_per_iteration});
  }
  std::vector<double> column(double RunFigures::*field) const {
    std::vector<double> v;
    for (const auto& r : runs) v.push_back(r.*field);
    return v;
  }
  double median_us() const { return median(column(&RunFigures::median_ms)) * 1000; }
  double between_us() const {
    std::vector<double> v;
    for (const auto& r : runs) v.push_back(r.between_ms());
    return median(v) * 1000;
  }
};

// (b): nothing but load, first call, warm-up and the timed calls.
RunFigures bare_loop(const fs::path& artifact, int iterations, int warmup) {
  torch::jit::setGraphExecutorOptimize(false);
  torch::jit::Module module = torch::jit::load(artifact.string());
  module.eval();
  torch::manual_seed(0);
  std::vector<torch::jit::IValue> inputs{torch::randn({1, 8})};
  torch::NoGradGuard no_grad;
  (void)module.forward(inputs);
  for (int i = 0; i < warmup; ++i) (void)module.forward(inputs);
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(iterations));
  const auto loop_start = Clock::now();
  for (int i = 0; i < iterations; ++i) {
    const auto t0 = Clock::now();
    (void)module.forward(inputs);
    const auto t1 = Clock::now();
    samples.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  const double loop_ms = std::chrono::duration<double, std::milli>(Clock::now() - loop_start).count();
  const Summary s = summarize(samples);
  return {s.median_ms, s.mean_ms, loop_ms / iterations};
}

double host_ms_per_iteration(const JobResult& r) {
  auto it = r.telemetry.find("host_ms_per_iteration");
  if (it == r.telemetry.end() || !it->is_number()) throw BenchError("result has no telemetry.host_ms_per_iteration");
  return it->get<double>();
}

void print_variant(const Variant& v) {
  const auto medians = v.column(&RunFigures::median_ms);
  const auto [lo, hi] = std::minmax_element(medians.begin(), medians.end());
  std::printf("  %-44s %9.2f   %8.2f..%-8.2f %9.2f %10.2f %8.2f\n", v.name.c_str(), v.median_us(), *lo * 1000,
              *hi * 1000, median(v.column(&RunFigures::mean_ms)) * 1000,
              median(v.column(&RunFigures::loop_ms_per_iteration)) * 1000, v.between_us());
}

struct ProcessFigures {
  double wall_ms = 0, load_ms = 0, first_ms = 0, measure_ms = 0;
};

int run(const Options& o) {
  // The same intra-op thread count everywhere: this process, and the children through the env.
  const std::string threads = std::to_string(o.threads);
  ::setenv("OMP_NUM_THREADS", threads.c_str(), 1);
  ::setenv("MKL_NUM_THREADS", threads.c_str(), 1);
  at::set_num_threads(o.threads);

  ScratchDir dir(o.workdir, o.keep);
  const fs::path model_dir = dir.path() / "trivial";
  run_checked(
      "exporting the trivial module",
      {o.tools.python, o.tools.source_dir + "/bench/torch_timing.py", "export-trivial", "--out", model_dir.string()},
      dir.path());
  const auto metadata = nlohmann::json::parse(read_text(model_dir / "metadata.json"));
  const WorkerJob job = make_job(metadata, model_dir / "model.pt", Mode::kEager, o.iterations, o.warmup);
  const worker::Capabilities caps = worker::this_build();

  std::printf("worker_overhead: trivial TorchScript module (x + 1 on [1, 8]), worker mode eager\n");
  std::printf(
      "  LibTorch %s, %d intra-op thread(s) (at::get_num_threads here: %d), %d timed iterations after "
      "%d warm-up, %d runs\n  worker: %s\n  scratch: %s\n  load average: %s\n\n",
      caps.torch_version.c_str(), o.threads, at::get_num_threads(), o.iterations, o.warmup, o.runs,
      o.tools.worker.c_str(), dir.path().c_str(), load_average().c_str());

  Variant bare{"(b) bare loop in-process (jit::load+forward)", {}};
  Variant lib{"(c) worker::run_job in-process", {}};
  Variant proc{"(a) benchfleet-worker process", {}};
  std::vector<ProcessFigures> walls;
  std::vector<double> startup_ms;
  for (int r = 0; r < o.runs; ++r) {
    // Process start + LibTorch's dynamic loading and static init, no model.
    const auto p = run_process({o.tools.worker, "--capabilities"}, dir.path() / "capabilities.json",
                               dir.path() / "capabilities.stderr");
    if (p.exit_code != 0) throw BenchError("benchfleet-worker --capabilities failed");
    startup_ms.push_back(p.wall_s * 1000);

    const auto w = run_worker(o.tools, job, dir.path(), "run" + std::to_string(r));
    require_ok(w.result, o.iterations, "worker process");
    const auto env_threads = w.result.environment.find("cpu_threads");
    if (env_threads == w.result.environment.end() || *env_threads != o.threads) {
      throw BenchError("the worker ran with cpu_threads " +
                       (env_threads == w.result.environment.end() ? "?" : env_threads->dump()) + ", not " + threads);
    }
    proc.add(w.result.samples_ms, host_ms_per_iteration(w.result));
    walls.push_back({w.wall_s * 1000, w.result.load_s.value_or(0) * 1000, w.result.first_call_ms.value_or(0),
                     host_ms_per_iteration(w.result) * o.iterations});

    bare.runs.push_back(bare_loop(model_dir / "model.pt", o.iterations, o.warmup));

    const JobResult in_process = worker::run_job(job, caps, [](std::string_view, std::size_t, double) {});
    require_ok(in_process, o.iterations, "run_job in-process");
    lib.add(in_process.samples_ms, host_ms_per_iteration(in_process));
  }

  std::printf(
      "per-iteration time (us; median and min..max over runs of each run's median; medians over runs of:\n"
      "the run's mean, its loop wall time / iterations, and that minus the mean = work between timed calls)\n");
  std::printf("  %-44s %9s   %-18s %9s %10s %8s\n", "variant", "median", "min..max", "mean", "wall/iter", "between");
  print_variant(bare);
  print_variant(lib);
  print_variant(proc);
  const double b = bare.median_us();
  std::printf("\nharness overhead per iteration (vs (b), medians of run medians):\n");
  std::printf("  inside the timed region: run_job %+.2f us, worker process %+.2f us\n", lib.median_us() - b,
              proc.median_us() - b);
  const auto fastest = [](const Variant& v) {
    const auto m = v.column(&RunFigures::median_ms);
    return *std::min_element(m.begin(), m.end()) * 1000;
  };
  std::printf("  inside, fastest runs:    run_job %+.2f us, worker process %+.2f us (least disturbed by other load)\n",
              fastest(lib) - fastest(bare), fastest(proc) - fastest(bare));
  std::printf("  between timed calls:     run_job %+.2f us, worker process %+.2f us\n",
              lib.between_us() - bare.between_us(), proc.between_us() - bare.between_us());

  std::printf("\nworker process, spawn to exit with the result written (ms):\n");
  std::printf("  %-4s %9s %9s %11s %11s %9s\n", "run", "wall", "load", "first call", "measure", "rest");
  std::vector<double> wall_col;
  for (std::size_t i = 0; i < walls.size(); ++i) {
    const auto& w = walls[i];
    const double rest = w.wall_ms - w.load_ms - w.first_ms - w.measure_ms;
    std::printf("  %-4zu %9.1f %9.2f %11.3f %11.2f %9.1f\n", i, w.wall_ms, w.load_ms, w.first_ms, w.measure_ms, rest);
    wall_col.push_back(w.wall_ms);
  }
  std::printf("  median wall %.1f ms; rest = exec + LibTorch init + inputs + warm-up + fingerprint + JSON + exit\n",
              median(wall_col));
  std::printf("  `benchfleet-worker --capabilities` (exec + LibTorch load, no model): median %.1f ms over %d runs\n",
              median(startup_ms), o.runs);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "worker_overhead: the benchfleet worker's per-iteration harness overhead on a trivial TorchScript\n"
      "module, (a) worker process vs (b) a bare in-process loop vs (c) the worker library in-process,\n"
      "and the worker process's start-to-result wall time. Prints figures; exits 1 if any step fails."};
  Options o;
  app.add_option("--runs", o.runs, "runs of each variant (and worker processes)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_option("--threads", o.threads, "intra-op threads for every variant (OMP_NUM_THREADS for the worker)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  add_worker_bench_options(app, o, "torch, to export the module", "bench/torch_timing.py");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "worker_overhead: %s\n", e.what());
    return 1;
  }
}
