// cpp_vs_python: the C++ worker versus Python on the same TorchScript artifact and batch, and
// versus the seeds' method (the torchvision nn.Module run eagerly from Python). Prints a table;
// it is not a timed test.
//
// For each model and batch: export a `torchscript` artifact (agent/python/benchfleet_export.py),
// then, one process each and `--rounds` times (the runners take turns going first):
//   worker eager:      benchfleet-worker, mode eager (graph executor optimisation off)
//   python jit:        torch.jit.load of the same artifact, torch._C._set_graph_executor_optimize(False)
//   python nn.Module:  the catalog's nn.Module, same seed (same weights), run eagerly
// all under no_grad, with the same intra-op thread count, a first call, `--warmup` untimed calls
// and `--iterations` calls each timed by a steady clock (time.perf_counter in Python).
#include <CLI/CLI.hpp>

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "bench/worker_bench_support.h"
#include "common/json_reader.h"
#include "common/stats.h"

namespace {

using namespace benchfleet;
using namespace benchfleet::bench;
namespace fs = std::filesystem;

struct Options : WorkerBenchOptions {
  std::vector<std::string> models = {"torchvision/resnet18", "torchvision/mobilenet_v3_small"};
  std::vector<int> batches = {1, 8};
  int rounds = 1;
  int threads = 0;  // 0: LibTorch's default in this process
  Options() {
    iterations = 30;
    warmup = 10;
  }
};

// One runner's figures for one model and batch, over the rounds.
struct Figures {
  std::vector<double> medians_ms, means_ms, first_call_ms;
  void add(std::span<const double> samples, double first_ms) {
    const Summary s = summarize(samples);
    medians_ms.push_back(s.median_ms);
    means_ms.push_back(s.mean_ms);
    first_call_ms.push_back(first_ms);
  }
  double med() const { return median(medians_ms); }
  double avg() const { return median(means_ms); }
  double first() const { return median(first_call_ms); }
  double fastest() const { return *std::min_element(medians_ms.begin(), medians_ms.end()); }
  // Slowest over fastest round median: how much the rounds disagree (background load).
  double spread() const { return *std::max_element(medians_ms.begin(), medians_ms.end()) / fastest(); }
};

struct Row {
  std::string model;
  int batch = 0;
  Figures worker, jit, module;
};

std::string slug(const std::string& model) {
  std::string s = model;
  std::replace(s.begin(), s.end(), '/', '_');
  return s;
}

void check_threads(int actual, int expected, const std::string& who) {
  if (actual != expected) {
    throw BenchError(who + " ran with " + std::to_string(actual) + " intra-op threads, not " +
                     std::to_string(expected));
  }
}

// Runs bench/torch_timing.py time for one runner and returns its document.
nlohmann::json python_time(const Options& o, const std::string& runner, const std::string& model, int batch,
                           const fs::path& artifact, const fs::path& dir, const std::string& tag) {
  const fs::path out = dir / (tag + ".json");
  const fs::path log = dir / (tag + ".stderr");
  const auto p = run_process(
      {o.tools.python, o.tools.source_dir + "/bench/torch_timing.py", "time", "--runner", runner, "--model", model,
       "--batch", std::to_string(batch), "--artifact", artifact.string(), "--iterations", std::to_string(o.iterations),
       "--warmup", std::to_string(o.warmup), "--threads", std::to_string(o.threads), "--out", out.string()},
      dir / (tag + ".stdout"), log);
  if (p.exit_code != 0) throw BenchError("python " + runner + " (" + tag + ") failed; stderr:\n" + tail_of(log));
  auto doc = parse_json(read_text(out), 16);
  if (!doc.ok()) throw BenchError(out.string() + ": " + doc.error().describe());
  const auto samples = doc->at("samples_ms").get<std::vector<double>>();
  if (samples.size() != static_cast<std::size_t>(o.iterations))
    throw BenchError("python " + runner + ": wrong sample count");
  check_threads(doc->at("threads").get<int>(), o.threads, "python " + runner);
  if (runner == "jit" && doc->at("graph_executor_optimize").get<bool>()) {
    throw BenchError("python jit ran with the graph executor's optimisation on");
  }
  return *doc;
}

Row measure(const Options& o, const std::string& model, int batch, const fs::path& root) {
  const fs::path dir = root / (slug(model) + "_b" + std::to_string(batch));
  std::fprintf(stderr, "cpp_vs_python: exporting %s batch %d\n", model.c_str(), batch);
  const auto metadata = export_model(o.tools, model, batch, "torchscript", dir);
  const fs::path artifact = dir / metadata.at("artifact").get<std::string>();
  const WorkerJob job = make_job(metadata, artifact, Mode::kEager, o.iterations, o.warmup);

  Row row{model, batch, {}, {}, {}};
  // The runners take turns going first, so a change in background load does not favour one.
  const std::vector<std::string> runners = {"worker", "jit", "module"};
  for (int r = 0; r < o.rounds; ++r) {
    const std::string round = "r" + std::to_string(r);
    for (std::size_t k = 0; k < runners.size(); ++k) {
      const std::string& runner = runners[(k + static_cast<std::size_t>(r)) % runners.size()];
      std::fprintf(stderr, "cpp_vs_python: %s batch %d round %d: %s\n", model.c_str(), batch, r, runner.c_str());
      if (runner == "worker") {
        const auto w = run_worker(o.tools, job, dir, "worker_" + round);
        require_ok(w.result, o.iterations, "worker " + model);
        const auto threads = w.result.environment.find("cpu_threads");
        check_threads(threads != w.result.environment.end() && threads->is_number() ? threads->get<int>() : -1,
                      o.threads, "the worker");
        row.worker.add(w.result.samples_ms, w.result.first_call_ms.value_or(0));
      } else {
        const auto doc = python_time(o, runner, model, batch, artifact, dir, runner + "_" + round);
        (runner == "jit" ? row.jit : row.module)
            .add(doc.at("samples_ms").get<std::vector<double>>(), doc.at("first_call_ms").get<double>());
      }
    }
  }
  return row;
}

void print_latency_table(const std::vector<Row>& rows, const char* title, double (Figures::*pick)() const) {
  std::printf("\n%s\n", title);
  std::printf("| %-30s | %5s | %12s | %14s | %16s | %10s | %13s |\n", "model", "batch", "worker eager", "python jit",
              "python nn.Module", "worker/jit", "worker/module");
  std::printf("| %-30s | %5s | %12s | %14s | %16s | %10s | %13s |\n", "", "", "(C++ no opt)", "(no opt)", "(eager)", "",
              "");
  std::printf("|%s|%s|%s|%s|%s|%s|%s|\n", std::string(32, '-').c_str(), std::string(7, '-').c_str(),
              std::string(14, '-').c_str(), std::string(16, '-').c_str(), std::string(18, '-').c_str(),
              std::string(12, '-').c_str(), std::string(15, '-').c_str());
  for (const auto& r : rows) {
    const double w = (r.worker.*pick)(), j = (r.jit.*pick)(), m = (r.module.*pick)();
    std::printf("| %-30s | %5d | %12.3f | %14.3f | %16.3f | %10.3f | %13.3f |\n", r.model.c_str(), r.batch, w, j, m,
                w / j, w / m);
  }
}

void print_tables(const std::vector<Row>& rows) {
  print_latency_table(rows, "median per-iteration latency (ms; median over rounds of each round's median)",
                      &Figures::med);
  print_latency_table(rows, "fastest round's median (ms; the round least disturbed by other load on the machine)",
                      &Figures::fastest);
  std::printf(
      "\nmean per-iteration latency (median over rounds), first call (ms), spread = slowest / fastest round median\n");
  std::printf("| %-30s | %5s | %11s | %11s | %11s | %10s | %10s | %10s | %7s | %7s | %7s |\n", "model", "batch",
              "worker mean", "jit mean", "module mean", "worker 1st", "jit 1st", "module 1st", "spr w", "spr jit",
              "spr mod");
  for (const auto& r : rows) {
    std::printf("| %-30s | %5d | %11.3f | %11.3f | %11.3f | %10.1f | %10.1f | %10.1f | %7.2f | %7.2f | %7.2f |\n",
                r.model.c_str(), r.batch, r.worker.avg(), r.jit.avg(), r.module.avg(), r.worker.first(), r.jit.first(),
                r.module.first(), r.worker.spread(), r.jit.spread(), r.module.spread());
  }
}

int run(Options o) {
  if (o.threads == 0) o.threads = at::get_num_threads();
  // One intra-op thread count for every process: the env for the worker (OpenMP reads it at
  // LibTorch's init), --threads for python (torch.set_num_threads); both report it back.
  const std::string threads = std::to_string(o.threads);
  ::setenv("OMP_NUM_THREADS", threads.c_str(), 1);
  ::setenv("MKL_NUM_THREADS", threads.c_str(), 1);

  ScratchDir dir(o.workdir, o.keep);
  std::printf(
      "cpp_vs_python: %d timed iterations after a first call and %d warm-up, %d round(s), %d intra-op "
      "thread(s) everywhere\n  worker: %s\n  python: %s\n  scratch: %s\n  load average at start: %s\n",
      o.iterations, o.warmup, o.rounds, o.threads, o.tools.worker.c_str(), o.tools.python.c_str(), dir.path().c_str(),
      load_average().c_str());
  std::fflush(stdout);
  std::vector<Row> rows;
  for (const auto& model : o.models) {
    for (int batch : o.batches) rows.push_back(measure(o, model, batch, dir.path()));
  }
  print_tables(rows);
  std::printf("\nload average at end: %s\n", load_average().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "cpp_vs_python: the benchfleet worker's eager mode vs Python running the same TorchScript artifact\n"
      "(graph executor optimisation off) vs the torchvision nn.Module run eagerly from Python (the seeds'\n"
      "method), same batch, same thread count. Prints a table; exits 1 if any step fails."};
  Options o;
  app.add_option("--models", o.models, "catalog ids")->delimiter(',')->capture_default_str();
  app.add_option("--batches", o.batches, "batch sizes")
      ->delimiter(',')
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--rounds", o.rounds, "runs of each runner per model and batch")
      ->capture_default_str()
      ->check(CLI::Range(1, 100));
  app.add_option("--threads", o.threads, "intra-op threads for every runner (0: LibTorch's default here)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  add_worker_bench_options(app, o, "torch and torchvision", "exporter, catalog, bench/torch_timing.py");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(std::move(o));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cpp_vs_python: %s\n", e.what());
    return 1;
  }
}
