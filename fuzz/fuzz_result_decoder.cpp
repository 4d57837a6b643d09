// libFuzzer target: the decoder of the results agents post (JobResult: status, statistics,
// samples, OOM, memory, telemetry, environment). Property: no crash, no exception, no sanitizer
// report; an accepted result survives encode + decode unchanged.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/json_reader.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace benchfleet;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = parse_json(text);
  if (!parsed.ok()) return 0;
  fuzz::check_round_trip<JobResult>(*parsed, "JobResult");
  fuzz::check_round_trip<Statistics>(*parsed, "Statistics");
  return 0;
}
