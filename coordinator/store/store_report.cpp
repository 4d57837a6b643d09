// Store: the cells a run's report is built from (docs/design.md §12).
#include "coordinator/store/result_columns.h"
#include "coordinator/store/rows.h"
#include "coordinator/store/store.h"

namespace benchfleet::store {
namespace {

// The columns after the job spec's, in this order. Every results column named here is in the
// results_cells index, so the join reads the index, never a result's row (its
// body can be large).
constexpr const char* kCellColumns =
    "j.status, r.id, r.status, r.mean_ms, r.median_ms, r.p90_ms, r.p99_ms, r.min_ms, r.max_ms, r.stddev_ms, r.cv,"
    " r.ci_low_ms, r.ci_high_ms, r.iterations, r.error, r.oom_phase, r.oom_bytes, r.signal, r.torch_version,"
    " r.accuracy, r.accuracy_error, r.accuracy_tolerance, r.compile_ms, r.compile_cache, r.peak_memory_bytes,"
    " r.recompiles, r.flags";
enum CellColumn : int {
  kJobStatus = kJobSpecColumns,
  kResultId,
  kResultStatus,
  kMeanMs,
  kMedianMs,
  kP90Ms,
  kP99Ms,
  kMinMs,
  kMaxMs,
  kStddevMs,
  kCv,
  kCiLowMs,
  kCiHighMs,
  kIterations,
  kError,
  kOomPhase,
  kOomBytes,
  kSignal,
  kTorchVersion,
  kAccuracy,
  kAccuracyError,
  kAccuracyTolerance,
  kCompileMs,
  kCompileCache,
  kPeakMemoryBytes,
  kRecompiles,
  kFlags,
};

report::CellResult cell_at(const Statement& s) {
  report::CellResult c;
  c.job = job_spec_at(s, 0);
  c.job_status = job_status_at(s, kJobStatus);
  if (s.is_null(kResultId)) return c;
  c.result_id = s.int64(kResultId);
  c.result_status = result_status_at(s, kResultStatus);
  if (*c.result_status == ResultStatus::kOk && !s.is_null(kMeanMs)) {
    Statistics st;
    st.mean_ms = s.real(kMeanMs);
    st.median_ms = s.real(kMedianMs);
    st.p90_ms = s.real(kP90Ms);
    st.p99_ms = s.real(kP99Ms);
    st.min_ms = s.real(kMinMs);
    st.max_ms = s.real(kMaxMs);
    st.stddev_ms = s.real(kStddevMs);
    st.cv = s.real(kCv);
    st.ci_low_ms = s.real(kCiLowMs);
    st.ci_high_ms = s.real(kCiHighMs);
    st.iterations = static_cast<int>(s.int64(kIterations));
    c.stats = st;
  }
  if (auto phase = s.opt_text(kOomPhase)) {
    c.detail = "phase=" + *phase;
    if (auto bytes = s.opt_int64(kOomBytes)) c.detail += " bytes=" + std::to_string(*bytes);
    if (auto msg = s.opt_text(kError)) c.detail += ": " + *msg;
  } else if (auto msg = s.opt_text(kError)) {
    c.detail = *msg;
  }
  // A crash's message already names its signal; say it only when there is no message.
  if (auto sig = s.opt_int64(kSignal); sig && c.detail.empty()) c.detail = "signal " + std::to_string(*sig);
  if (auto version = s.opt_text(kTorchVersion)) c.torch_version = std::move(*version);
  // Unknown verdict text (a newer writer) reads as no verdict rather than a wrong one.
  if (auto accuracy = s.opt_text(kAccuracy)) c.accuracy = parse_accuracy_verdict(*accuracy);
  c.accuracy_error = s.opt_real(kAccuracyError);
  c.accuracy_tolerance = s.opt_real(kAccuracyTolerance);
  c.compile_ms = s.opt_real(kCompileMs);
  c.compile_cache = s.opt_text(kCompileCache).value_or("");
  c.peak_memory_bytes = s.opt_int64(kPeakMemoryBytes);
  if (auto recompiles = s.opt_int64(kRecompiles)) c.recompiles = static_cast<int>(*recompiles);
  c.flags = split_flags(s.opt_text(kFlags).value_or(""));
  return c;
}

}  // namespace

Result<std::vector<report::CellResult>> Store::report_cells(std::int64_t run_id) {
  return group_.run([&]() -> Result<std::vector<report::CellResult>> {
    // One row per job; a job has at most one verdict (its job turns done when it arrives).
    BF_ASSIGN_OR_RETURN(auto s, db_->prepare("SELECT " + job_spec_columns("j") + ", " + kCellColumns +
                                             " FROM jobs j LEFT JOIN results r ON r.job_id = j.id"
                                             " WHERE j.run_id = ? ORDER BY j.id"));
    s->bind(1, run_id);
    std::vector<report::CellResult> cells;
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, s->step());
      if (!row) break;
      cells.push_back(cell_at(*s));
    }
    if (cells.empty()) {
      BF_ASSIGN_OR_RETURN(auto info, run_info_locked(run_id));  // not found -> error
      (void)info;
    }
    return cells;
  });
}

}  // namespace benchfleet::store
