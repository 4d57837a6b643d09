// What a worker build can run (capabilities.cpp): which format each mode takes, and every mode on
// every device for builds with and without CUDA, AOTInductor and CUDA graphs.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "agent/worker/capabilities.h"
#include "common/worker_job.h"

namespace benchfleet::worker {
namespace {

constexpr const char* kFormats[] = {"torchscript", "torchscript-frozen", "aotinductor"};

WorkerJob job_for(Mode mode, std::string format, std::string device = "cpu") {
  WorkerJob job;
  job.model = "torchvision/resnet18";
  job.artifact = "/nonexistent/model.pt";
  job.mode = mode;
  job.format = std::move(format);
  job.device = std::move(device);
  job.inputs = {TensorSpec{"pixel_values", {1, 3, 224, 224}, "float32", std::nullopt}};
  return job;
}

TEST(WorkerCheckJob, EachModeAcceptsOnlyItsFormat) {
  const std::vector<std::pair<Mode, std::string>> expected = {
      {Mode::kEager, "torchscript"},       {Mode::kTorchscript, "torchscript-frozen"},
      {Mode::kDefault, "aotinductor"},     {Mode::kReduceOverhead, "aotinductor"},
      {Mode::kMaxAutotune, "aotinductor"}, {Mode::kMaxAutotuneNoCudagraphs, "aotinductor"}};
  ASSERT_EQ(expected.size(), all_modes().size());
  for (const auto& [mode, right] : expected) {
    for (const char* format : kFormats) {
      SCOPED_TRACE(std::string(to_string(mode)) + " with " + format);
      const auto err = check_job(job_for(mode, format));
      if (format == right) {
        EXPECT_FALSE(err.has_value()) << err->describe();
        continue;
      }
      ASSERT_TRUE(err.has_value());
      EXPECT_EQ(err->code, ErrorCode::kInvalidArgument);
      EXPECT_EQ(err->field, "format");
      EXPECT_NE(err->message.find(std::string(to_string(mode))), std::string::npos) << err->message;
      EXPECT_NE(err->message.find(right), std::string::npos) << err->message;
      EXPECT_NE(err->message.find(format), std::string::npos) << err->message;
    }
  }
}

TEST(WorkerCheckJob, PythonJobsAreTheRunnersNotTheWorkers) {
  WorkerJob job = job_for(Mode::kEager, "torchscript");
  job.runtime = Runtime::kPython;
  const auto err = check_job(job);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(err->code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(err->field, "runtime");
  EXPECT_NE(err->message.find("benchfleet_runner.py"), std::string::npos) << err->message;
}

// `aoti_cuda_graphs` defaults to what LibTorch >= 2.7 has whenever the loader is there.
Capabilities caps_of(bool aoti, bool cuda_compiled, bool cuda_available, std::optional<bool> aoti_cuda_graphs = {}) {
  Capabilities c;
  c.torch_version = "9.9.9-test";
  c.aoti = aoti;
  c.aoti_cuda_graphs = aoti_cuda_graphs.value_or(aoti);
  c.cuda_compiled = cuda_compiled;
  c.cuda_available = cuda_available;
  return c;
}

// The rules spelled out independently of capabilities.cpp: CUDA jobs need a CUDA build and a
// device, reduce-overhead and max-autotune need CUDA (graphs), AOTInductor formats need the
// loader, and capturing an AOTInductor package into a CUDA graph its single-threaded runner.
bool expected_runnable(Mode mode, const std::string& device, const Capabilities& caps) {
  const bool graphs = mode == Mode::kReduceOverhead || mode == Mode::kMaxAutotune;
  if (device == "cuda" && !(caps.cuda_compiled && caps.cuda_available)) return false;
  if (graphs && device != "cuda") return false;
  if (format_for(mode) == "aotinductor" && !caps.aoti) return false;
  if (format_for(mode) == "aotinductor" && graphs && !caps.aoti_cuda_graphs) return false;
  return true;
}

TEST(WorkerCapabilities, UnsupportedReasonForEveryModeDeviceAndBuild) {
  struct Build {
    bool aoti, compiled, available, graphs;
  };
  std::vector<Build> builds;
  for (bool aoti : {false, true}) {
    for (bool compiled : {false, true}) {
      for (bool available : {false, true}) {
        for (bool graphs : {false, true}) {
          // A device is usable only from a CUDA build; graph capture is a property of the loader.
          if ((available && !compiled) || (graphs && !aoti)) continue;
          builds.push_back({aoti, compiled, available, graphs});
        }
      }
    }
  }
  ASSERT_EQ(builds.size(), 9u);
  for (const Build& b : builds) {
    const Capabilities caps = caps_of(b.aoti, b.compiled, b.available, b.graphs);
    for (const std::string device : {"cpu", "cuda"}) {
      for (Mode mode : all_modes()) {
        SCOPED_TRACE(std::string(to_string(mode)) + " on " + device + " aoti=" + std::to_string(b.aoti) +
                     " cuda_compiled=" + std::to_string(b.compiled) + " cuda_available=" + std::to_string(b.available) +
                     " aoti_cuda_graphs=" + std::to_string(b.graphs));
        const WorkerJob job = job_for(mode, std::string(format_for(mode)), device);
        const auto reason = unsupported_reason(job, caps);
        ASSERT_EQ(!reason.has_value(), expected_runnable(mode, device, caps)) << reason.value_or("(runnable)");
        if (!reason) continue;
        EXPECT_FALSE(reason->empty());
        // The reason names what is missing.
        if (device == "cuda" && !b.compiled) {
          EXPECT_NE(reason->find("CUDA"), std::string::npos) << *reason;
          EXPECT_NE(reason->find(caps.torch_version), std::string::npos) << *reason;
        } else if (device == "cuda" && !b.available) {
          EXPECT_NE(reason->find("CUDA"), std::string::npos) << *reason;
        } else if (device == "cpu" && (mode == Mode::kReduceOverhead || (mode == Mode::kMaxAutotune && b.aoti))) {
          EXPECT_NE(reason->find("CUDA graphs"), std::string::npos) << *reason;
        } else if (b.aoti) {  // on CUDA, a graph mode without the single-threaded runner
          EXPECT_NE(reason->find("CUDA graph"), std::string::npos) << *reason;
          EXPECT_NE(reason->find("single-threaded"), std::string::npos) << *reason;
          EXPECT_NE(reason->find(caps.torch_version), std::string::npos) << *reason;
        } else {
          EXPECT_NE(reason->find("AOTInductor"), std::string::npos) << *reason;
          EXPECT_NE(reason->find(caps.torch_version), std::string::npos) << *reason;
        }
      }
    }
  }
}

TEST(WorkerCapabilities, RunnableModesOfACpuOnlyLibTorch113) {
  const Capabilities caps = caps_of(false, false, false);
  EXPECT_EQ(runnable_modes(caps, "cpu"), (std::vector<Mode>{Mode::kEager, Mode::kTorchscript}));
  EXPECT_EQ(runnable_modes(caps, "cuda"), std::vector<Mode>{});
}

TEST(WorkerCapabilities, RunnableModesOfACudaBuildWithoutDevice) {
  const Capabilities caps = caps_of(true, true, false);
  EXPECT_EQ(runnable_modes(caps, "cuda"), std::vector<Mode>{});
  EXPECT_EQ(runnable_modes(caps, "cpu"),
            (std::vector<Mode>{Mode::kEager, Mode::kTorchscript, Mode::kDefault, Mode::kMaxAutotuneNoCudagraphs}));
}

TEST(WorkerCapabilities, RunnableModesOfACudaBuildWithAotInductor) {
  const Capabilities caps = caps_of(true, true, true);
  EXPECT_EQ(runnable_modes(caps, "cuda"), all_modes());
  EXPECT_EQ(runnable_modes(caps, "cpu"),
            (std::vector<Mode>{Mode::kEager, Mode::kTorchscript, Mode::kDefault, Mode::kMaxAutotuneNoCudagraphs}));
}

TEST(WorkerCapabilities, RunnableModesOfACudaLibTorch26WithoutTheSingleThreadedAotiRunner) {
  const Capabilities caps = caps_of(true, true, true, /*aoti_cuda_graphs=*/false);
  EXPECT_EQ(runnable_modes(caps, "cuda"),
            (std::vector<Mode>{Mode::kEager, Mode::kTorchscript, Mode::kDefault, Mode::kMaxAutotuneNoCudagraphs}));
}

TEST(WorkerCapabilities, RunnableModesOfACudaBuildWithoutAotInductor) {
  const Capabilities caps = caps_of(false, true, true);
  EXPECT_EQ(runnable_modes(caps, "cuda"), (std::vector<Mode>{Mode::kEager, Mode::kTorchscript}));
  EXPECT_EQ(runnable_modes(caps, "cpu"), (std::vector<Mode>{Mode::kEager, Mode::kTorchscript}));
}

TEST(WorkerCapabilities, RunnableModesAgreeWithUnsupportedReason) {
  for (bool aoti : {false, true}) {
    for (bool cuda : {false, true}) {
      const Capabilities caps = caps_of(aoti, cuda, cuda, aoti && cuda);
      for (const std::string device : {"cpu", "cuda"}) {
        std::vector<Mode> expected;
        for (Mode m : all_modes()) {
          if (expected_runnable(m, device, caps)) expected.push_back(m);
        }
        EXPECT_EQ(runnable_modes(caps, device), expected) << device << " aoti=" << aoti << " cuda=" << cuda;
      }
    }
  }
}

TEST(WorkerCapabilities, CudaGraphsOnlyForReduceOverheadAndMaxAutotuneOnCuda) {
  for (Mode mode : all_modes()) {
    const bool graph = mode == Mode::kReduceOverhead || mode == Mode::kMaxAutotune;
    EXPECT_EQ(uses_cuda_graph(job_for(mode, std::string(format_for(mode)), "cuda")), graph) << to_string(mode);
    EXPECT_FALSE(uses_cuda_graph(job_for(mode, std::string(format_for(mode)), "cpu"))) << to_string(mode);
  }
}

}  // namespace
}  // namespace benchfleet::worker
