// The accuracy rule for compiled results (docs/design.md §11), after PyTorch's own benchmark
// harness (benchmarks/dynamo/common.py, torch._dynamo.utils.same): a compiled model's output is
// judged against a float64 run of the same model, weights and inputs, next to eager's own error
// against that reference, so that random weights (large or small activations) do not make the
// verdict arbitrary. agent/python/benchfleet_accuracy.py is the same rule for the python runner;
// tests/data/accuracy_cases.json holds cases both must judge alike.
//
//   compiled_error <= kErrorMultiplier * eager_error + error_floor(dtype)   (relative L2 errors)
//   and, in reduced precision (float16, bfloat16, amp), cosine >= kMinCosine
//
// Outputs that are not floating point (indices, masks) must equal the reference exactly. A
// non-finite value where the reference has none fails. Two eager runs that differ bit for bit
// make the verdict eager_nondeterministic: nothing can be judged against a moving eager. An
// output that eager itself misses by more than kMaxEagerError is not judged (see there).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "common/types.h"

namespace benchfleet {

inline constexpr double kErrorMultiplier = 3.0;
inline constexpr double kMinCosine = 0.99;
// An output whose eager run (in the job's dtype) is further than this from the reference carries
// no information: in float16, random-init logits of ~1e-9 underflow to zeros (relative error 1).
// Such outputs are not judged; a result with no other output to judge is unchecked.
inline constexpr double kMaxEagerError = 0.5;

// The allowance on top of eager's error: float32 1e-4; float16 1e-2; bfloat16 4e-2; amp as its
// autocast dtype (float16 on CUDA, bfloat16 on the CPU).
double error_floor(Dtype dtype, bool on_cuda);

// One output tensor (flattened, in order) compared with the float64 reference.
struct OutputComparison {
  std::string name;              // "output0", ...
  bool floating = true;          // a floating-point output
  double compiled_error = 0;     // ||compiled - ref|| / ||ref|| (||compiled - ref|| when ||ref|| = 0)
  double eager_error = 0;        // the same for eager in the job's dtype
  std::optional<double> cosine;  // cosine similarity of compiled and ref (floating outputs)
  bool equal = true;             // non-floating outputs: compiled == reference
  bool compiled_finite = true;   // false: NaN or Inf in compiled where the reference has none
};

// The verdict for a compiled result. With no outputs it is unchecked (nothing was compared).
// The figures reported are those of the output that came closest to failing (largest
// compiled_error / tolerance), or of the first failing one.
AccuracyInfo judge_accuracy(Dtype dtype, bool on_cuda, bool eager_deterministic,
                            const std::vector<OutputComparison>& outputs);

}  // namespace benchfleet
