// libFuzzer target: the decoder of the results agents post (JobResult: status, statistics,
// samples, OOM, memory, telemetry, environment) and the coordinator's ingest checks
// (common/result_checks.h). Properties: no crash, no exception, no sanitizer report; an accepted
// result survives encode + decode unchanged; a result the checks pass has finite, non-negative,
// ordered statistics.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <cmath>

#include "common/json_reader.h"
#include "common/result_checks.h"
#include "fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace benchfleet;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto parsed = parse_json(text);
  if (!parsed.ok()) return 0;
  fuzz::check_round_trip<JobResult>(*parsed, "JobResult");
  if (auto result = decode<JobResult>(*parsed);
      result.ok() && !check_posted_result(*result, "result") && result->stats) {
    const Statistics& s = *result->stats;
    for (double v : {s.mean_ms, s.median_ms, s.p90_ms, s.p99_ms, s.min_ms, s.max_ms, s.stddev_ms, s.cv}) {
      if (!std::isfinite(v) || v < 0) fuzz::fail("check_posted_result", "passed a non-finite or negative statistic");
    }
    if (!(s.min_ms <= s.median_ms && s.median_ms <= s.p90_ms && s.p90_ms <= s.p99_ms && s.p99_ms <= s.max_ms)) {
      fuzz::fail("check_posted_result", "passed unordered percentiles");
    }
  }
  fuzz::check_round_trip<Statistics>(*parsed, "Statistics");
  return 0;
}
