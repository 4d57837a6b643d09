// The worker measures exported artifacts: consistent results per model, mode and batch, latency
// growing with batch, fixed counts, memory caps that give an OOM and never a crash, --out.
#include "tests/integration/worker_support.h"

namespace benchfleet::testing {
namespace {

using namespace worker_it;  // NOLINT(google-build-using-namespace): the shared fixture of these tests
namespace fs = std::filesystem;
using nlohmann::json;

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

}  // namespace
}  // namespace benchfleet::testing
