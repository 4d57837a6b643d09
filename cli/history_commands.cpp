#include "cli/history_commands.h"

#include <cstdio>

#include "cli/history_views.h"
#include "cli/id_option.h"
#include "cli/matrix_file.h"
#include "cli/progress.h"

namespace benchfleet::cli {
namespace {

using nlohmann::json;

int fail(Console& console, const Error& error) {
  console.err << "benchfleet: " << error.message << "\n";
  return kExitError;
}

int show(const Result<json>& j, bool as_json, std::string (*view)(const json&), Console& console) {
  if (!j.ok()) return fail(console, j.error());
  console.out << (as_json ? j->dump(2) + "\n" : view(*j));
  return kExitOk;
}

void add_param(std::string& query, const char* name, const std::string& value) {
  if (!query.empty()) query += "&";
  query += name;
  query += "=";
  query += encode_query_value(value);
}

CLI::App* command(CLI::App& parent, const std::string& name, const std::string& help) {
  CLI::App* c = parent.add_subcommand(name, help);
  c->fallthrough();  // global options (--url, ...) may follow
  return c;
}

}  // namespace

std::string percent_encode(std::string_view value, std::string_view keep) {
  std::string out;
  for (const unsigned char c : value) {
    if (std::isalnum(c) != 0 || keep.find(static_cast<char>(c)) != std::string_view::npos) {
      out += static_cast<char>(c);
    } else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

std::string encode_query_value(const std::string& value) { return percent_encode(value, "-_.~/"); }

HistoryCommands::HistoryCommands(CLI::App& app) {
  schedule_ = command(app, "schedule",
                      "Recurring matrices: the coordinator creates the run when a schedule is due (cron, UTC),\n"
                      "once per due time; after downtime only the latest missed due time gets a run.");
  schedule_->require_subcommand(1);
  schedule_add_ = command(*schedule_, "add", "Store a matrix file (as `submit` takes) to run on a cron schedule.");
  schedule_add_->add_option("file", matrix_file_, "matrix file (YAML or JSON)")->required();
  schedule_add_
      ->add_option("--cron", cron_,
                   "when it is due, in UTC: \"minute hour day-of-month month day-of-week\" (\"30 2 * * *\" "
                   "is 02:30 every day) or @daily, @hourly, @weekly, @monthly")
      ->required();
  schedule_add_->add_flag("--paused", paused_, "store it paused (resume starts it)");
  schedule_list_ = command(*schedule_, "list", "List schedules: cron, state, next due time, last run, missed.");
  schedule_show_ = command(*schedule_, "show", "Show one schedule and its matrix.");
  schedule_pause_ = command(*schedule_, "pause", "Pause a schedule (due times passing meanwhile are skipped).");
  schedule_resume_ = command(*schedule_, "resume", "Resume a schedule: next due time is the first after now.");
  schedule_delete_ = command(*schedule_, "delete", "Delete a schedule (the runs it created stay).");
  for (CLI::App* c : {schedule_show_, schedule_pause_, schedule_resume_, schedule_delete_}) {
    c->add_option("id", schedule_id_, "schedule id")->required()->check(positive_id());
  }
  for (CLI::App* c : {schedule_add_, schedule_list_, schedule_show_, schedule_pause_, schedule_resume_}) {
    c->add_flag("--json", json_, "print the API's JSON");
  }

  series_ = command(app, "series",
                    "List series (one matrix cell across runs: model, batch, mode, dtype, runtime, GPU class,\n"
                    "build), filtered by any part of the key; `series show ID` prints one series' points in\n"
                    "torch version order and its regressions.");
  series_->add_option("--model", model_, "catalog model id");
  series_->add_option("--batch", batch_, "batch size")->check(CLI::Range(1, 65536));
  series_->add_option("--mode", mode_, "mode (eager, default, ...)");
  series_->add_option("--dtype", dtype_, "dtype (float32, bfloat16, ...)");
  series_->add_option("--runtime", runtime_, "runtime (libtorch, python)");
  series_->add_option("--gpu", gpu_, "GPU class");
  series_->add_option("--build", build_, "torch build name");
  series_->add_option("--limit", series_limit_, "most series (1-500) or points (1-5000) to print");
  series_->add_option("--after", series_after_, "series with an id above this (the next page)");
  series_->add_flag("--json", json_, "print the API's JSON");
  series_show_ = command(*series_, "show",
                         "Show a series: a point per result (torch version, git, run, status,\n"
                         "median and its CI), then the series' regressions.");
  series_show_->add_option("id", series_id_, "series id")->required()->check(positive_id());
  series_show_->add_option("--after-point", after_point_, "points after this point id (the next page)");

  regressions_ = command(app, "regressions",
                         "List the changes the detector confirmed (newest first): series, medians before and\n"
                         "after, ratio, p-value and the torch versions to bisect between; ack, resolve or reopen one.");
  regressions_->add_option("--state", state_, "open, acknowledged, resolved or all")
      ->check(CLI::IsMember({"open", "acknowledged", "resolved", "all"}))
      ->capture_default_str();
  regressions_->add_option("--direction", direction_, "regression (slower), improvement (faster) or all")
      ->check(CLI::IsMember({"regression", "improvement", "all"}))
      ->capture_default_str();
  regressions_->add_option("--series", regressions_series_, "only this series' changes")->check(positive_id());
  regressions_->add_option("--limit", regressions_limit_, "how many")->check(CLI::Range(1, 500))->capture_default_str();
  regressions_->add_flag("--json", json_, "print the API's JSON");
  ack_ = command(*regressions_, "ack", "Acknowledge a regression (someone is looking at it).");
  resolve_ = command(*regressions_, "resolve", "Resolve a regression.");
  reopen_ = command(*regressions_, "reopen", "Reopen a resolved or acknowledged regression.");
  for (CLI::App* c : {ack_, resolve_, reopen_})
    c->add_option("id", regression_id_, "regression id")->required()->check(positive_id());
  for (CLI::App* c : {ack_, resolve_}) c->add_option("--note", note_, "a note kept with it (replaces the last)");
}

std::optional<int> HistoryCommands::run(FleetClient& client, Console& console) const {
  if (schedule_->parsed()) return run_schedule(client, console);
  if (series_->parsed()) return run_series(client, console);
  if (regressions_->parsed()) return run_regressions(client, console);
  return std::nullopt;
}

int HistoryCommands::run_schedule(FleetClient& client, Console& console) const {
  if (schedule_add_->parsed()) {
    auto matrix = load_matrix_file(matrix_file_);
    if (!matrix.ok()) return fail(console, matrix.error());
    const json request = {{"cron", cron_}, {"enabled", !paused_}, {"matrix", matrix->document.json}};
    auto created = client.create_schedule(request);
    if (!created.ok()) {
      Error e = created.error();
      // A field of the matrix ("matrix.models[1]"): point at the file's line.
      if (e.field.rfind("matrix.", 0) == 0) {
        e.message =
            matrix_file_ + ": line " + std::to_string(matrix->document.line_of(e.field.substr(7))) + ": " + e.message;
      }
      return fail(console, e);
    }
    if (json_) {
      console.out << created->dump(2) << "\n";
    } else {
      console.out << "added schedule " << created->value("id", std::int64_t{0}) << " \"" << created->value("name", "")
                  << "\" (" << cron_ << " UTC), "
                  << (paused_ ? "paused" : "next run due " + created->value("next_due_at", std::string("?"))) << "\n";
    }
    return kExitOk;
  }
  if (schedule_list_->parsed()) return show(client.schedules(), json_, schedules_view, console);
  if (schedule_show_->parsed()) return show(client.schedule(schedule_id_), json_, schedule_view, console);
  if (schedule_pause_->parsed() || schedule_resume_->parsed()) {
    const bool resume = schedule_resume_->parsed();
    auto r = client.set_schedule_enabled(schedule_id_, resume);
    if (!r.ok()) return fail(console, r.error());
    if (json_) {
      console.out << r->dump(2) << "\n";
    } else if (resume) {
      console.out << "schedule " << schedule_id_ << " resumed; next run due " << r->value("next_due_at", "?") << "\n";
    } else {
      console.out << "schedule " << schedule_id_ << " paused\n";
    }
    return kExitOk;
  }
  if (schedule_delete_->parsed()) {
    if (auto s = client.delete_schedule(schedule_id_); !s.ok()) return fail(console, s.error());
    console.out << "deleted schedule " << schedule_id_ << " (its runs stay)\n";
    return kExitOk;
  }
  return kExitUsage;
}

int HistoryCommands::run_series(FleetClient& client, Console& console) const {
  std::string query;
  if (series_show_->parsed()) {
    if (series_limit_) {
      if (*series_limit_ < 1 || *series_limit_ > 5000) {
        return fail(console, Error::invalid("limit", "--limit: points per page must be 1..5000"));
      }
      add_param(query, "limit", std::to_string(*series_limit_));
    }
    if (after_point_) add_param(query, "after_point", std::to_string(*after_point_));
    return show(client.series(series_id_, query), json_, series_view, console);
  }
  if (model_) add_param(query, "model", *model_);
  if (batch_) add_param(query, "batch", std::to_string(*batch_));
  if (mode_) add_param(query, "mode", *mode_);
  if (dtype_) add_param(query, "dtype", *dtype_);
  if (runtime_) add_param(query, "runtime", *runtime_);
  if (gpu_) add_param(query, "gpu", *gpu_);
  if (build_) add_param(query, "build", *build_);
  if (series_limit_) {
    if (*series_limit_ < 1 || *series_limit_ > 500) {
      return fail(console, Error::invalid("limit", "--limit: series per page must be 1..500"));
    }
    add_param(query, "limit", std::to_string(*series_limit_));
  }
  if (series_after_) add_param(query, "after", std::to_string(*series_after_));
  return show(client.series_list(query), json_, series_list_view, console);
}

int HistoryCommands::run_regressions(FleetClient& client, Console& console) const {
  const CLI::App* action = ack_->parsed()       ? ack_
                           : resolve_->parsed() ? resolve_
                           : reopen_->parsed()  ? reopen_
                                                : nullptr;
  if (action != nullptr) {
    const std::string verb = action == ack_ ? "acknowledge" : action == resolve_ ? "resolve" : "reopen";
    auto r = client.change_regression(regression_id_, verb, action == reopen_ ? std::nullopt : note_);
    if (!r.ok()) return fail(console, r.error());
    console.out << (json_ ? r->dump(2) : regression_line(*r)) << "\n";
    return kExitOk;
  }
  std::string query;
  add_param(query, "state", state_);
  add_param(query, "direction", direction_);
  if (regressions_series_) add_param(query, "series", std::to_string(*regressions_series_));
  add_param(query, "limit", std::to_string(regressions_limit_));
  return show(client.regressions(query), json_, regressions_view, console);
}

}  // namespace benchfleet::cli
