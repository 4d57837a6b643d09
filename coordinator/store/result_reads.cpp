// ResultStore: what reads results: listings, one result with its samples, and the cells a run's
// report is built from (docs/design.md §12).
#include "coordinator/store/result_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <optional>
#include <string>

#include "coordinator/rules/ingest.h"
#include "coordinator/store/page.h"
#include "coordinator/store/rows.h"
#include "coordinator/store/run_store.h"
#include "coordinator/store/store_core.h"

namespace benchfleet::store {
namespace {

// The columns after the job spec's, in this order. Every results column named here is in the
// results_cells index, so the join reads the index, never a result's row (its
// body can be large).
constexpr const char* kCellColumns =
    "j.status, r.id, r.status, r.mean_ms, r.median_ms, r.p90_ms, r.p99_ms, r.min_ms, r.max_ms, r.stddev_ms, r.cv,"
    " r.ci_low_ms, r.ci_high_ms, r.iterations, r.error, r.oom_phase, r.oom_bytes, r.signal, r.torch_version,"
    " r.accuracy, r.accuracy_error, r.accuracy_tolerance, r.compile_ms, r.compile_cache, r.peak_memory_bytes,"
    " r.recompiles, r.flags, r.fingerprint";
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
  kFingerprint,
};

CellResult cell_at(const Statement& s) {
  CellResult c;
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
  c.flags = rules::split_flags(s.opt_text(kFlags).value_or(""));
  c.fingerprint = s.opt_text(kFingerprint).value_or("");
  return c;
}

}  // namespace

Result<std::vector<CellResult>> ResultStore::report_cells(std::int64_t run_id) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<std::vector<CellResult>> {
    // One row per job; a job has at most one verdict (its job turns done when it arrives).
    BF_ASSIGN_OR_RETURN(auto s, core_.db().prepare("SELECT " + job_spec_columns("j") + ", " + kCellColumns +
                                                   " FROM jobs j LEFT JOIN results r ON r.job_id = j.id"
                                                   " WHERE j.run_id = ? ORDER BY j.id"));
    s->bind(1, run_id);
    std::vector<CellResult> cells;
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, s->step());
      if (!row) break;
      cells.push_back(cell_at(*s));
    }
    if (cells.empty()) {
      BF_ASSIGN_OR_RETURN(auto info, runs_.run_info_locked(run_id));  // not found -> error
      (void)info;
    }
    return cells;
  });
}

namespace {

// The samples column (result_samples.samples_ms, or NULL when not asked for) follows the job
// spec's columns.
constexpr const char* kResultColumns =
    "r.id, r.job_id, r.run_id, r.attempt, r.body, a.name, r.slot, r.created_at, r.flags, ";
constexpr int kSpecColumn = 9;
constexpr int kSamplesColumn = kSpecColumn + kJobSpecColumns;

std::string result_select(bool with_samples) {
  return std::string("SELECT ") + kResultColumns + job_spec_columns("j") +
         (with_samples ? ", rs.samples_ms" : ", NULL") +
         " FROM results r JOIN jobs j ON j.id = r.job_id LEFT JOIN agents a ON a.id = r.agent_id" +
         (with_samples ? " LEFT JOIN result_samples rs ON rs.result_id = r.id" : "");
}

// A result's stored samples text read through an incremental blob handle on the store's own
// connection: its size first (a B-tree seek, the text not read), then the text only when it is
// wanted. nullopt size: the result has no samples row.
std::optional<std::size_t> samples_size_locked(sqlite3* db, std::int64_t result_id) {
  sqlite3_blob* blob = nullptr;
  if (sqlite3_blob_open(db, "main", "result_samples", "samples_ms", result_id, 0, &blob) != SQLITE_OK) {
    sqlite3_blob_close(blob);
    return std::nullopt;
  }
  const auto size = static_cast<std::size_t>(std::max(0, sqlite3_blob_bytes(blob)));
  sqlite3_blob_close(blob);
  return size;
}

Result<std::string> samples_text_locked(sqlite3* db, std::int64_t result_id, std::size_t size) {
  sqlite3_blob* blob = nullptr;
  if (sqlite3_blob_open(db, "main", "result_samples", "samples_ms", result_id, 0, &blob) != SQLITE_OK) {
    sqlite3_blob_close(blob);
    return Error::internal("cannot read the samples of result " + std::to_string(result_id));
  }
  std::string text(size, '\0');
  const int rc = sqlite3_blob_read(blob, text.data(), static_cast<int>(size), 0);
  sqlite3_blob_close(blob);
  if (rc != SQLITE_OK) return Error::internal("cannot read the samples of result " + std::to_string(result_id));
  return text;
}

// A result row as read under the store lock: its JSON still text, copied, not parsed. Parsing
// (up to 10^6 samples) waits until the lock is released, so a big read never stalls agents.
struct RawResultRow {
  ResultRow row;
  std::string body;
  std::optional<std::string> samples;
};

RawResultRow raw_result_at(const Statement& s) {
  RawResultRow raw;
  raw.row.id = s.int64(0);
  raw.row.job_id = s.int64(1);
  raw.row.run_id = s.int64(2);
  raw.row.attempt = static_cast<int>(s.int64(3));
  raw.body = s.text(4);
  raw.row.agent_name = s.opt_text(5);
  raw.row.slot = s.opt_text(6);
  raw.row.created_at = s.int64(7);
  raw.row.flags = rules::split_flags(s.opt_text(8).value_or(""));
  raw.row.spec = job_spec_at(s, kSpecColumn);
  raw.samples = s.opt_text(kSamplesColumn);
  return raw;
}

// REQUIRES: the store lock is not held (this is the expensive part of a read).
ResultRow decode_result_row(RawResultRow raw) {
  ResultRow row = std::move(raw.row);
  const auto body = nlohmann::json::parse(raw.body, nullptr, false);
  auto parsed = decode_result_without_samples(body);
  row.samples_json = std::move(raw.samples);
  if (parsed.ok()) {
    row.result = std::move(*parsed);
  } else {
    row.result.status = ResultStatus::kInvalid;
    row.result.error = "stored result could not be decoded: " + parsed.error().describe();
  }
  return row;
}

}  // namespace

