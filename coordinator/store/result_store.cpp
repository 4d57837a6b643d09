// ResultStore: a lease holder's verdict (ResultStore::record_result), stored once per attempt.
#include "coordinator/store/result_store.h"

#include <algorithm>
#include <optional>
#include <string>

#include "common/codecs.h"
#include "common/result_checks.h"
#include "coordinator/rules/change_rule.h"
#include "coordinator/rules/fingerprint_diff.h"
#include "coordinator/rules/tokens.h"
#include "coordinator/store/history_store.h"
#include "coordinator/store/result_columns.h"
#include "coordinator/store/rows.h"
#include "coordinator/store/store_core.h"

namespace benchfleet::store {
namespace {

// The fingerprint's torch version (reports name it in their headers); nullopt when the result
// recorded none, as verdicts given before torch ran do.
std::optional<std::string> recorded_torch_version(const JobResult& result) {
  auto it = result.environment.find("torch_version");
  if (it == result.environment.end() || !it->is_string()) return std::nullopt;
  std::string version = it->get<std::string>();
  if (version.empty()) return std::nullopt;
  return version;
}

// The fingerprint's torch git hash, when it recorded one.
std::optional<std::string> recorded_torch_git(const JobResult& result) {
  auto it = result.environment.find("torch_git");
  if (it == result.environment.end() || !it->is_string() || it->get_ref<const std::string&>().empty()) {
    return std::nullopt;
  }
  return it->get<std::string>();
}

}  // namespace

Result<RecordOutcome> ResultStore::record_result(std::int64_t agent_id, const LeaseRef& lease, int attempt,
                                                 const JobResult& result, TimestampMs arrived_at) {
  // The digest covers the whole result; the row's body leaves the samples out: they go to
  // result_samples, which listings never read.
  nlohmann::json body_json = result;
  const std::string digest = rules::sha256_hex(body_json.dump());
  const std::string samples = body_json["samples_ms"].dump();
  body_json.erase("samples_ms");
  const std::string body = body_json.dump();
  return core_.group.run([&]() -> Result<RecordOutcome> {
    {
      BF_ASSIGN_OR_RETURN(auto prior,
                          core_.db->query_one("SELECT r.id, r.body_sha256, r.agent_id, a.lease_id FROM results r"
                                              " LEFT JOIN attempts a ON a.job_id = r.job_id AND a.attempt = "
                                              "r.attempt WHERE r.job_id = ? AND r.attempt = ?",
                                              lease.job_id, attempt));
      if (prior.found()) {
        // Only the holder of that attempt's lease learns about the stored result (a retry after a
        // lost acknowledgement); anyone else is told its lease is not current.
        const bool same_holder = prior->opt_int64(2) == agent_id && prior->opt_text(3) == lease.lease_id;
        return RecordOutcome{!same_holder               ? RecordKind::kLost
                             : prior->text(1) == digest ? RecordKind::kDuplicate
                                                        : RecordKind::kMismatch,
                             same_holder ? prior->int64(0) : 0, 0};
      }
    }

    BF_ASSIGN_OR_RETURN(std::optional<StoreCore::HeldLease> held, core_.held_lease_locked(agent_id, lease, attempt));
    if (!held) return RecordOutcome{RecordKind::kNotFound, 0, 0};
    if (held->state == LeaseState::kCancelled) return RecordOutcome{RecordKind::kCancelled, 0, 0};
    if (held->state != LeaseState::kActive) return RecordOutcome{RecordKind::kLost, 0, 0};
    const TimestampMs now = core_.clock.now_ms();
    // As of the post's arrival: a result that came in time is never refused for the store's queue.
    if (held->expires_at <= (arrived_at > 0 ? std::min(arrived_at, now) : now)) {
      BF_RETURN_IF_ERROR(core_.requeue_or_fail(lease.job_id, attempt, held->max_attempts, held->run_id, "expired"));
      return RecordOutcome{RecordKind::kLost, 0, 0};
    }
    // The columns reports read need the job's mode and runtime and the run's
    // noise thresholds.
    JobSpec job;
    {
      BF_ASSIGN_OR_RETURN(
          auto row,
          core_.db->query_one("SELECT " + job_spec_columns("jobs") + " FROM jobs WHERE id = ?", lease.job_id));
      if (!row.found()) return RecordOutcome{RecordKind::kNotFound, 0, 0};
      job = job_spec_at(*row, 0);
    }
    BF_ASSIGN_OR_RETURN(const MatrixSpec run_spec, core_.run_spec_locked(held->run_id));
    // Claims the job's own spec refutes are refused before anything is written (400).
    const ResultJob judged{job.mode, job.dtype, rules::device_kind_of(job.gpu) != "cpu", run_spec.measurement};
    if (auto err = check_result_for_job(result, judged, "result")) return *err;
    const ResultColumns columns = result_columns(job, result, run_spec.noise, run_spec.measurement.target_ci_rel_width);
    {
      BF_ASSIGN_OR_RETURN(
          auto ins,
          core_.db->prepare(
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
      ins->bind(21, result.error).bind(22, result.signal).bind(23, body).bind(24, digest).bind(25, agent_id);
      ins->bind(26, held->slot).bind(27, now).bind(28, recorded_torch_version(result));
      ins->bind(29, columns.accuracy).bind(30, columns.accuracy_error).bind(31, columns.accuracy_tolerance);
      ins->bind(32, columns.compile_ms).bind(33, columns.compile_cache).bind(34, columns.peak_memory_bytes);
      ins->bind(35, columns.recompiles).bind(36, columns.flags).bind(37, rules::speed_fingerprint(result.environment));
      BF_RETURN_IF_ERROR(ins->run());
    }
    RecordOutcome out{RecordKind::kStored, core_.db->last_insert_rowid(), 0};
    if (!result.samples_ms.empty()) {
      BF_RETURN_IF_ERROR(
          core_.db->run("INSERT INTO result_samples (result_id, samples_ms) VALUES (?, ?)", out.result_id, samples));
    }
    BF_RETURN_IF_ERROR(core_.db->run(
        "UPDATE jobs SET status = 'done', finished_at = ?, updated_at = ?, lease_id = NULL, lease_expires_at = NULL"
        " WHERE id = ?",
        now, now, lease.job_id));
    BF_RETURN_IF_ERROR(core_.end_attempt(lease.job_id, attempt, "result"));
    // The result's point in its series, in the same transaction.
    std::optional<std::pair<std::string, std::int64_t>> new_series;
    if (HistoryStore::has_series_point(result.status)) {
      HistoryStore::NewPoint point;
      point.job = job;
      point.result_id = out.result_id;
      point.run_id = held->run_id;
      point.status = result.status;
      if (result.stats) {
        point.median_ms = result.stats->median_ms;
        point.ci_low_ms = result.stats->ci_low_ms;
        point.ci_high_ms = result.stats->ci_high_ms;
      }
      point.torch_version = recorded_torch_version(result);
      point.torch_git = recorded_torch_git(result);
      point.recorded_at = now;
      point.flags = columns.flags;
      point.accuracy = columns.accuracy;
      BF_ASSIGN_OR_RETURN(new_series, history_.add_series_point_locked(point));
    }
    if (result.status == ResultStatus::kOom) {
      BF_ASSIGN_OR_RETURN(out.implied_oom, core_.mark_implied_oom(held->run_id, lease.job_id));
    }
    BF_RETURN_IF_ERROR(core_.update_run_finished(held->run_id));
    // Kept only now that the operation succeeded (its savepoint stays); a failed commit of the
    // group forgets it (on_group_decided).
    if (new_series) core_.series_ids.insert(std::move(*new_series));
    return out;
  });
}

}  // namespace benchfleet::store
