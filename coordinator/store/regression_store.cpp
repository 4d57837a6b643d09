// RegressionStore: the changes the detector confirmed (regressions, improvements), their states, and the
// webhook deliveries they owe. The detector's pass: series_store.cpp.
#include "coordinator/store/regression_store.h"

#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/store/store_core.h"

namespace benchfleet::store {
namespace {

// A regression with its series' key and its two points; read by regression_at.
constexpr const char* kRegressionSelect =
    "SELECT g.id, g.series_id, s.model, s.batch, s.mode, s.dtype, s.runtime, s.gpu_class, s.torch_build,"
    " g.direction, g.state, g.before_median_ms, g.after_median_ms, g.ratio, g.p_value, g.baseline_runs,"
    " g.confirm_runs, g.detected_at, g.acknowledged_at, g.resolved_at, g.note,"
    " b.id, b.result_id, b.run_id, b.torch_version, b.torch_git, b.recorded_at, b.median_ms,"
    " l.id, l.result_id, l.run_id, l.torch_version, l.torch_git, l.recorded_at, l.median_ms"
    " FROM regressions g";
constexpr const char* kRegressionJoins =
    " JOIN series s ON s.id = g.series_id JOIN series_points b ON b.id = g.first_bad_point"
    " LEFT JOIN series_points l ON l.id = g.last_good_point";
constexpr int kFirstBad = 21;
constexpr int kLastGood = 28;

PointRef point_ref_at(const Statement& s, int c) {
  PointRef p;
  p.point_id = s.int64(c);
  p.result_id = s.int64(c + 1);
  p.run_id = s.int64(c + 2);
  p.torch_version = s.opt_text(c + 3);
  p.torch_git = s.opt_text(c + 4);
  p.recorded_at = s.int64(c + 5);
  p.median_ms = s.opt_real(c + 6);
  return p;
}

RegressionInfo regression_at(const Statement& s) {
  RegressionInfo r;
  r.id = s.int64(0);
  r.series_id = s.int64(1);
  r.key.model = s.text(2);
  r.key.batch = static_cast<int>(s.int64(3));
  r.key.mode = parse_mode(s.text(4)).value_or(Mode::kEager);
  r.key.dtype = parse_dtype(s.text(5)).value_or(Dtype::kFloat32);
  r.key.runtime = parse_runtime(s.text(6)).value_or(Runtime::kLibtorch);
  r.key.gpu = s.text(7);
  r.key.torch_build = s.text(8);
  r.direction = s.text(9) == "improvement" ? rules::ChangeDirection::kImprovement : rules::ChangeDirection::kRegression;
  r.state = parse_regression_state(s.text(10)).value_or(RegressionState::kOpen);
  r.before_median_ms = s.real(11);
  r.after_median_ms = s.real(12);
  r.ratio = s.real(13);
  r.p_value = s.real(14);
  r.baseline_runs = static_cast<int>(s.int64(15));
  r.confirm_runs = static_cast<int>(s.int64(16));
  r.detected_at = s.int64(17);
  r.acknowledged_at = s.opt_int64(18);
  r.resolved_at = s.opt_int64(19);
  r.note = s.opt_text(20);
  r.first_bad = point_ref_at(s, kFirstBad);
  if (!s.is_null(kLastGood)) r.last_good = point_ref_at(s, kLastGood);
  return r;
}

std::string_view direction_name(rules::ChangeDirection d) {
  return d == rules::ChangeDirection::kRegression ? "regression" : "improvement";
}

// Whether set_regression_state may take a regression from `from` to `to` (a different state):
// anything may be resolved or reopened (a resolved one, or an acknowledgement taken back); only
// an open one may be acknowledged.
bool may_move(RegressionState from, RegressionState to) {
  return to != RegressionState::kAcknowledged || from == RegressionState::kOpen;
}

}  // namespace

Result<RegressionInfo> RegressionStore::regression_info_locked(std::int64_t regression_id) {
  core_.assert_held();  // called from other stores' operations too
  BF_ASSIGN_OR_RETURN(
      auto s,
      core_.db().query_one(std::string(kRegressionSelect) + kRegressionJoins + " WHERE g.id = ?", regression_id));
  if (!s.found()) return Error::not_found("regression " + std::to_string(regression_id) + " does not exist");
  return regression_at(*s);
}

Result<Page<RegressionInfo>> RegressionStore::list_regressions(const RegressionFilter& f,
                                                               std::optional<std::int64_t> before_id, int limit) {
  // Newest first along the index the filter names, so a page reads only the rows it returns (and
  // those a series' own filter passes over): the series' regressions, a state's (of a direction,
  // or of both), a direction's, or all of them.
  std::string from;
  if (f.series_id) {
    from = " INDEXED BY regressions_series";
  } else if (f.state && f.direction) {
    from = " INDEXED BY regressions_state";
  } else if (f.state) {
    from = " INDEXED BY regressions_by_state";
  } else if (f.direction) {
    from = " INDEXED BY regressions_by_direction";
  }
  const std::string sql = std::string(kRegressionSelect) + from + kRegressionJoins + " WHERE g.id < ?1" +
                          (f.series_id ? " AND g.series_id = ?2" : "") + (f.state ? " AND g.state = ?3" : "") +
                          (f.direction ? " AND g.direction = ?4" : "") + " ORDER BY g.id DESC LIMIT ?5";
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<Page<RegressionInfo>> {
    BF_ASSIGN_OR_RETURN(auto s, core_.db().prepare(sql));
    s->bind(1, before_id.value_or(std::numeric_limits<std::int64_t>::max())).bind(5, limit + 1);
    if (f.series_id) s->bind(2, *f.series_id);
    if (f.state) s->bind(3, to_string(*f.state));
    if (f.direction) s->bind(4, direction_name(*f.direction));
    std::vector<RegressionInfo> rows;
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, s->step());
      if (!row) break;
      rows.push_back(regression_at(*s));
    }
    return keyset_page(std::move(rows), limit, [](const RegressionInfo& r) { return r.id; });
  });
}

