// libFuzzer target: the JSON reader (depth-limited parse) and the validating decoders of what the
// coordinator accepts from clients and agents (matrices, job specs, agent descriptors, worker
// jobs). Property: no crash, no exception, no sanitizer report; every accepted value survives
// encode + decode unchanged.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/json_reader.h"
#include "common/worker_job.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace benchfleet;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = parse_json(text);
  if (!parsed.ok()) return 0;
  fuzz::check_round_trip<MatrixSpec>(*parsed, "MatrixSpec");
  fuzz::check_round_trip<JobSpec>(*parsed, "JobSpec");
  fuzz::check_round_trip<AgentDescriptor>(*parsed, "AgentDescriptor");
  fuzz::check_round_trip<MeasurementSpec>(*parsed, "MeasurementSpec");
  fuzz::check_round_trip<WorkerJob>(*parsed, "WorkerJob");
  return 0;
}
