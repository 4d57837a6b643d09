// SeriesStore: series (one per matrix cell across runs) and their points, and the change detector's
// pass over them. Regressions and alerts: regression_store.cpp.
#include "coordinator/store/series_store.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "common/codecs.h"
#include "coordinator/rules/ingest.h"
#include "coordinator/store/regression_store.h"
#include "coordinator/store/rows.h"
#include "coordinator/store/store_core.h"

namespace benchfleet::store {
namespace {

// core_.series_ids's key: the series key's columns, joined by a separator no name holds.
std::string series_key_text(const JobSpec& job) {
  const std::string batch = std::to_string(job.batch);
  std::string key = job.model;
  for (std::string_view part : {std::string_view(batch), to_string(job.mode), to_string(job.dtype),
                                to_string(job.runtime), std::string_view(job.gpu), std::string_view(job.torch_build)}) {
    key += '\x1f';
    key += part;
  }
  return key;
}

// The series columns series_at reads, then the last point's and the open regressions' count.
constexpr const char* kSeriesSelect =
    "SELECT s.id, s.model, s.batch, s.mode, s.dtype, s.runtime, s.gpu_class, s.torch_build, s.points,"
    " s.last_point_at, p.median_ms, p.torch_version, p.status,"
    " (SELECT COUNT(*) FROM regressions g WHERE g.series_id = s.id AND g.direction = 'regression'"
    "  AND g.state IN ('open', 'acknowledged'))"
    " FROM series s LEFT JOIN series_points p ON p.id = (SELECT l.id FROM series_points l WHERE l.series_id = s.id"
    "  ORDER BY l.version_key DESC, l.recorded_at DESC, l.id DESC LIMIT 1)";

SeriesInfo series_at(const Statement& s) {
  SeriesInfo info;
  info.id = s.int64(0);
  info.key.model = s.text(1);
  info.key.batch = static_cast<int>(s.int64(2));
  info.key.mode = parse_mode(s.text(3)).value_or(Mode::kEager);
  info.key.dtype = parse_dtype(s.text(4)).value_or(Dtype::kFloat32);
  info.key.runtime = parse_runtime(s.text(5)).value_or(Runtime::kLibtorch);
  info.key.gpu = s.text(6);
  info.key.torch_build = s.text(7);
  info.points = s.int64(8);
  info.last_point_at = s.opt_int64(9);
  info.last_median_ms = s.opt_real(10);
  info.last_torch_version = s.opt_text(11);
  if (auto status = s.opt_text(12)) info.last_status = parse_result_status(*status).value_or(ResultStatus::kInvalid);
  info.open_regressions = s.int64(13);
  return info;
}

SeriesPoint point_at(const Statement& s) {
  SeriesPoint p;
  p.id = s.int64(0);
  p.result_id = s.int64(1);
  p.run_id = s.int64(2);
  p.status = parse_result_status(s.text(3)).value_or(ResultStatus::kInvalid);
  p.median_ms = s.opt_real(4);
  p.ci_low_ms = s.opt_real(5);
  p.ci_high_ms = s.opt_real(6);
  p.torch_version = s.opt_text(7);
  p.torch_git = s.opt_text(8);
  p.recorded_at = s.int64(9);
  p.flags = rules::split_flags(s.opt_text(10).value_or(""));
  p.accuracy = s.opt_text(11);
  return p;
}

std::string_view direction_name(rules::ChangeDirection d) {
  return d == rules::ChangeDirection::kRegression ? "regression" : "improvement";
}

}  // namespace

Result<std::optional<std::pair<std::string, std::int64_t>>> SeriesStore::add_series_point_locked(const NewPoint& p) {
  core_.assert_held();  // called from other stores' operations too
  std::optional<std::pair<std::string, std::int64_t>> uncached;
  std::string key = series_key_text(p.job);
  std::int64_t series_id = 0;
  if (auto it = core_.series_ids().find(key); it != core_.series_ids().end()) {
    series_id = it->second;
    BF_RETURN_IF_ERROR(core_.db().run(
        "UPDATE series SET points = points + 1, last_point_at = MAX(IFNULL(last_point_at, 0), ?1) WHERE id = ?2",
        p.recorded_at, series_id));
  } else {
    BF_ASSIGN_OR_RETURN(
        auto row,
        core_.db().query_one(
            "INSERT INTO series (model, batch, mode, dtype, runtime, gpu_class, torch_build, points, last_point_at)"
            " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 1, ?8)"
            " ON CONFLICT (model, batch, mode, dtype, runtime, gpu_class, torch_build) DO UPDATE SET"
            " points = points + 1, last_point_at = MAX(IFNULL(last_point_at, 0), excluded.last_point_at)"
            " RETURNING id",
            p.job.model, p.job.batch, to_string(p.job.mode), to_string(p.job.dtype), to_string(p.job.runtime),
            p.job.gpu, p.job.torch_build, p.recorded_at));
    if (!row.found()) return Error::internal("the series of result " + std::to_string(p.result_id) + " was not stored");
    series_id = row->int64(0);
    uncached.emplace(std::move(key), series_id);
  }
  BF_ASSIGN_OR_RETURN(
      auto ins, core_.db().prepare(
                    "INSERT INTO series_points (series_id, result_id, run_id, status, median_ms, ci_low_ms, ci_high_ms,"
                    " torch_version, torch_git, version_key, recorded_at, flags, accuracy)"
                    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"));
  const rules::SeriesPointPlan& q = p.point;
  ins->bind(1, series_id).bind(2, p.result_id).bind(3, p.run_id).bind(4, to_string(q.status)).bind(5, q.median_ms);
  ins->bind(6, q.ci_low_ms).bind(7, q.ci_high_ms).bind(8, q.torch_version).bind(9, q.torch_git);
  ins->bind(10, q.version_key).bind(11, p.recorded_at).bind(12, q.flags).bind(13, q.accuracy);
  BF_RETURN_IF_ERROR(ins->run());
  return uncached;
}

Result<SeriesInfo> SeriesStore::series_info_locked(std::int64_t series_id) {
  BF_ASSIGN_OR_RETURN(auto s, core_.db().query_one(std::string(kSeriesSelect) + " WHERE s.id = ?", series_id));
  if (!s.found()) return Error::not_found("series " + std::to_string(series_id) + " does not exist");
  return series_at(*s);
}

Result<Page<SeriesInfo>> SeriesStore::list_series(const SeriesFilter& f, std::optional<std::int64_t> after_id,
                                                  int limit) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<Page<SeriesInfo>> {
    // A NULL parameter means "no filter" on that column.
    BF_ASSIGN_OR_RETURN(
        auto s, core_.db().prepare(std::string(kSeriesSelect) +
                                   " WHERE s.id > ?1 AND (?2 IS NULL OR s.model = ?2) AND (?3 IS NULL OR s.batch = ?3)"
                                   " AND (?4 IS NULL OR s.mode = ?4) AND (?5 IS NULL OR s.dtype = ?5)"
                                   " AND (?6 IS NULL OR s.runtime = ?6) AND (?7 IS NULL OR s.gpu_class = ?7)"
                                   " AND (?8 IS NULL OR s.torch_build = ?8) ORDER BY s.id LIMIT ?9"));
    s->bind(1, after_id.value_or(0)).bind(2, f.model).bind(3, f.batch).bind(4, f.mode).bind(5, f.dtype);
    s->bind(6, f.runtime).bind(7, f.gpu).bind(8, f.torch_build).bind(9, limit + 1);
    std::vector<SeriesInfo> rows;
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, s->step());
      if (!row) break;
      rows.push_back(series_at(*s));
    }
    return keyset_page(std::move(rows), limit, [](const SeriesInfo& series) { return series.id; });
  });
}

