// ResultStore: a lease holder's verdict (ResultStore::record_result), stored once per attempt.
#include "coordinator/store/result_store.h"

#include <algorithm>
#include <optional>
#include <string>

#include "common/codecs.h"
#include "coordinator/rules/ingest.h"
#include "coordinator/store/rows.h"
#include "coordinator/store/series_store.h"
#include "coordinator/store/store_core.h"

namespace benchfleet::store {

Result<RecordOutcome> ResultStore::record_result(std::int64_t agent_id, const LeaseRef& lease, int attempt,
                                                 const JobResult& result, TimestampMs arrived_at) {
  // Its form is checked (and its statistics recomputed) before the lock is taken. The digest
  // covers the whole result; the row's body leaves the samples out: they go to result_samples,
  // which listings never read.
  BF_ASSIGN_OR_RETURN(const rules::PostedBody posted, rules::accept_posted(result));
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<RecordOutcome> {
    {
      BF_ASSIGN_OR_RETURN(auto prior,
                          core_.db().query_one("SELECT r.id, r.body_sha256, r.agent_id, a.lease_id FROM results r"
                                               " LEFT JOIN attempts a ON a.job_id = r.job_id AND a.attempt = "
                                               "r.attempt WHERE r.job_id = ? AND r.attempt = ?",
                                               lease.job_id, attempt));
      if (prior.found()) {
        // Only the holder of that attempt's lease learns about the stored result (a retry after a
        // lost acknowledgement); anyone else is told its lease is not current.
        const bool same_holder = prior->opt_int64(2) == agent_id && prior->opt_text(3) == lease.lease_id;
        return RecordOutcome{!same_holder                      ? RecordKind::kLost
                             : prior->text(1) == posted.digest ? RecordKind::kDuplicate
                                                               : RecordKind::kMismatch,
                             same_holder ? prior->int64(0) : 0, 0};
      }
    }

    BF_ASSIGN_OR_RETURN(std::optional<StoreCore::HeldLease> held, core_.held_lease_locked(agent_id, lease, attempt));
    if (!held) return RecordOutcome{RecordKind::kNotFound, 0, 0};
    if (held->state == LeaseState::kCancelled) return RecordOutcome{RecordKind::kCancelled, 0, 0};
    if (held->state != LeaseState::kActive) return RecordOutcome{RecordKind::kLost, 0, 0};
    const TimestampMs now = core_.clock().now_ms();
    // As of the post's arrival: a result that came in time is never refused for the store's queue.
    if (held->expires_at <= (arrived_at > 0 ? std::min(arrived_at, now) : now)) {
      BF_RETURN_IF_ERROR(core_.requeue_or_fail(lease.job_id, attempt, held->max_attempts, held->run_id, "expired"));
      return RecordOutcome{RecordKind::kLost, 0, 0};
    }
    // What the result becomes is decided by the ingest rule from the job and its run: refused
    // (400) before anything is written, or the plan written below.
    JobSpec job;
    {
      BF_ASSIGN_OR_RETURN(
          auto row,
          core_.db().query_one("SELECT " + job_spec_columns("jobs") + " FROM jobs WHERE id = ?", lease.job_id));
      if (!row.found()) return RecordOutcome{RecordKind::kNotFound, 0, 0};
      job = job_spec_at(*row, 0);
    }
    BF_ASSIGN_OR_RETURN(const MatrixSpec run_spec, core_.run_spec_locked(held->run_id));
    BF_ASSIGN_OR_RETURN(const rules::IngestPlan plan, rules::plan_ingest(result, job, run_spec));
    const rules::ResultColumns& columns = plan.columns;
    {
      BF_ASSIGN_OR_RETURN(
          auto ins,
          core_.db().prepare(
              "INSERT INTO results (job_id, run_id, attempt, status, mean_ms, median_ms, p90_ms, p99_ms, min_ms, "
              "max_ms,"
              " stddev_ms, cv, ci_low_ms, ci_high_ms, iterations, first_call_ms, stop_reason, export_s, oom_phase,"
              " oom_bytes, error, signal, body, body_sha256, agent_id, slot, created_at, torch_version, accuracy,"
              " accuracy_error, accuracy_tolerance, compile_ms, compile_cache, peak_memory_bytes, recompiles, flags,"
              " fingerprint)"
              " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21,"
              " ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35, ?36, ?37)"));
      ins->bind(1, lease.job_id).bind(2, held->run_id).bind(3, attempt).bind(4, to_string(result.status));
      if (result.stats) {
        const auto& st = *result.stats;
        ins->bind(5, st.mean_ms).bind(6, st.median_ms).bind(7, st.p90_ms).bind(8, st.p99_ms).bind(9, st.min_ms);
        ins->bind(10, st.max_ms).bind(11, st.stddev_ms).bind(12, st.cv).bind(13, st.ci_low_ms);
        ins->bind(14, st.ci_high_ms).bind(15, st.iterations);
      }
      ins->bind(16, result.first_call_ms);
      if (result.stop_reason) ins->bind(17, to_string(*result.stop_reason));
      ins->bind(18, result.export_s);
      if (result.oom) ins->bind(19, to_string(result.oom->phase)).bind(20, result.oom->bytes_requested);
      ins->bind(21, result.error).bind(22, result.signal).bind(23, posted.body).bind(24, posted.digest);
      ins->bind(25, agent_id);
      ins->bind(26, held->slot).bind(27, now).bind(28, plan.torch_version);
      ins->bind(29, columns.accuracy).bind(30, columns.accuracy_error).bind(31, columns.accuracy_tolerance);
      ins->bind(32, columns.compile_ms).bind(33, columns.compile_cache).bind(34, columns.peak_memory_bytes);
      ins->bind(35, columns.recompiles).bind(36, columns.flags).bind(37, plan.fingerprint);
      BF_RETURN_IF_ERROR(ins->run());
    }
    RecordOutcome out{RecordKind::kStored, core_.db().last_insert_rowid(), 0};
    if (!result.samples_ms.empty()) {
      BF_RETURN_IF_ERROR(core_.db().run("INSERT INTO result_samples (result_id, samples_ms) VALUES (?, ?)",
                                        out.result_id, posted.samples));
    }
    BF_RETURN_IF_ERROR(core_.db().run(
        "UPDATE jobs SET status = 'done', finished_at = ?, updated_at = ?, lease_id = NULL, lease_expires_at = NULL"
        " WHERE id = ?",
        now, now, lease.job_id));
    BF_RETURN_IF_ERROR(core_.end_attempt(lease.job_id, attempt, "result"));
    // The result's point in its series, in the same transaction.
    std::optional<std::pair<std::string, std::int64_t>> new_series;
    if (plan.series_point) {
      BF_ASSIGN_OR_RETURN(new_series,
                          series_.add_series_point_locked({job, out.result_id, held->run_id, now, *plan.series_point}));
    }
    if (plan.implies_oom) {
      BF_ASSIGN_OR_RETURN(out.implied_oom, core_.mark_implied_oom(held->run_id, lease.job_id));
    }
    BF_RETURN_IF_ERROR(core_.update_run_finished(held->run_id));
    // Kept only now that the operation succeeded (its savepoint stays); a failed commit of the
    // group forgets it (on_group_decided).
    if (new_series) core_.series_ids().insert(std::move(*new_series));
    return out;
  });
}

}  // namespace benchfleet::store
