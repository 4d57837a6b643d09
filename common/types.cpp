#include "common/types.h"

#include <array>
#include <utility>

namespace benchfleet {
namespace {

template <class E, std::size_t N>
using NameTable = std::array<std::pair<E, std::string_view>, N>;

constexpr NameTable<JobStatus, 6> kJobStatusNames{{
    {JobStatus::kQueued, "queued"},
    {JobStatus::kLeased, "leased"},
    {JobStatus::kRunning, "running"},
    {JobStatus::kDone, "done"},
    {JobStatus::kFailed, "failed"},
    {JobStatus::kCancelled, "cancelled"},
}};
constexpr NameTable<ResultStatus, 8> kResultStatusNames{{
    {ResultStatus::kOk, "ok"},
    {ResultStatus::kOom, "oom"},
    {ResultStatus::kOomImplied, "oom_implied"},
    {ResultStatus::kError, "error"},
    {ResultStatus::kTimeout, "timeout"},
    {ResultStatus::kCrash, "crash"},
    {ResultStatus::kUnsupported, "unsupported"},
    {ResultStatus::kInvalid, "invalid"},
}};
constexpr NameTable<Mode, 6> kModeNames{{
    {Mode::kEager, "eager"},
    {Mode::kTorchscript, "torchscript"},
    {Mode::kDefault, "default"},
    {Mode::kReduceOverhead, "reduce-overhead"},
    {Mode::kMaxAutotune, "max-autotune"},
    {Mode::kMaxAutotuneNoCudagraphs, "max-autotune-no-cudagraphs"},
}};
constexpr NameTable<Runtime, 2> kRuntimeNames{{
    {Runtime::kLibtorch, "libtorch"},
    {Runtime::kPython, "python"},
}};
constexpr NameTable<OomPhase, 4> kOomPhaseNames{{
    {OomPhase::kLoad, "load"},
    {OomPhase::kCompile, "compile"},
    {OomPhase::kWarmup, "warmup"},
    {OomPhase::kMeasure, "measure"},
}};
constexpr NameTable<StopReason, 4> kStopReasonNames{{
    {StopReason::kFixedCount, "fixed_count"},
    {StopReason::kCiTarget, "ci_target"},
    {StopReason::kMaxIterations, "max_iterations"},
    {StopReason::kMaxTime, "max_time"},
}};

constexpr NameTable<Dtype, 4> kDtypeNames{{
    {Dtype::kFloat32, "float32"},
    {Dtype::kFloat16, "float16"},
    {Dtype::kBfloat16, "bfloat16"},
    {Dtype::kAmp, "amp"},
}};
constexpr NameTable<AccuracyVerdict, 4> kAccuracyVerdictNames{{
    {AccuracyVerdict::kPass, "pass"},
    {AccuracyVerdict::kWrong, "wrong"},
    {AccuracyVerdict::kEagerNondeterministic, "eager_nondeterministic"},
    {AccuracyVerdict::kUnchecked, "unchecked"},
}};

template <class E, std::size_t N>
std::string_view name_of(const NameTable<E, N>& table, E value) {
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  return "unknown";
}

template <class E, std::size_t N>
std::optional<E> value_of(const NameTable<E, N>& table, std::string_view name) {
  for (const auto& [v, n] : table) {
    if (n == name) return v;
  }
  return std::nullopt;
}

template <class E, std::size_t N>
std::vector<E> values_of(const NameTable<E, N>& table) {
  std::vector<E> out;
  for (const auto& entry : table) out.push_back(entry.first);
  return out;
}

}  // namespace

std::string_view to_string(JobStatus s) { return name_of(kJobStatusNames, s); }
std::string_view to_string(ResultStatus s) { return name_of(kResultStatusNames, s); }
std::string_view to_string(Mode m) { return name_of(kModeNames, m); }
std::string_view to_string(Runtime r) { return name_of(kRuntimeNames, r); }
std::string_view to_string(OomPhase p) { return name_of(kOomPhaseNames, p); }
std::string_view to_string(StopReason r) { return name_of(kStopReasonNames, r); }
std::string_view to_string(Dtype d) { return name_of(kDtypeNames, d); }
std::string_view to_string(AccuracyVerdict v) { return name_of(kAccuracyVerdictNames, v); }

std::optional<JobStatus> parse_job_status(std::string_view s) { return value_of(kJobStatusNames, s); }
std::optional<ResultStatus> parse_result_status(std::string_view s) { return value_of(kResultStatusNames, s); }
std::optional<Mode> parse_mode(std::string_view s) { return value_of(kModeNames, s); }
std::optional<Runtime> parse_runtime(std::string_view s) { return value_of(kRuntimeNames, s); }
std::optional<OomPhase> parse_oom_phase(std::string_view s) { return value_of(kOomPhaseNames, s); }
std::optional<StopReason> parse_stop_reason(std::string_view s) { return value_of(kStopReasonNames, s); }
std::optional<Dtype> parse_dtype(std::string_view s) { return value_of(kDtypeNames, s); }
std::optional<AccuracyVerdict> parse_accuracy_verdict(std::string_view s) { return value_of(kAccuracyVerdictNames, s); }

const std::vector<JobStatus>& all_job_statuses() {
  static const auto v = values_of(kJobStatusNames);
  return v;
}
const std::vector<ResultStatus>& all_result_statuses() {
  static const auto v = values_of(kResultStatusNames);
  return v;
}
const std::vector<Mode>& all_modes() {
  static const auto v = values_of(kModeNames);
  return v;
}
const std::vector<Runtime>& all_runtimes() {
  static const auto v = values_of(kRuntimeNames);
  return v;
}

const std::vector<Dtype>& all_dtypes() {
  static const auto v = values_of(kDtypeNames);
  return v;
}
const std::vector<AccuracyVerdict>& all_accuracy_verdicts() {
  static const auto v = values_of(kAccuracyVerdictNames);
  return v;
}

bool is_active(JobStatus s) { return s == JobStatus::kQueued || s == JobStatus::kLeased || s == JobStatus::kRunning; }

bool is_compiled(Mode m) { return m != Mode::kEager && m != Mode::kTorchscript; }

}  // namespace benchfleet