Result<std::optional<std::int64_t>> SeriesStore::find_series(const SeriesKey& k) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<std::optional<std::int64_t>> {
    BF_ASSIGN_OR_RETURN(
        auto s, core_.db().query_one("SELECT id FROM series WHERE model = ? AND batch = ? AND mode = ? AND"
                                     " dtype = ? AND runtime = ? AND gpu_class = ? AND torch_build = ?",
                                     k.model, k.batch, to_string(k.mode), to_string(k.dtype), to_string(k.runtime),
                                     k.gpu, k.torch_build));
    return s.found() ? std::optional<std::int64_t>(s->int64(0)) : std::nullopt;
  });
}

Result<SeriesPoints> SeriesStore::get_series(std::int64_t series_id, std::optional<std::int64_t> after_point,
                                             int limit) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<SeriesPoints> {
    SeriesPoints out;
    BF_ASSIGN_OR_RETURN(out.series, series_info_locked(series_id));
    OrderKey from;
    if (after_point) {
      BF_ASSIGN_OR_RETURN(
          auto c, core_.db().query_one("SELECT series_id, version_key, recorded_at, id FROM series_points WHERE id = ?",
                                       *after_point));
      if (!c.found() || c->int64(0) != series_id) {
        return Error::not_found("point " + std::to_string(*after_point) + " is not a point of series " +
                                std::to_string(series_id));
      }
      from = {c->text(1), c->int64(2), c->int64(3)};
    }
    // Keyset pagination in series order (series_points_order).
    BF_ASSIGN_OR_RETURN(
        auto s,
        core_.db().prepare("SELECT p.id, p.result_id, p.run_id, p.status, p.median_ms, p.ci_low_ms, p.ci_high_ms,"
                           " p.torch_version, p.torch_git, p.recorded_at, p.flags, p.accuracy FROM series_points p"
                           " WHERE p.series_id = ?1 AND (p.version_key, p.recorded_at, p.id) > (?2, ?3, ?4)"
                           " ORDER BY p.version_key, p.recorded_at, p.id LIMIT ?5"));
    s->bind(1, series_id).bind(2, from.version_key).bind(3, from.recorded_at).bind(4, from.id).bind(5, limit + 1);
    std::vector<SeriesPoint> rows;
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, s->step());
      if (!row) break;
      rows.push_back(point_at(*s));
    }
    Page<SeriesPoint> page = keyset_page(std::move(rows), limit, [](const SeriesPoint& p) { return p.id; });
    out.points = std::move(page.items);
    out.next_cursor = page.next_cursor;
    return out;
  });
}

