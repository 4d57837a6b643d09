// ScheduleStore: schedules, recurring matrices whose runs the coordinator creates when due.
#include "coordinator/store/schedule_store.h"

#include <string>
#include <utility>
#include <vector>

#include "common/codecs.h"
#include "coordinator/rules/cron.h"
#include "coordinator/store/run_store.h"
#include "coordinator/store/store_core.h"

namespace benchfleet::store {
namespace {

constexpr const char* kScheduleColumns =
    "s.id, s.name, s.spec, s.cron, s.enabled, s.created_at, s.updated_at, s.next_due_at, s.last_due_at,"
    " s.last_run_id, s.missed, (SELECT COUNT(*) FROM runs r WHERE r.schedule_id = s.id)";

// The latest due time of `cron` that is <= `now`, walking from `first` (a due time <= now), and
// how many due times before it were passed over. One next_after per due time passed: a schedule
// due every minute and down for a year costs half a million steps (well under a second).
std::pair<TimestampMs, std::int64_t> latest_due(const rules::CronSchedule& cron, TimestampMs first, TimestampMs now) {
  TimestampMs due = first;
  std::int64_t passed = 0;
  for (TimestampMs next = cron.next_after(due); next <= now; next = cron.next_after(due)) {
    due = next;
    ++passed;
  }
  return {due, passed};
}

Result<rules::CronSchedule> parse_stored_cron(std::int64_t schedule_id, const std::string& text) {
  auto cron = rules::CronSchedule::parse(text);
  if (!cron.ok()) {
    return Error::internal("stored cron of schedule " + std::to_string(schedule_id) +
                           " is unreadable: " + cron.error().describe());
  }
  return cron;
}

ScheduleInfo schedule_at(const Statement& s) {
  ScheduleInfo info;
  info.id = s.int64(0);
  info.name = s.text(1);
  if (auto spec = decode<MatrixSpec>(nlohmann::json::parse(s.text(2), nullptr, false)); spec.ok()) {
    info.spec = std::move(*spec);
  }
  info.spec.name = info.name;
  info.cron = s.text(3);
  info.enabled = s.int64(4) != 0;
  info.created_at = s.int64(5);
  info.updated_at = s.int64(6);
  info.next_due_at = s.int64(7);
  info.last_due_at = s.opt_int64(8);
  info.last_run_id = s.opt_int64(9);
  info.missed = s.int64(10);
  info.runs = s.int64(11);
  return info;
}

std::string not_found_message(std::int64_t schedule_id) {
  return "schedule " + std::to_string(schedule_id) + " does not exist";
}

}  // namespace

Result<ScheduleInfo> ScheduleStore::schedule_info_locked(std::int64_t schedule_id) {
  BF_ASSIGN_OR_RETURN(
      auto s, core_.db().query_one(std::string("SELECT ") + kScheduleColumns + " FROM schedules s WHERE s.id = ?",
                                   schedule_id));
  if (!s.found()) return Error::not_found(not_found_message(schedule_id));
  return schedule_at(*s);
}

Result<ScheduleInfo> ScheduleStore::create_schedule(const MatrixSpec& spec, const std::string& cron_text,
                                                    bool enabled) {
  BF_ASSIGN_OR_RETURN(const rules::CronSchedule cron, rules::CronSchedule::parse(cron_text));
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<ScheduleInfo> {
    const TimestampMs now = core_.clock().now_ms();
    BF_RETURN_IF_ERROR(core_.db().run(
        "INSERT INTO schedules (name, spec, cron, enabled, created_at, updated_at, next_due_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?)",
        spec.name, nlohmann::json(spec).dump(), cron.text(), enabled ? 1 : 0, now, now, cron.next_after(now)));
    return schedule_info_locked(core_.db().last_insert_rowid());
  });
}

Result<std::vector<ScheduleInfo>> ScheduleStore::list_schedules() {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<std::vector<ScheduleInfo>> {
    BF_ASSIGN_OR_RETURN(
        auto s, core_.db().prepare(std::string("SELECT ") + kScheduleColumns + " FROM schedules s ORDER BY s.id"));
    std::vector<ScheduleInfo> out;
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, s->step());
      if (!row) break;
      out.push_back(schedule_at(*s));
    }
    return out;
  });
}

Result<ScheduleInfo> ScheduleStore::get_schedule(std::int64_t schedule_id) {
  return core_.run([&]()
                       BF_REQUIRES(core_.lock()) -> Result<ScheduleInfo> { return schedule_info_locked(schedule_id); });
}

Result<std::pair<ScheduleInfo, std::vector<std::int64_t>>> ScheduleStore::schedule_runs(std::int64_t schedule_id,
                                                                                        int limit) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<std::pair<ScheduleInfo, std::vector<std::int64_t>>> {
    BF_ASSIGN_OR_RETURN(ScheduleInfo info, schedule_info_locked(schedule_id));
    BF_ASSIGN_OR_RETURN(auto s, core_.db().prepare("SELECT id FROM runs WHERE schedule_id = ?"
                                                   " ORDER BY schedule_due_at DESC LIMIT ?"));
    s->bind(1, schedule_id).bind(2, limit);
    std::vector<std::int64_t> ids;
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, s->step());
      if (!row) break;
      ids.push_back(s->int64(0));
    }
    return std::make_pair(std::move(info), std::move(ids));
  });
}

