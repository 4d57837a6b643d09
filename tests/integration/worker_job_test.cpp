// The worker judges its job: unsupported modes and devices, errors naming the field or file,
// capabilities, dtypes, and agreement with the exporter on AOTInductor.
#include "tests/integration/worker_support.h"

namespace benchfleet::testing {
namespace {

using namespace worker_it;  // NOLINT(google-build-using-namespace): the shared fixture of these tests
namespace fs = std::filesystem;
using nlohmann::json;

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
