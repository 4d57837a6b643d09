// The accuracy check of a compiled mode's package (docs/design.md §11): after measuring, the
// worker runs the package once on the exporter's reference inputs (reference.bin, see
// accuracy_reference.h) and judges its outputs against the float64 reference with the rule of
// common/accuracy.h, next to eager's own error recorded by the exporter.
#pragma once

#include <ATen/Tensor.h>

#include <string>

#include "agent/worker/runner.h"
#include "common/accuracy.h"
#include "common/types.h"
#include "common/worker_job.h"

namespace benchfleet::worker {

// One output against its reference, in double on the CPU: relative L2 error ||c - r|| / ||r||
// (||c - r|| when ||r|| is 0) and cosine similarity over the elements where the reference is
// finite (none when both sides are all zeros, 0 when exactly one is); NaN or Inf in `compiled`
// where the reference is finite makes compiled_finite false.
// Non-floating references are compared for exact equality. `eager_error` is passed through.
// REQUIRES: compiled and reference hold as many elements (throws std::invalid_argument if not).
OutputComparison compare_output(const std::string& name, const at::Tensor& compiled, const at::Tensor& reference,
                                double eager_error);

// The verdict for `runner` (loaded from job.artifact) against the reference the exporter left
// beside it. Never throws: no reference (an artifact exported before the check existed), an
// unusable one, or a failure while checking (out of memory, an exception) is verdict unchecked
// with the reason in `detail`.
AccuracyInfo check_accuracy(const WorkerJob& job, ModelRunner& runner);

}  // namespace benchfleet::worker