Result<ScheduleInfo> ScheduleStore::set_schedule_enabled(std::int64_t schedule_id, bool enabled) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<ScheduleInfo> {
    BF_ASSIGN_OR_RETURN(ScheduleInfo info, schedule_info_locked(schedule_id));
    if (info.enabled == enabled) return info;
    const TimestampMs now = core_.clock().now_ms();
    if (!enabled) {
      BF_RETURN_IF_ERROR(
          core_.db().run("UPDATE schedules SET enabled = 0, updated_at = ? WHERE id = ?", now, schedule_id));
      return schedule_info_locked(schedule_id);
    }
    // Resuming: the due times that passed while paused are skipped, and counted.
    BF_ASSIGN_OR_RETURN(const rules::CronSchedule cron, parse_stored_cron(schedule_id, info.cron));
    std::int64_t skipped = 0;
    if (info.next_due_at <= now) skipped = latest_due(cron, info.next_due_at, now).second + 1;
    BF_RETURN_IF_ERROR(core_.db().run(
        "UPDATE schedules SET enabled = 1, updated_at = ?1, next_due_at = ?2, missed = missed + ?3 WHERE id = ?4", now,
        cron.next_after(now), skipped, schedule_id));
    return schedule_info_locked(schedule_id);
  });
}

Status ScheduleStore::delete_schedule(std::int64_t schedule_id) {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Status {
    // runs.schedule_id becomes NULL (ON DELETE SET NULL): the runs stay.
    BF_RETURN_IF_ERROR(core_.db().run("DELETE FROM schedules WHERE id = ?", schedule_id));
    if (core_.db().changes() == 0) return Error::not_found(not_found_message(schedule_id));
    return Status::Ok();
  });
}

Result<ScheduleStore::FireOutcome> ScheduleStore::fire_due_schedules(
    TimestampMs now, const std::function<Result<std::vector<JobSpec>>(const MatrixSpec&)>& expand) {
  // Which schedules are due, read first; each is then expanded without the store's lock (the
  // catalog walk of a big matrix is not the store's work) and fired in its own operation, which
  // checks it is still due as read.
  struct Due {
    std::int64_t id = 0;
    MatrixSpec spec;
    std::string cron;
    TimestampMs next_due_at = 0;
  };
  auto due = core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<std::vector<Due>> {
    BF_ASSIGN_OR_RETURN(
        auto s, core_.db().prepare("SELECT id, name, spec, cron, next_due_at FROM schedules WHERE enabled = 1 AND"
                                   " next_due_at <= ? ORDER BY next_due_at"));
    s->bind(1, now);
    std::vector<Due> out;
    while (true) {
      BF_ASSIGN_OR_RETURN(bool row, s->step());
      if (!row) break;
      Due d;
      d.id = s->int64(0);
      if (auto spec = decode<MatrixSpec>(nlohmann::json::parse(s->text(2), nullptr, false)); spec.ok()) {
        d.spec = std::move(*spec);
      }
      d.spec.name = s->text(1);
      d.cron = s->text(3);
      d.next_due_at = s->int64(4);
      out.push_back(std::move(d));
    }
    return out;
  });
  if (!due.ok()) return due.error();

  FireOutcome outcome;
  for (const Due& d : *due) {
    auto cron = parse_stored_cron(d.id, d.cron);
    if (!cron.ok()) {
      outcome.errors.emplace_back(d.id, cron.error());
      continue;
    }
    const auto latest = latest_due(*cron, d.next_due_at, now);
    const TimestampMs due_at = latest.first;
    const std::int64_t skipped = latest.second;
    const TimestampMs next_due_at = cron->next_after(due_at);
    auto jobs = expand(d.spec);
    auto fired = core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<std::optional<FiredSchedule>> {
      // Still enabled and still at the due time read (not paused, deleted or fired meanwhile)?
      BF_ASSIGN_OR_RETURN(auto row, core_.db().query_one("SELECT 1 FROM schedules WHERE id = ? AND enabled = 1 AND"
                                                         " next_due_at = ?",
                                                         d.id, d.next_due_at));
      if (!row.found()) return std::optional<FiredSchedule>();
      const TimestampMs at = core_.clock().now_ms();
      if (!jobs.ok()) {
        // This due time creates no run: it is missed like the ones before it.
        BF_RETURN_IF_ERROR(
            core_.db().run("UPDATE schedules SET next_due_at = ?1, missed = missed + ?2, updated_at = ?3 WHERE id = ?4",
                           next_due_at, skipped + 1, at, d.id));
        return std::optional<FiredSchedule>();
      }
      BF_ASSIGN_OR_RETURN(RunCreated run, runs_.create_run_locked(d.spec, *jobs, d.id, due_at));
      BF_RETURN_IF_ERROR(
          core_.db().run("UPDATE schedules SET next_due_at = ?1, last_due_at = ?2, last_run_id = ?3,"
                         " missed = missed + ?4, updated_at = ?5 WHERE id = ?6",
                         next_due_at, due_at, run.run_id, skipped, at, d.id));
      return std::optional<FiredSchedule>(FiredSchedule{d.id, run.run_id, run.job_count, due_at, skipped});
    });
    if (!fired.ok()) {
      outcome.errors.emplace_back(d.id, fired.error());
    } else if (!jobs.ok()) {
      outcome.errors.emplace_back(d.id, jobs.error());
    } else if (*fired) {
      outcome.fired.push_back(**fired);
    }
  }
  return outcome;
}

Result<std::optional<TimestampMs>> ScheduleStore::next_schedule_due() {
  return core_.run([&]() BF_REQUIRES(core_.lock()) -> Result<std::optional<TimestampMs>> {
    BF_ASSIGN_OR_RETURN(auto s, core_.db().query_one("SELECT MIN(next_due_at) FROM schedules WHERE enabled = 1"));
    return s.found() ? s->opt_int64(0) : std::nullopt;
  });
}

}  // namespace benchfleet::store