namespace {

// Runs of a series the detector judges per read at most; the rest wait for the next pass
// (DetectionPass::more), so a series of a year of unseen runs is not
// read into memory at once.
constexpr std::ptrdiff_t kMaxRunsPerCall = 16;

// A series' points the detector has not seen yet, of every status, by id (the partial index
// series_points_pending): read once to judge them and again, under the write, to check that the
// judgement still holds.
Result<std::map<std::int64_t, OrderKey>> unseen_points(Database& db, std::int64_t series_id) {
  BF_ASSIGN_OR_RETURN(auto s, db.prepare("SELECT id, version_key, recorded_at FROM series_points"
                                         " WHERE series_id = ? AND detected = 0"));
  s->bind(1, series_id);
  std::map<std::int64_t, OrderKey> points;
  while (true) {
    BF_ASSIGN_OR_RETURN(bool row, s->step());
    if (!row) break;
    points.emplace(s->int64(0), OrderKey{s->text(1), s->int64(2), s->int64(0)});
  }
  return points;
}

}  // namespace

Result<std::vector<std::int64_t>> SeriesStore::series_with_unseen_points(int limit) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<std::vector<std::int64_t>> {
    // series_points_pending holds only the points the detector has not seen.
    BF_ASSIGN_OR_RETURN(auto s, core_.db().prepare("SELECT series_id FROM series_points WHERE detected = 0"
                                                   " GROUP BY series_id ORDER BY series_id LIMIT ?"));
    s->bind(1, limit);
    std::vector<std::int64_t> ids;
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, s->step());
      if (!row) break;
      ids.push_back(s->int64(0));
    }
    return ids;
  });
}

