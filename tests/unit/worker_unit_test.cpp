// The worker's pure rules, without a model: recognising out-of-memory failures (oom.cpp), when the
// measurement loop harvests its timer (timing.cpp), and the random inputs a job is measured on
// (make_inputs). What a build can run: worker_capabilities_test.cpp.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/worker/oom.h"
#include "agent/worker/output_check.h"
#include "agent/worker/runner.h"
#include "agent/worker/stream_tail.h"
#include "agent/worker/timing.h"
#include "common/worker_job.h"

namespace benchfleet::worker {
namespace {

// ---- oom.cpp --------------------------------------------------------------------------------

// What LibTorch 1.13's CPU allocator throws (c10::Error::what() minus the backtrace).
constexpr const char* kCpuOom =
    "[enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't allocate memory: you tried to "
    "allocate 205520896 bytes. Error code 12 (Cannot allocate memory)";
// What the CUDA caching allocator throws (torch 1.13 and 2.x word it alike).
constexpr const char* kCudaOom =
    "CUDA out of memory. Tried to allocate 2.50 GiB (GPU 0; 15.78 GiB total capacity; 13.12 GiB already "
    "allocated; 1.06 GiB free; 13.50 GiB reserved in total by PyTorch) If reserved memory is >> allocated "
    "memory try setting max_split_size_mb to avoid fragmentation.";
constexpr const char* kCudaOomMiB =
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of "
    "79.19 GiB of which 3.06 MiB is free.";

TEST(WorkerOom, RecognisesCpuCudaAndBadAllocMessages) {
  EXPECT_TRUE(is_oom_message(kCpuOom));
  EXPECT_TRUE(is_oom_message(kCudaOom));
  EXPECT_TRUE(is_oom_message(kCudaOomMiB));
  EXPECT_TRUE(is_oom_message("c10::OutOfMemoryError: CUDA error"));
  EXPECT_TRUE(is_oom_message("std::bad_alloc"));
}

// The messages the python runtime's reading of the rule is tested on too (test_shared_rules.py).
TEST(WorkerOom, JudgesTheSharedCasesAsThePythonRuntimeDoes) {
  std::ifstream in(std::string(BENCHFLEET_SOURCE_DIR) + "/tests/data/oom_message_cases.json");
  ASSERT_TRUE(in.good()) << "tests/data/oom_message_cases.json is missing";
  const auto cases = nlohmann::json::parse(in).at("cases");
  ASSERT_GE(cases.size(), 8u);
  for (const auto& c : cases) {
    EXPECT_EQ(is_oom_message(c.at("message").get<std::string>()), c.at("oom").get<bool>()) << c.dump();
  }
}

TEST(WorkerOom, OtherFailuresAreNotOom) {
  EXPECT_FALSE(is_oom_message("PytorchStreamReader failed reading zip archive: failed finding central directory"));
  EXPECT_FALSE(is_oom_message("Expected all tensors to be on the same device, but found at least two devices"));
  EXPECT_FALSE(is_oom_message(""));
}

TEST(WorkerOom, BytesRequestedFromCpuMessage) {
  EXPECT_EQ(oom_bytes_requested(kCpuOom), std::optional<std::int64_t>(205520896));
  EXPECT_EQ(oom_bytes_requested("you tried to allocate 205520896 bytes"), std::optional<std::int64_t>(205520896));
}

// The CUDA allocator writes "Tried" with a capital T (c10/cuda/CUDACachingAllocator.cpp).
TEST(WorkerOom, BytesRequestedFromCudaMessageInGiB) {
  EXPECT_EQ(oom_bytes_requested("Tried to allocate 2.50 GiB"), std::optional<std::int64_t>(2684354560));
  EXPECT_EQ(oom_bytes_requested(kCudaOom), std::optional<std::int64_t>(2684354560));
}

TEST(WorkerOom, BytesRequestedFromCudaMessageInMiB) {
  EXPECT_EQ(oom_bytes_requested("Tried to allocate 20.00 MiB"), std::optional<std::int64_t>(20971520));
  EXPECT_EQ(oom_bytes_requested(kCudaOomMiB), std::optional<std::int64_t>(20971520));
}

TEST(WorkerOom, NoBytesWhenTheMessageDoesNotSay) {
  EXPECT_EQ(oom_bytes_requested("std::bad_alloc"), std::nullopt);
  EXPECT_EQ(oom_bytes_requested("DefaultCPUAllocator: can't allocate memory"), std::nullopt);
  EXPECT_EQ(oom_bytes_requested("you tried to allocate lots of bytes"), std::nullopt);
  EXPECT_EQ(oom_bytes_requested(""), std::nullopt);
}

TEST(WorkerOom, OomLineDropsTheInterpreterTraceback) {
  const std::string line =
      "RuntimeError: [enforce fail at alloc_cpu.cpp:75] err == 0. DefaultCPUAllocator: can't allocate memory: "
      "you tried to allocate 12845056 bytes. Error code 12 (Cannot allocate memory)";
  const std::string message =
      "The following operation failed in the TorchScript interpreter.\n"
      "Traceback of TorchScript, serialized code (most recent call last):\n"
      "  File \"code/__torch__/torchvision/models/resnet.py\", line 20, in forward\n"
      "    x = torch._convolution(input, weight)\n" +
      line + "\n";
  EXPECT_EQ(oom_line(message), line);
}

TEST(WorkerOom, OomLineIsTheWholeMessageWhenNoLineSaysOom) {
  const std::string message = "first line\nsecond line";
  EXPECT_EQ(oom_line(message), message);
  EXPECT_EQ(oom_line(kCudaOom), kCudaOom);  // one line: itself
}

// A model library dlopen could not map: under a CPU cap, the address space ran out.
TEST(WorkerOom, MappingFailureOfAModelLibrary) {
  EXPECT_TRUE(is_mapping_failure(
      "Error in dlopen: /tmp/Uq58d1/data/aotinductor/model/c2x.so: failed to map segment from shared object"));
  EXPECT_FALSE(is_mapping_failure("Error in dlopen: /tmp/a.so: cannot open shared object file"));
  EXPECT_FALSE(is_oom_message("failed to map segment from shared object"));  // only under a cap
}

// What AOTInductor's runtime throws for any failure of the model, a CUDA out-of-memory included
// (torch/csrc/inductor/aoti_runner/model_container_runner.cpp, torch 2.6).
constexpr const char* kAotiGeneric =
    "run_func_( container_handle_, input_handles.data(), input_handles.size(), output_handles.data(), "
    "output_handles.size(), reinterpret_cast<AOTInductorStreamHandle>(stream_handle), proxy_executor_handle_) "
    "API call failed at /build/torch/csrc/inductor/aoti_runner/model_container_runner.cpp, line 107";
constexpr const char* kMappingFailure =
    "Error in dlopen: /tmp/Uq58d1/data/aotinductor/model/c2x.so: failed to map segment from shared object";

TEST(WorkerOomFailure, GenericAotiFailureIsOomWhenTheAllocatorCountedOne) {
  EXPECT_TRUE(is_oom_failure(kAotiGeneric, /*allocator_counted_oom=*/true, /*under_cpu_cap=*/false));
}

TEST(WorkerOomFailure, GenericAotiFailureIsAnErrorWhenTheCounterDidNotGrow) {
  EXPECT_FALSE(is_oom_failure(kAotiGeneric, /*allocator_counted_oom=*/false, /*under_cpu_cap=*/false));
  EXPECT_FALSE(is_oom_failure(kAotiGeneric, /*allocator_counted_oom=*/false, /*under_cpu_cap=*/true));
}

TEST(WorkerOomFailure, OomMessagesAreOomWithoutTheCounter) {
  for (const char* message : {kCpuOom, kCudaOom, kCudaOomMiB, "std::bad_alloc"}) {
    EXPECT_TRUE(is_oom_failure(message, false, false)) << message;
    EXPECT_TRUE(is_oom_failure(message, false, true)) << message;
    EXPECT_TRUE(is_oom_failure(message, true, false)) << message;
  }
  EXPECT_FALSE(is_oom_failure("Expected all tensors to be on the same device", false, false));
}

TEST(WorkerOomFailure, MappingFailureIsOomOnlyUnderACpuCap) {
  EXPECT_TRUE(is_oom_failure(kMappingFailure, false, /*under_cpu_cap=*/true));
  EXPECT_FALSE(is_oom_failure(kMappingFailure, false, /*under_cpu_cap=*/false));
}

// ---- timing.cpp: HarvestSchedule ------------------------------------------------------------

using std::chrono::milliseconds;

// A clock the test moves by hand; counts how often the schedule reads it.
struct FakeClock {
  HarvestSchedule::Clock::time_point now{};
  int reads = 0;
  HarvestSchedule::Now fn() {
    return [this] {
      ++reads;
      return now;
    };
  }
};

// Times `n` iterations of `each` on `clock`; the 1-based iterations after which a harvest was due.
std::vector<std::size_t> harvests_over(HarvestSchedule& schedule, FakeClock& clock, std::size_t n, milliseconds each) {
  std::vector<std::size_t> due;
  for (std::size_t i = 1; i <= n; ++i) {
    clock.now += each;
    if (schedule.iteration_timed()) due.push_back(i);
  }
  return due;
}

TEST(WorkerHarvestSchedule, HarvestsWhenABatchIsPending) {
  FakeClock clock;
  HarvestSchedule schedule(16, milliseconds(250), clock.fn());
  EXPECT_EQ(harvests_over(schedule, clock, 40, milliseconds(1)), (std::vector<std::size_t>{16, 32}));
  EXPECT_EQ(schedule.pending(), 8u);
}

TEST(WorkerHarvestSchedule, HarvestsWhenTheIntervalHasPassedSinceTheLastHarvest) {
  FakeClock clock;
  HarvestSchedule schedule(16, milliseconds(250), clock.fn());
  // 20 ms iterations: 250 ms pass before 16 are pending, after the 13th (260 ms). The next is
  // due 250 ms after that harvest, after the 26th, not at once after the 14th (the old rule
  // measured from the last progress report, only reset each second, and so harvested every
  // iteration from there on).
  EXPECT_EQ(harvests_over(schedule, clock, 40, milliseconds(20)), (std::vector<std::size_t>{13, 26, 39}));
}

TEST(WorkerHarvestSchedule, ABatchHarvestRestartsTheInterval) {
  FakeClock clock;
  HarvestSchedule schedule(4, milliseconds(250), clock.fn());
  EXPECT_EQ(harvests_over(schedule, clock, 4, milliseconds(60)), (std::vector<std::size_t>{4}));  // 240 ms
  // 20 ms later 260 ms have passed since the start but only 20 since the harvest.
  EXPECT_EQ(harvests_over(schedule, clock, 3, milliseconds(20)), (std::vector<std::size_t>{}));
  EXPECT_EQ(harvests_over(schedule, clock, 1, milliseconds(200)), (std::vector<std::size_t>{1}));  // 260 ms
}

TEST(WorkerHarvestSchedule, ASlowIterationIsHarvestedAtOnce) {
  FakeClock clock;
  HarvestSchedule schedule(16, milliseconds(250), clock.fn());
  EXPECT_EQ(harvests_over(schedule, clock, 3, milliseconds(1)), (std::vector<std::size_t>{}));
  EXPECT_EQ(harvests_over(schedule, clock, 1, milliseconds(1000)), (std::vector<std::size_t>{1}));
  EXPECT_EQ(schedule.pending(), 0u);
  // Fast again: back to whole batches.
  EXPECT_EQ(harvests_over(schedule, clock, 20, milliseconds(1)), (std::vector<std::size_t>{16}));
}

TEST(WorkerHarvestSchedule, KnownHarvestCountsOverASimulatedRun) {
  struct Case {
    milliseconds each;
    std::size_t harvests;
  };
  // 1000 iterations each: 1 ms -> whole batches (1000 / 16); 100 ms -> every third (300 ms);
  // 300 ms -> every iteration.
  for (const auto& [each, expected] :
       {Case{milliseconds(1), 62}, Case{milliseconds(100), 333}, Case{milliseconds(300), 1000}}) {
    FakeClock clock;
    HarvestSchedule schedule(16, milliseconds(250), clock.fn());
    EXPECT_EQ(harvests_over(schedule, clock, 1000, each).size(), expected) << each.count() << " ms";
  }
}

TEST(WorkerHarvestSchedule, NeverMoreHarvestsThanBatchesPlusIntervals) {
  // Each harvest either completes a batch or ends an interval of its own, so over n iterations
  // lasting t there are at most n / batch + t / interval.
  const std::size_t batch = 16;
  const milliseconds interval(250);
  for (int each_ms : {1, 7, 15, 16, 17, 20, 63, 100, 249, 251, 1000}) {
    FakeClock clock;
    HarvestSchedule schedule(batch, interval, clock.fn());
    const std::size_t n = 2000;
    const std::size_t harvests = harvests_over(schedule, clock, n, milliseconds(each_ms)).size();
    const auto total = milliseconds(each_ms) * static_cast<int>(n);
    EXPECT_LE(harvests, n / batch + static_cast<std::size_t>(total / interval)) << each_ms << " ms";
    EXPECT_GE(harvests, n / batch) << each_ms << " ms";  // never fewer than one per batch
  }
}

TEST(WorkerHarvestSchedule, BatchOfOneHarvestsEveryIterationWithoutReadingTheClock) {
  FakeClock clock;
  HarvestSchedule schedule(1, milliseconds(250), clock.fn());
  const int reads_at_start = clock.reads;
  EXPECT_EQ(harvests_over(schedule, clock, 5, milliseconds(1)), (std::vector<std::size_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(clock.reads, reads_at_start);
  HarvestSchedule zero(0, milliseconds(250), clock.fn());  // taken as 1
  EXPECT_EQ(zero.batch(), 1u);
}

// ---- stream_tail.cpp ------------------------------------------------------------------------

TEST(WorkerStreamTail, KeepsTheLastBytesAndPassesEverythingOn) {
  std::ostringstream sink;
  {
    const StreamTail tail(sink, 16);
    sink << "Exception in aoti_torch: " << 42 << '\n';
    EXPECT_EQ(tail.text(), " aoti_torch: 42\n");
    sink << "x";
    EXPECT_EQ(tail.text(), "aoti_torch: 42\nx");
  }
  EXPECT_EQ(sink.str(), "Exception in aoti_torch: 42\nx");
  sink << "after";  // the stream's own buffer is back
  EXPECT_EQ(sink.str(), "Exception in aoti_torch: 42\nxafter");
}

// ---- output_check.cpp -----------------------------------------------------------------------

const nlohmann::json kRecorded = nlohmann::json::parse(
    R"([{"name": "logits", "shape": [2, 5], "dtype": "float32"}, {"name": "pred_boxes", "shape": [2, 4], "dtype": "float32"}])");

TEST(WorkerOutputCheck, AgreeingOutputs) {
  EXPECT_EQ(output_mismatch({{{2, 5}, "float32"}, {{2, 4}, "float32"}}, kRecorded), std::nullopt);
  EXPECT_EQ(output_mismatch({{{9}, "int64"}}, nlohmann::json()), std::nullopt);  // nothing recorded
}

TEST(WorkerOutputCheck, CountShapeAndDtypeDifferencesAreNamed) {
  const auto count = output_mismatch({{{2, 5}, "float32"}}, kRecorded);
  ASSERT_TRUE(count.has_value());
  EXPECT_NE(count->find("1 output"), std::string::npos) << *count;
  const auto shape = output_mismatch({{{2, 5}, "float32"}, {{1, 4}, "float32"}}, kRecorded);
  ASSERT_TRUE(shape.has_value());
  EXPECT_NE(shape->find("pred_boxes"), std::string::npos) << *shape;
  EXPECT_NE(shape->find("[1,4]"), std::string::npos) << *shape;
  const auto dtype = output_mismatch({{{2, 5}, "float16"}, {{2, 4}, "float32"}}, kRecorded);
  ASSERT_TRUE(dtype.has_value());
  EXPECT_NE(dtype->find("float16"), std::string::npos) << *dtype;
}

TEST(WorkerOutputCheck, DescribesTensorsAsTheExporterNamesThem) {
  const std::vector<at::Tensor> outputs = {at::zeros({2, 5}), at::zeros({3}, at::kLong), at::zeros({1}, at::kBFloat16)};
  EXPECT_EQ(describe_outputs(outputs),
            (std::vector<OutputDescription>{{{2, 5}, "float32"}, {{3}, "int64"}, {{1}, "bfloat16"}}));
}

// ---- make_inputs ----------------------------------------------------------------------------

std::vector<TensorSpec> mixed_specs() {
  return {
      TensorSpec{"pixel_values", {2, 3, 8, 8}, "float32", std::nullopt},
      TensorSpec{"half", {2, 5}, "float16", std::nullopt},
      TensorSpec{"brain", {7}, "bfloat16", std::nullopt},
      TensorSpec{"input_ids", {2, 64}, "int64", std::vector<std::int64_t>{5, 9}},
      TensorSpec{"offsets", {4, 16}, "int32", std::vector<std::int64_t>{-3, 3}},
      TensorSpec{"attention_mask", {2, 64}, "int64", std::nullopt},
      TensorSpec{"valid", {3, 2}, "bool", std::nullopt},
  };
}

// Not every element the same.
bool varies(const at::Tensor& t) { return t.ne(t.flatten()[0]).any().item<bool>(); }

bool all_equal(const std::vector<at::Tensor>& a, const std::vector<at::Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!a[i].equal(b[i])) return false;
  }
  return true;
}

TEST(WorkerMakeInputs, DtypesAndShapesFollowTheSpecs) {
  const auto specs = mixed_specs();
  const auto inputs = make_inputs(specs, 0, "cpu");
  ASSERT_EQ(inputs.size(), specs.size());
  const std::vector<at::ScalarType> types = {at::kFloat, at::kHalf, at::kBFloat16, at::kLong,
                                             at::kInt,   at::kLong, at::kBool};
  for (std::size_t i = 0; i < specs.size(); ++i) {
    SCOPED_TRACE(specs[i].name);
    EXPECT_EQ(inputs[i].scalar_type(), types[i]);
    EXPECT_EQ(inputs[i].sizes().vec(), specs[i].shape);
    EXPECT_TRUE(inputs[i].device().is_cpu());
    EXPECT_TRUE(inputs[i].is_contiguous());
  }
}

TEST(WorkerMakeInputs, SameSeedSameInputs) {
  EXPECT_TRUE(all_equal(make_inputs(mixed_specs(), 1234, "cpu"), make_inputs(mixed_specs(), 1234, "cpu")));
}

TEST(WorkerMakeInputs, AnotherSeedOtherInputs) {
  const auto a = make_inputs(mixed_specs(), 1, "cpu");
  const auto b = make_inputs(mixed_specs(), 2, "cpu");
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i : {0, 1, 2, 3, 4}) EXPECT_FALSE(a[i].equal(b[i])) << mixed_specs()[i].name;
  // Masks do not depend on the seed.
  EXPECT_TRUE(a[5].equal(b[5]));
  EXPECT_TRUE(a[6].equal(b[6]));
}

TEST(WorkerMakeInputs, IntegersStayInTheirRange) {
  const auto specs = mixed_specs();
  for (std::int64_t seed : {0, 1, 42}) {
    const auto inputs = make_inputs(specs, seed, "cpu");
    for (std::size_t i : {3, 4}) {
      SCOPED_TRACE(specs[i].name + " seed " + std::to_string(seed));
      const auto& range = *specs[i].range;
      EXPECT_GE(inputs[i].min().item<std::int64_t>(), range[0]);
      EXPECT_LT(inputs[i].max().item<std::int64_t>(), range[1]);
      EXPECT_TRUE(varies(inputs[i]));  // drawn, not a constant
    }
  }
}

TEST(WorkerMakeInputs, MasksAreAllOnes) {
  const auto inputs = make_inputs(mixed_specs(), 7, "cpu");
  EXPECT_TRUE(inputs[5].eq(1).all().item<bool>());
  EXPECT_TRUE(inputs[6].all().item<bool>());
}

TEST(WorkerMakeInputs, FloatsAreNotAllZero) {
  const auto inputs = make_inputs(mixed_specs(), 0, "cpu");
  for (std::size_t i : {0, 1, 2}) {
    SCOPED_TRACE(mixed_specs()[i].name);
    const at::Tensor as_float = inputs[i].to(at::kFloat);
    EXPECT_TRUE(as_float.ne(0).any().item<bool>());
    EXPECT_TRUE(as_float.isfinite().all().item<bool>());
    EXPECT_TRUE(varies(as_float));
  }
}

}  // namespace
}  // namespace benchfleet::worker