Result<RegressionInfo> RegressionStore::get_regression(std::int64_t regression_id) {
  return core_.run(
      [&]() BF_REQUIRES(core_.lock()) -> Result<RegressionInfo> { return regression_info_locked(regression_id); });
}

Result<RegressionInfo> RegressionStore::set_regression_state(std::int64_t regression_id, RegressionState state,
                                                             const std::optional<std::string>& note) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<RegressionInfo> {
    BF_ASSIGN_OR_RETURN(RegressionInfo info, regression_info_locked(regression_id));
    if (info.state != state && !may_move(info.state, state)) {
      return Error::conflict("regression " + std::to_string(regression_id) + " is " +
                             std::string(to_string(info.state)) + ": it cannot become " +
                             std::string(to_string(state)));
    }
    const TimestampMs now = core_.clock().now_ms();
    if (info.state != state) {
      // Reopening forgets the acknowledgement and the resolution; the others stamp their time.
      BF_RETURN_IF_ERROR(core_.db().run(
          "UPDATE regressions SET state = ?1,"
          " acknowledged_at = CASE ?1 WHEN 'acknowledged' THEN ?2 WHEN 'open' THEN NULL ELSE acknowledged_at END,"
          " resolved_at = CASE ?1 WHEN 'resolved' THEN ?2 ELSE NULL END WHERE id = ?3",
          to_string(state), now, regression_id));
    }
    if (note) BF_RETURN_IF_ERROR(core_.db().run("UPDATE regressions SET note = ? WHERE id = ?", *note, regression_id));
    return regression_info_locked(regression_id);
  });
}

Result<std::vector<AlertDelivery>> RegressionStore::due_alerts(TimestampMs now, int limit) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<std::vector<AlertDelivery>> {
    BF_ASSIGN_OR_RETURN(auto s,
                        core_.db().prepare("SELECT id, regression_id, event, body, attempts FROM alert_deliveries"
                                           " WHERE delivered_at IS NULL AND failed_at IS NULL AND next_attempt_at <= ?"
                                           " ORDER BY next_attempt_at, id LIMIT ?"));
    s->bind(1, now).bind(2, limit);
    std::vector<AlertDelivery> out;
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, s->step());
      if (!row) break;
      out.push_back({s->int64(0), s->int64(1), s->text(2), s->text(3), static_cast<int>(s->int64(4))});
    }
    return out;
  });
}

Result<std::optional<TimestampMs>> RegressionStore::next_alert_due() {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<std::optional<TimestampMs>> {
    BF_ASSIGN_OR_RETURN(auto s, core_.db().query_one("SELECT MIN(next_attempt_at) FROM alert_deliveries"
                                                     " WHERE delivered_at IS NULL AND failed_at IS NULL"));
    return s.found() ? s->opt_int64(0) : std::nullopt;
  });
}

Status RegressionStore::alert_delivered(std::int64_t delivery_id, TimestampMs at) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Status {
    BF_RETURN_IF_ERROR(
        core_.db().run("UPDATE alert_deliveries SET delivered_at = ?, attempts = attempts + 1, last_error = NULL"
                       " WHERE id = ? AND delivered_at IS NULL AND failed_at IS NULL",
                       at, delivery_id));
    if (core_.db().changes() == 0) {
      return Error::not_found("alert delivery " + std::to_string(delivery_id) + " does not exist or is not pending");
    }
    return Status::Ok();
  });
}

Status RegressionStore::alert_attempt_failed(std::int64_t delivery_id, const std::string& error,
                                             std::optional<TimestampMs> retry_at) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Status {
    // Given up (no retry): failed_at takes the attempt's time; next_attempt_at stays as it was.
    BF_RETURN_IF_ERROR(
        core_.db().run("UPDATE alert_deliveries SET attempts = attempts + 1, last_error = ?1,"
                       " next_attempt_at = IFNULL(?2, next_attempt_at), failed_at = CASE WHEN ?2 IS NULL THEN ?3 END"
                       " WHERE id = ?4 AND delivered_at IS NULL AND failed_at IS NULL",
                       error, retry_at, core_.clock().now_ms(), delivery_id));
    if (core_.db().changes() == 0) {
      return Error::not_found("alert delivery " + std::to_string(delivery_id) + " does not exist or is not pending");
    }
    return Status::Ok();
  });
}

}  // namespace benchfleet::store