Result<DetectionRead> SeriesStore::read_detection(std::int64_t series_id, const rules::DetectorOptions& options) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) { return read_detection_locked(series_id, options); });
}

Result<bool> SeriesStore::write_detection(std::int64_t series_id, const DetectionRead& read,
                                          const std::vector<rules::FoundChange>& found, bool enqueue_alerts,
                                          std::vector<RegressionInfo>& changes) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<bool> {
    changes.clear();
    return write_detection_locked(series_id, read, found, enqueue_alerts, changes);
  });
}

Result<DetectionRead> SeriesStore::read_detection_locked(std::int64_t series_id,
                                                         const rules::DetectorOptions& options) {
  DetectionRead read;
  // The current level: from the series' level start (its first point when no change was
  // confirmed yet) on, in series order.
  OrderKey from;
  {
    BF_ASSIGN_OR_RETURN(auto level, core_.db().query_one("SELECT p.version_key, p.recorded_at, p.id FROM series s"
                                                         " JOIN series_points p ON p.id = s.level_start WHERE s.id = ?",
                                                         series_id));
    if (level.found()) {
      from = {level->text(0), level->int64(1), level->int64(2)};
      read.level_start = from.id;
    }
  }
  // Its ok points, consecutive points of one run grouped (a run's repetitions).
  {
    BF_ASSIGN_OR_RETURN(auto s, core_.db().prepare("SELECT p.id, p.run_id, p.result_id, p.median_ms, p.detected,"
                                                   " p.version_key, p.recorded_at FROM series_points p"
                                                   " WHERE p.series_id = ?1 AND (p.version_key, p.recorded_at, p.id) >="
                                                   " (?2, ?3, ?4) AND p.status = 'ok' AND p.median_ms IS NOT NULL"
                                                   " ORDER BY p.version_key, p.recorded_at, p.id"));
    s->bind(1, series_id).bind(2, from.version_key).bind(3, from.recorded_at).bind(4, from.id);
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, s->step());
      if (!row) break;
      const std::int64_t run_id = s->int64(1);
      const OrderKey key{s->text(5), s->int64(6), s->int64(0)};
      if (read.runs.empty() || read.runs.back().run_id != run_id) {
        read.runs.push_back({});
        read.runs.back().run_id = run_id;
        read.runs.back().first = key;
      }
      auto& r = read.runs.back();
      r.point_ids.push_back(key.id);
      r.result_ids.push_back(s->int64(2));
      r.medians.push_back(s->real(3));
      r.pending = r.pending || s->int64(4) == 0;
      read.bound = key;
    }
  }
  // Its unseen points, of every status.
  BF_ASSIGN_OR_RETURN(read.pending, unseen_points(core_.db(), series_id));
  const auto size = static_cast<std::ptrdiff_t>(read.runs.size());
  read.first_pending =
      std::find_if(read.runs.begin(), read.runs.end(), [](const auto& r) { return r.pending; }) - read.runs.begin();
  read.stop = std::min(size, read.first_pending + kMaxRunsPerCall);
  if (read.stop < size) read.bound = read.runs[static_cast<std::size_t>(read.stop)].first;
  for (const auto& [id, key] : read.pending) {
    if (read.stop == size || key < *read.bound) read.judged.push_back(id);
  }
  // The samples of the runs the walk's windows can hold: the first pending run's window on.
  const std::ptrdiff_t window = options.baseline_runs + options.confirm_runs;
  for (std::ptrdiff_t i = std::max<std::ptrdiff_t>(0, read.first_pending + 1 - window); i < read.stop; ++i) {
    auto& run = read.runs[static_cast<std::size_t>(i)];
    for (std::int64_t result_id : run.result_ids) {
      BF_ASSIGN_OR_RETURN(auto s,
                          core_.db().query_one("SELECT samples_ms FROM result_samples WHERE result_id = ?", result_id));
      if (s.found()) run.samples_text.push_back(s->text(0));
    }
  }
  return read;
}