Result<Page<ResultRow>> ResultStore::list_results(std::int64_t run_id, const ResultFilter& f,
                                                  std::optional<std::int64_t> after_id, int limit, bool with_samples) {
  std::vector<RawResultRow> raw;
  bool cut_by_bytes = false;
  // The read runs under the store lock; parsing the bodies waits until it is released.
  Status read = core_.run([&]() BF_REQUIRES(core_.lock()) -> Status {
    {
      BF_ASSIGN_OR_RETURN(auto exists, core_.db().query_one("SELECT 1 FROM runs WHERE id = ?", run_id));
      if (!exists.found()) return Error::not_found("run " + std::to_string(run_id) + " does not exist");
    }
    // A NULL parameter means "no filter" on that column.
    BF_ASSIGN_OR_RETURN(
        auto s,
        core_.db().prepare(
            result_select(/*with_samples=*/false) +
            " WHERE r.run_id = ? AND r.id > ?"
            " AND (?3 IS NULL OR j.model = ?3) AND (?4 IS NULL OR j.mode = ?4) AND (?5 IS NULL OR j.torch_build = ?5)"
            " AND (?6 IS NULL OR j.gpu_class = ?6) AND (?7 IS NULL OR j.runtime = ?7) AND (?8 IS NULL OR r.status = ?8)"
            " AND (?9 IS NULL OR j.batch = ?9) AND (?11 IS NULL OR j.dtype = ?11)"
            " ORDER BY r.id LIMIT ?10"));
    s->bind(1, run_id).bind(2, after_id.value_or(0));
    s->bind(3, f.model).bind(4, f.mode).bind(5, f.torch_build).bind(6, f.gpu).bind(7, f.runtime).bind(8, f.status);
    s->bind(9, f.batch).bind(10, limit + 1).bind(11, f.dtype);
    std::size_t samples_bytes = 0;
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, s->step());
      if (!row) break;
      RawResultRow next = raw_result_at(*s);
      if (with_samples) {
        // Each result's samples size first (their text is not read for it): one more than a
        // page holds on its own is left out, the page staying within its bound (the result's
        // own read streams them); one that would take the page past it starts the next page.
        const std::optional<std::size_t> bytes = samples_size_locked(core_.db().handle(), next.row.id);
        if (bytes && *bytes > ResultStore::kSamplesPageBytes) {
          next.row.samples_omitted = true;
        } else if (bytes) {
          if (!raw.empty() && samples_bytes + *bytes > ResultStore::kSamplesPageBytes) {
            cut_by_bytes = true;  // the page ends before `next`, which the next page starts with
            break;
          }
          BF_ASSIGN_OR_RETURN(std::string text, samples_text_locked(core_.db().handle(), next.row.id, *bytes));
          next.samples = std::move(text);
          samples_bytes += *bytes;
        }
      }
      raw.push_back(std::move(next));
    }
    return Status::Ok();
  });
  BF_RETURN_IF_ERROR(read);
  Page<RawResultRow> raw_page = keyset_page(std::move(raw), limit, [](const RawResultRow& r) { return r.row.id; });
  if (cut_by_bytes) raw_page.next_cursor = raw_page.items.back().row.id;
  Page<ResultRow> page;
  page.next_cursor = raw_page.next_cursor;
  page.items.reserve(raw_page.items.size());
  for (auto& r : raw_page.items) page.items.push_back(decode_result_row(std::move(r)));
  return page;
}

Result<ResultRow> ResultStore::get_result(std::int64_t result_id, bool with_samples) {
  auto raw = core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<RawResultRow> {
    BF_ASSIGN_OR_RETURN(auto s, core_.db().query_one(result_select(with_samples) + " WHERE r.id = ?", result_id));
    if (!s.found()) return Error::not_found("result " + std::to_string(result_id) + " does not exist");
    return raw_result_at(*s);
  });
  if (!raw.ok()) return raw.error();
  return decode_result_row(std::move(*raw));
}

}  // namespace benchfleet::store