Result<bool> SeriesStore::write_detection_locked(std::int64_t series_id, const DetectionRead& read,
                                                 const std::vector<rules::FoundChange>& found, bool enqueue_alerts,
                                                 std::vector<RegressionInfo>& changes) {
  // Still as read: the same level start, the judged points still unseen, and no new point
  // ordered among the runs walked (one ordered after them waits for the next call).
  {
    BF_ASSIGN_OR_RETURN(auto level, core_.db().query_one("SELECT level_start FROM series WHERE id = ?", series_id));
    if (!level.found() || level->opt_int64(0) != read.level_start) return false;
  }
  std::size_t judged_unseen = 0;
  BF_ASSIGN_OR_RETURN(const auto unseen, unseen_points(core_.db(), series_id));
  for (const auto& [id, key] : unseen) {
    if (read.pending.contains(id)) {
      ++judged_unseen;
    } else if (read.bound && key < *read.bound) {
      return false;
    }
  }
  if (judged_unseen != read.pending.size()) return false;

  const TimestampMs now = core_.clock().now_ms();
  for (const rules::FoundChange& f : found) {
    const rules::Change& change = f.change;
    BF_RETURN_IF_ERROR(core_.db().run(
        "INSERT INTO regressions (series_id, direction, state, first_bad_point, last_good_point, before_median_ms,"
        " after_median_ms, ratio, p_value, baseline_runs, confirm_runs, detected_at)"
        " VALUES (?, ?, 'open', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        series_id, direction_name(change.direction), f.first_bad, f.last_good, change.before_median_ms,
        change.after_median_ms, change.ratio, change.p_value, change.baseline_runs, change.confirm_runs, now));
    const std::int64_t regression_id = core_.db().last_insert_rowid();
    BF_RETURN_IF_ERROR(core_.db().run("UPDATE series SET level_start = ? WHERE id = ?", f.first_bad, series_id));
    if (enqueue_alerts && change.direction == rules::ChangeDirection::kRegression) {
      // The outbox: the sender expands the body into the webhook's (regression_json) at send time.
      const std::string body = nlohmann::json{{"event", "regression.opened"}, {"regression_id", regression_id}}.dump();
      BF_RETURN_IF_ERROR(
          core_.db().run("INSERT INTO alert_deliveries (regression_id, event, body, next_attempt_at)"
                         " VALUES (?, 'regression.opened', ?, ?)",
                         regression_id, body, now));
    }
    BF_ASSIGN_OR_RETURN(auto info, regressions_.regression_info_locked(regression_id));
    changes.push_back(std::move(info));
  }
  for (std::int64_t id : read.judged) {
    BF_RETURN_IF_ERROR(core_.db().run("UPDATE series_points SET detected = 1 WHERE id = ?", id));
  }
  // Stopped before a run it had seen (the walk goes back over seen runs after a point that
  // arrived out of order): its points become unseen again, so the next call starts there.
  if (read.stop < static_cast<std::ptrdiff_t>(read.runs.size())) {
    const auto& next = read.runs[static_cast<std::size_t>(read.stop)];
    if (!next.pending) {
      for (std::int64_t id : next.point_ids) {
        BF_RETURN_IF_ERROR(core_.db().run("UPDATE series_points SET detected = 0 WHERE id = ?", id));
      }
    }
  }
  return true;
}

}  // namespace benchfleet::store
