#include "cli/app.h"

#include <unistd.h>

#include <CLI/CLI.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "cli/aa_check.h"
#include "cli/cli_config.h"
#include "cli/fleet_commands.h"
#include "cli/history_commands.h"
#include "cli/id_option.h"
#include "cli/matrix_file.h"
#include "cli/model_commands.h"
#include "cli/progress.h"
#include "cli/slurm_script.h"
#include "cli/views.h"
#include "common/display_text.h"
#include "common/suggest.h"

namespace benchfleet::cli {
namespace {

constexpr const char* kDescription =
    "benchfleet: submit benchmark matrices to a benchfleet coordinator, follow their progress and\n"
    "read the comparison tables; keep nightly schedules and follow each cell's series across torch\n"
    "versions and the regressions found in them; print the batch script of agents run as Slurm jobs.\n"
    "\n"
    "The coordinator's URL and the operator token come from flags, the environment\n"
    "(BENCHFLEET_URL, BENCHFLEET_OPERATOR_TOKEN, BENCHFLEET_OPERATOR_TOKEN_FILE) or a YAML config\n"
    "file with the same keys (--config, $BENCHFLEET_CLI_CONFIG, else ~/.config/benchfleet/cli.yaml);\n"
    "flags win over the environment, which wins over the file.\n"
    "\n"
    "Exit codes: 0 success; 1 a request failed or a file is invalid (the server's problem detail is\n"
    "printed); 2 bad command line; 3 the run ended with failed jobs or error, crash, timeout or\n"
    "invalid verdicts; 4 the run was cancelled; 130 interrupted while waiting (the run goes on).";

struct SubmitArgs {
  std::string file;
  bool wait = false;
  bool dry_run = false;
  bool allow_pending = false;
  bool print_id = false;
  bool no_report = false;
  std::string name;
  std::vector<std::string> gpus;
  std::vector<std::string> builds;
  double interval_s = 1.0;
};

struct ReportArgs {
  std::int64_t id = 0;
  std::string format = "md";
  std::string stat = "median";
  bool exclude_flagged = false;
  std::string output;
};

struct CompareArgs {
  std::int64_t run_a = 0;
  std::int64_t run_b = 0;
  std::string build_a;
  std::string build_b;
  std::optional<double> fail_if_slower;
  std::optional<int> min_cells;  // default with the gate: every cell A measured
  bool aa = false;               // --aa: an A/A of run A instead (cli/aa_check.h)
  int repetitions = 5;
  std::vector<std::string> models;
  std::string format = "md";
  std::string stat = "median";
};

// Writes `text` to `path` through a temporary file and a rename, so a reader never sees half.
Status write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out || !out.write(text.data(), static_cast<std::streamsize>(text.size())) || !out.flush()) {
      std::filesystem::remove(tmp);
      return Error::invalid("output", "cannot write " + path);
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp);
    return Error::invalid("output", "cannot write " + path + ": " + ec.message());
  }
  return Status::Ok();
}

// Prints an error as the CLI does and gives its exit code.
int fail(Console& console, const Error& error) {
  console.err << "benchfleet: " << error.message << "\n";
  return kExitError;
}

// The matrix to submit: the file, with the command line's overrides, validated again. Field
// lines stay those of the file.
Result<MatrixFile> matrix_for(const SubmitArgs& a) {
  BF_ASSIGN_OR_RETURN(MatrixFile m, load_matrix_file(a.file));
  if (a.name.empty() && a.gpus.empty() && a.builds.empty()) return m;
  nlohmann::json j = m.document.json;
  if (!a.name.empty()) j["name"] = a.name;
  if (!a.gpus.empty()) j["gpus"] = a.gpus;
  if (!a.builds.empty()) j["torch_builds"] = a.builds;
  BF_ASSIGN_OR_RETURN(MatrixFile again, parse_matrix(j.dump(), a.file + " (with --name/--gpus/--builds)"));
  again.document.lines = std::move(m.document.lines);
  return again;
}

// The coordinator names the field of what it refused (an unknown catalog id, a build no agent
// offers): point at the file's line.
Error at_line(const SubmitArgs& a, const MatrixFile& matrix, Error e) {
  if (!e.field.empty()) {
    e.message = a.file + ": line " + std::to_string(matrix.document.line_of(e.field)) + ": " + e.message;
  }
  return e;
}

// What waits for hosts still to come (an allow_pending submit) and what will end unsupported,
// one line each.
void print_pending(const nlohmann::json& answer, std::ostream& out) {
  for (const auto& p : answer.value("pending", nlohmann::json::array())) {
    out << "benchfleet: pending, for hosts still to come: " << escape_display_text(p.value("field", "")) << ": "
        << escape_display_text(p.value("message", "")) << "\n";
  }
  for (const auto& p : answer.value("unsupported", nlohmann::json::array())) {
    out << "benchfleet: " << escape_display_text(p.value("field", "")) << ": "
        << escape_display_text(p.value("message", "")) << "\n";
  }
}

int submit(const SubmitArgs& a, FleetClient& client, Console& console) {
  auto matrix = matrix_for(a);
  if (!matrix.ok()) return fail(console, matrix.error());
  if (a.dry_run) {
    console.out << a.file << ": valid; " << matrix->job_count << " jobs (" << matrix->spec.models.size() << " models x "
                << matrix->spec.batch_sizes.size() << " batch sizes x " << matrix->spec.modes.size() << " modes x "
                << matrix->spec.torch_builds.size() << " builds x " << matrix->spec.gpus.size() << " GPU classes x "
                << matrix->spec.runtimes.size() << " runtimes x " << matrix->spec.dtypes.size() << " dtypes x "
                << matrix->spec.repetitions << " repetitions)";
    // The coordinator checks the rest as a submit would: catalog ids, its limits, the fleet.
    auto checked = client.check_submit(matrix->document.json, a.allow_pending);
    if (!checked.ok()) {
      if (checked.error().code == ErrorCode::kInvalidArgument) {
        console.out << "\n" << std::flush;
        return fail(console, at_line(a, *matrix, checked.error()));
      }
      // Not checked is not "valid": a wrong token, a coordinator down. The file itself was.
      console.out << "; not checked against the coordinator (" << checked.error().message << ")\n" << std::flush;
      return kExitError;
    }
    const bool pending = !checked->value("pending", nlohmann::json::array()).empty();
    const bool unsupported = !checked->value("unsupported", nlohmann::json::array()).empty();
    console.out << (pending       ? "; some jobs wait for hosts still to come:\n"
                    : unsupported ? "; the fleet takes every job, but some will end unsupported:\n"
                                  : "; the fleet can run every job\n");
    print_pending(*checked, console.out);
    return kExitOk;
  }
  auto created = client.submit(matrix->document.json, a.allow_pending);
  if (!created.ok()) return fail(console, at_line(a, *matrix, created.error()));
  print_pending(*created, console.err);
  const std::int64_t id = created->value("id", std::int64_t{0});
  if (a.print_id) {
    console.out << id << "\n" << std::flush;
  } else {
    console.out << "submitted run " << id << " \"" << matrix->spec.name << "\": " << created->value("job_count", 0)
                << " jobs (" << client.base_url() << "/api/v1/runs/" << id << ")\n"
                << std::flush;
  }
  if (!a.wait) return kExitOk;
  WatchOptions w;
  w.interval_s = a.interval_s;
  const int code = watch_run(client, id, w, console);
  // The run ended (cleanly, with failures or cancelled): its tables, unless a script asked for the
  // id alone on stdout.
  if (a.print_id || a.no_report || (code != kExitOk && code != kExitRunFailed && code != kExitRunCancelled)) {
    return code;
  }
  auto text = client.report(id, "md", "median", false);
  if (!text.ok()) {
    console.err << "benchfleet: the run ended, but its report could not be read: " << text.error().message << "\n";
    return code;
  }
  console.out << "\n" << *text;
  if (!text->empty() && text->back() != '\n') console.out << "\n";
  console.out << std::flush;
  return code;
}

// --format (md, csv or json) and --stat (mean or median), as report and compare take them.
void add_format_and_stat(CLI::App& cmd, std::string& format, std::string& stat, const std::string& stat_help) {
  cmd.add_option("--format", format, "md, csv or json")
      ->check(CLI::IsMember({"md", "csv", "json"}))
      ->capture_default_str();
  cmd.add_option("--stat", stat, stat_help)->check(CLI::IsMember({"mean", "median"}))->capture_default_str();
}

int compare(const CompareArgs& a, FleetClient& client, Console& console) {
  if (a.aa) {
    if (a.run_b != 0) return fail(console, Error::invalid("b", "--aa takes one run: the one to repeat"));
    return aa_check(client, console, {a.run_a, a.repetitions, a.models, 1.0});
  }
  if (a.run_b == 0)
    return fail(console, Error::invalid("b", "compare needs run B (run A again for two of its builds)"));
  // The coordinator compares (GET /api/v1/compare), so the CLI, the dashboard and the exports
  // read one rule; the gate below judges the JSON, the display is the format asked for.
  const std::string side_a = std::to_string(a.run_a) + (a.build_a.empty() ? "" : ":" + a.build_a);
  const std::string side_b = std::to_string(a.run_b) + (a.build_b.empty() ? "" : ":" + a.build_b);
  const bool gate = a.fail_if_slower || a.min_cells;
  if (!gate && a.format == "md") {  // the table alone: one request
    auto text = client.compare(side_a, side_b, a.stat, a.format);
    if (!text.ok()) return fail(console, text.error());
    console.out << *text << std::flush;
    return kExitOk;
  }
  auto c = client.compare_json(side_a, side_b, a.stat);
  if (!c.ok()) return fail(console, c.error());
  std::vector<std::string> slow;
  int expected = 0, compared = 0;
  std::vector<std::string> uncompared;
  try {
    expected = c->at("expected").get<int>();
    compared = c->at("compared").get<int>();
    for (const auto& u : c->at("uncompared")) {
      uncompared.push_back(u.at("table").get<std::string>() + " | " + u.at("label").get<std::string>() + " | " +
                           u.at("column").get<std::string>() + ": " + u.at("why").get<std::string>());
    }
    for (const auto& x : c->at("cells")) {
      const double a_ms = x.at("a_ms").get<double>(), b_ms = x.at("b_ms").get<double>();
      const double pct = (b_ms / a_ms - 1) * 100;
      if (!a.fail_if_slower || x.at("verdict").get<std::string>() != "slower" || pct <= *a.fail_if_slower) continue;
      char line[96];
      std::snprintf(line, sizeof line, ": %.3f -> %.3f ms (%+.1f%%; ", a_ms, b_ms, pct);
      slow.push_back(x.at("table").get<std::string>() + " | " + x.at("label").get<std::string>() + " | " +
                     x.at("column").get<std::string>() + line + x.at("why").get<std::string>() + ")");
    }
    // The comparison as a whole: a change every cell shares, found over the cells though each
    // cell's own noise hides it.
    if (const auto& o = c->value("overall", nlohmann::json());
        a.fail_if_slower && o.is_object() && o.at("verdict").get<std::string>() == "slower") {
      const double pct = (1 / o.at("ratio").get<double>() - 1) * 100;
      if (pct > *a.fail_if_slower) {
        char line[96];
        std::snprintf(line, sizeof line, "overall, %d cells: %+.1f%% (", o.at("cells").get<int>(), pct);
        slow.push_back(line + o.at("why").get<std::string>() + ")");
      }
    }
  } catch (const nlohmann::json::exception& e) {  // not the documented shape
    return fail(console,
                Error{ErrorCode::kUnavailable, std::string("compare: unexpected comparison: ") + e.what(), {}});
  }
  if (a.format == "json") {
    console.out << c->dump(2, ' ', true) << "\n";  // non-ASCII as \\u escapes: nothing for a terminal to act on
  } else {
    auto text = client.compare(side_a, side_b, a.stat, a.format);
    if (!text.ok()) return fail(console, text.error());
    console.out << *text;
  }
  console.out << std::flush;
  if (a.format == "csv") {
    for (const auto& w : c->value("warnings", nlohmann::json::array())) {
      if (w.is_string())
        console.err << "benchfleet: differs besides torch: " << escape_display_text(w.get<std::string>()) << "\n";
    }
  }
  if (!gate) return kExitOk;
  // A gate that compared fewer cells than asked cannot pass: "no slowdown" over nothing is no
  // finding.
  const int wanted = a.min_cells.value_or(expected);
  if (compared < wanted || compared == 0) {
    console.err << "benchfleet: compared " << compared << " of " << (a.min_cells ? "the " : "A's ") << wanted
                << (a.min_cells ? " cells asked (--min-cells)" : " measured cells") << "; the gate cannot pass\n";
    for (const std::string& u : uncompared) console.err << "  not compared: " << escape_display_text(u) << "\n";
    return kExitIncomplete;
  }
  if (!a.fail_if_slower) return kExitOk;
  const std::string beyond = " beyond " + std::to_string(static_cast<int>(*a.fail_if_slower)) + "%";
  if (slow.empty()) {
    console.err << "benchfleet: no significant slowdown" << beyond << " in " << compared << " cells\n";
    return kExitOk;
  }
  console.err << "benchfleet: " << slow.size() << " significant slowdown(s)" << beyond << " (B against A):\n";
  for (const std::string& x : slow) console.err << "  " << escape_display_text(x) << "\n";
  return kExitError;
}

int report(const ReportArgs& a, FleetClient& client, Console& console) {
  auto text = client.report(a.id, a.format, a.stat, a.exclude_flagged);
  if (!text.ok()) return fail(console, text.error());
  if (!a.output.empty()) {
    if (auto s = write_file_atomically(a.output, *text); !s.ok()) return fail(console, s.error());
    console.err << "wrote the " << a.format << " report of run " << a.id << " to " << a.output << "\n";
    return kExitOk;
  }
  console.out << *text;
  if (!text->empty() && text->back() != '\n') console.out << "\n";
  return kExitOk;
}

// AGENT is an id, or a name looked up in the agent list.
Result<std::int64_t> agent_id_of(const std::string& agent, FleetClient& client) {
  if (!agent.empty() && agent.find_first_not_of("0123456789") == std::string::npos && agent.size() < 19) {
    return std::stoll(agent);
  }
  BF_ASSIGN_OR_RETURN(auto list, client.agents());
  for (const auto& a : list.value("agents", nlohmann::json::array())) {
    if (a.value("name", "") == agent) return a.value("id", std::int64_t{0});
  }
  return Error::not_found("no agent is named \"" + agent + "\" (benchfleet agents lists them)");
}

// Prints JSON (indented) or a view, for the read commands.
int show(const Result<nlohmann::json>& j, bool as_json, std::string (*view)(const nlohmann::json&), Console& console) {
  if (!j.ok()) return fail(console, j.error());
  console.out << (as_json ? j->dump(2) + "\n" : view(*j));
  return kExitOk;
}

// The run commands: submit, runs, run, report, compare, cancel, watch.
class RunCommands {
 public:
  // Registers the commands on `app`. REQUIRES: this object outlives app.parse() and run().
  explicit RunCommands(CLI::App& app) {
    watch_options_.show_results = true;
    submit_ = app.add_subcommand(
        "submit",
        "Validate a matrix file (YAML, the API's field names) and submit it. With --wait, show progress\n"
        "until the run ends (a bar on a terminal, plain lines otherwise, with the coordinator's ETA), then\n"
        "print its comparison tables (Markdown, as `report`); the exit code then says how it ended (0\n"
        "clean, 3 failures, 4 cancelled).");
    submit_->add_option("file", submit_args_.file, "matrix file (YAML or JSON)")->required();
    submit_->add_flag("--wait", submit_args_.wait, "follow the run until it ends, then print its report");
    submit_->add_flag("--no-report", submit_args_.no_report, "with --wait: end with the counts, not the report");
    submit_->add_flag("--dry-run", submit_args_.dry_run,
                      "validate and count the jobs, and have the coordinator check them as a submit would (the\n"
                      "catalog, its limits, the fleet's builds, GPU classes, runtimes and modes: what would wait\n"
                      "forever or end unsupported is named); submit nothing. Exit 1 when it could not be checked");
    submit_->add_flag("--allow-pending", submit_args_.allow_pending,
                      "queue jobs for a torch build or GPU class no enrolled agent offers yet (hosts still to\n"
                      "come) instead of being refused; what waits is said");
    submit_->add_flag("--print-id", submit_args_.print_id, "print only the run id on stdout (for scripts)");
    submit_->add_option("--name", submit_args_.name, "replace the matrix's name");
    submit_->add_option("--gpus", submit_args_.gpus, "replace the matrix's GPU classes (comma-separated)")
        ->delimiter(',');
    submit_->add_option("--builds", submit_args_.builds, "replace the matrix's torch builds (comma-separated)")
        ->delimiter(',');
    submit_->add_option("--interval", submit_args_.interval_s, "seconds between progress polls")
        ->check(CLI::Range(0.05, 60.0))
        ->capture_default_str();

    runs_ = app.add_subcommand("runs", "List runs, newest first, with progress and verdict counts.");
    runs_->add_option("--limit", runs_limit_, "how many runs")->check(CLI::Range(1, 500))->capture_default_str();
    runs_->add_flag("--json", runs_json_, "print the API's JSON");

    run_ = app.add_subcommand("run", "Show one run: state, job and verdict counts, its matrix.");
    run_->add_option("id", run_id_, "run id")->required()->check(positive_id());
    run_->add_flag("--json", run_json_, "print the API's JSON");

    report_ = app.add_subcommand(
        "report",
        "Print or save a run's comparison tables: per GPU class x batch size x dtype, latency per\n"
        "(build, mode) and speedup against eager, OOM and other verdicts as such (Markdown in the seeds'\n"
        "format); compiled cells marked wrong when their output failed the accuracy check (left out of\n"
        "geomeans), noisy cells flagged; compile time, peak memory and memory ratio; pass rates.");
    report_->add_option("id", report_args_.id, "run id")->required()->check(positive_id());
    add_format_and_stat(*report_, report_args_.format, report_args_.stat,
                        "statistic per cell: mean (as the seeds) or median");
    report_->add_flag(
        "--exclude-flagged", report_args_.exclude_flagged,
        "leave noise-flagged results (high_cv, second_mode, clock_drop, throttled, ci_not_met) out of the "
        "geomeans too");
    report_->add_option("-o,--output", report_args_.output, "write to this file instead of stdout");

    compare_ = app.add_subcommand(
        "compare",
        "Compare two sides cell by cell, each a (run, torch build): two runs, or two builds of one run\n"
        "(by default the first build of each run, or the first two of one). For every GPU class x batch x\n"
        "(runtime, mode) both measured: A's and B's latency, the ratio A/B (above 1: B is faster) and\n"
        "whether the change is significant: beyond the run-to-run noise (the 95% interval from the\n"
        "cell's repetitions, each a fresh process, where both sides have two or more; else the 95% CIs\n"
        "apart and beyond the device's stated floor: 80% on a CPU). Noisy pairs marked *; a warning when\n"
        "the sides differ besides torch (threads, CPU, GPU, driver); an A/A (one torch, one machine)\n"
        "said. Cells judged by repetitions are held together to a 5% false-discovery rate, and judged\n"
        "as a whole: their geometric mean, with a 95% interval over the cells (a change every cell\n"
        "shares, 5% or more). With --fail-if-slower PCT the exit code is 1 when B is significantly\n"
        "slower than A by more than PCT percent in any cell or overall (named), and 5 when fewer\n"
        "cells were compared than A measured (or than --min-cells): a gate that compared nothing\n"
        "does not pass.");
    compare_->add_option("a", compare_args_.run_a, "run A")->required()->check(positive_id());
    compare_->add_option("b", compare_args_.run_b, "run B (A again to compare two of its builds; none with --aa)")
        ->check(positive_id());
    compare_->add_option("--build-a", compare_args_.build_a, "A's torch build (default: run A's first)");
    compare_->add_option("--build-b", compare_args_.build_b, "B's torch build (default: run B's first, or A's second)");
    compare_
        ->add_option("--fail-if-slower", compare_args_.fail_if_slower,
                     "exit 1 when B is significantly slower than A by more than this percentage")
        ->check(CLI::Range(0.0, 1000.0));
    compare_
        ->add_option("--min-cells", compare_args_.min_cells,
                     "exit 5 unless at least this many cells were compared (default with --fail-if-slower: "
                     "every cell A measured)")
        ->check(CLI::Range(1, 1'000'000));
    compare_->add_flag("--aa", compare_args_.aa,
                       "an A/A instead: submit run A's matrix again with --repetitions fresh processes per cell,\n"
                       "follow it, and print how far each cell moved between processes (the run-to-run noise\n"
                       "any gate has to see past) and the comparison of run A with its repeat");
    compare_->add_option("--repetitions", compare_args_.repetitions, "--aa: fresh processes per cell")
        ->check(CLI::Range(2, 100))
        ->capture_default_str();
    compare_->add_option("--models", compare_args_.models, "--aa: a slice of run A's models (catalog ids)")
        ->delimiter(',');
    add_format_and_stat(*compare_, compare_args_.format, compare_args_.stat,
                        "statistic per cell, its CI and the ratio: median or mean");

    cancel_ = app.add_subcommand("cancel", "Cancel a run: queued jobs never start, running ones are stopped.");
    cancel_->add_option("id", cancel_id_, "run id")->required()->check(positive_id());

    watch_ = app.add_subcommand("watch",
                                "Follow a run until it ends: a line per result as it arrives, and the progress bar.");
    watch_->add_option("id", watch_id_, "run id")->required()->check(positive_id());
    watch_->add_option("--interval", watch_options_.interval_s, "seconds between polls")
        ->check(CLI::Range(0.05, 60.0))
        ->capture_default_str();
    watch_->add_flag("--no-results", watch_quiet_, "only the progress, no line per result");
  }
  RunCommands(const RunCommands&) = delete;
  RunCommands& operator=(const RunCommands&) = delete;

  // The exit code of the run command app.parse() found, or nullopt when it found another one.
  std::optional<int> run(FleetClient& client, Console& console) {
    if (submit_->parsed()) return submit(submit_args_, client, console);
    if (runs_->parsed()) return show(client.runs(runs_limit_), runs_json_, runs_view, console);
    if (run_->parsed()) return show(client.run(run_id_), run_json_, run_view, console);
    if (report_->parsed()) return report(report_args_, client, console);
    if (compare_->parsed()) return compare(compare_args_, client, console);
    if (cancel_->parsed()) {
      auto r = client.cancel(cancel_id_);
      if (!r.ok()) return fail(console, r.error());
      if (r->value("already_cancelled", false)) {
        console.out << "run " << cancel_id_ << " was already cancelled\n";
      } else {
        console.out << "cancelled run " << cancel_id_ << ": " << r->value("cancelled_jobs", 0) << " jobs stopped\n";
      }
      return kExitOk;
    }
    if (watch_->parsed()) {
      watch_options_.show_results = !watch_quiet_;
      return watch_run(client, watch_id_, watch_options_, console);
    }
    return std::nullopt;
  }

 private:
  SubmitArgs submit_args_;
  CLI::App* submit_ = nullptr;
  int runs_limit_ = 20;
  bool runs_json_ = false;
  CLI::App* runs_ = nullptr;
  std::int64_t run_id_ = 0;
  bool run_json_ = false;
  CLI::App* run_ = nullptr;
  ReportArgs report_args_;
  CLI::App* report_ = nullptr;
  CompareArgs compare_args_;
  CLI::App* compare_ = nullptr;
  std::int64_t cancel_id_ = 0;
  CLI::App* cancel_ = nullptr;
  std::int64_t watch_id_ = 0;
  WatchOptions watch_options_;
  bool watch_quiet_ = false;
  CLI::App* watch_ = nullptr;
};

// The agent commands: agents, agents approve, drain.
class AgentCommands {
 public:
  // Registers the commands on `app`. REQUIRES: this object outlives app.parse() and run().
  explicit AgentCommands(CLI::App& app) {
    agents_ = app.add_subcommand("agents", "List agents: slots (GPU, class, memory), builds, last seen, jobs.");
    agents_->add_flag("--json", agents_json_, "print the API's JSON");
    approve_ = agents_->add_subcommand(
        "approve",
        "Allow the next enrolment under an agent's name without its current token (a host whose state\n"
        "directory was lost enrols again under its name, keeping its id). Without this, or the token, the\n"
        "coordinator refuses it (409), so the enrolment token alone cannot take over an agent's identity.");
    approve_->add_option("agent", approve_agent_, "agent id or name")->required();

    drain_ = app.add_subcommand(
        "drain", "Drain an agent (it finishes its jobs and takes no new ones), or resume it with --resume.");
    drain_->add_option("agent", drain_agent_, "agent id or name")->required();
    drain_->add_flag("--resume", drain_resume_, "take jobs again");
  }
  AgentCommands(const AgentCommands&) = delete;
  AgentCommands& operator=(const AgentCommands&) = delete;

  // The exit code of the agent command app.parse() found, or nullopt when it found another one.
  std::optional<int> run(FleetClient& client, Console& console) {
    if (approve_->parsed()) {
      auto id = agent_id_of(approve_agent_, client);
      if (!id.ok()) return fail(console, id.error());
      auto r = client.approve(*id);
      if (!r.ok()) return fail(console, r.error());
      console.out << "agent " << *id << " (" << r->value("name", "?")
                  << "): its next enrolment under this name is allowed without its token\n";
      return kExitOk;
    }
    if (agents_->parsed()) return show(client.agents(), agents_json_, agents_view, console);
    if (drain_->parsed()) {
      auto id = agent_id_of(drain_agent_, client);
      if (!id.ok()) return fail(console, id.error());
      auto r = client.drain(*id, !drain_resume_);
      if (!r.ok()) return fail(console, r.error());
      console.out << "agent " << *id << " (" << r->value("name", "?") << ") "
                  << (r->value("draining", false) ? "is draining: it finishes its jobs and takes no new ones"
                                                  : "takes jobs again")
                  << "\n";
      return kExitOk;
    }
    return std::nullopt;
  }

 private:
  bool agents_json_ = false;
  CLI::App* agents_ = nullptr;
  std::string approve_agent_;
  CLI::App* approve_ = nullptr;
  std::string drain_agent_;
  bool drain_resume_ = false;
  CLI::App* drain_ = nullptr;
};

// Parses the command line; the exit code when it ends the program (a usage error, --help,
// --version), naming the subcommand meant when one was mistyped.
std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, Console& console) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // A mistyped subcommand reaches CLI11 as an unexpected argument: name the one meant.
    if (app.get_subcommands().empty()) {
      std::vector<std::string> commands;
      for (const CLI::App* sub : app.get_subcommands({})) commands.push_back(sub->get_name());
      for (int i = 1; i < argc; ++i) {
        const std::string word = argv[i];
        if (word.empty() || word.front() == '-') continue;
        if (const auto meant = nearest_word(word, commands)) {
          console.err << "benchfleet: unknown command \"" << escape_display_text(word) << "\" (did you mean \""
                      << *meant << "\"?); benchfleet --help lists them\n";
          return kExitUsage;
        }
      }
    }
    const int code = app.exit(e, console.out, console.err);
    return code == 0 ? kExitOk : kExitUsage;
  }
  return std::nullopt;
}

// Reads the CLI's config file (before the environment and flags, which override it); the exit
// code when it is invalid.
std::optional<int> read_config_file(int argc, char** argv, CliConfig& config, Console& console) {
  if (const std::string path = cli_config_path(argc, argv); !path.empty()) {
    auto root = config::load_yaml_mapping_file(path);
    if (!root.ok()) return fail(console, Error::invalid("", root.error().describe()));
    if (auto s = config::apply_yaml(*root, path, cli_options(config)); !s.ok()) {
      return fail(console, Error::invalid("", s.error().describe()));
    }
  }
  return std::nullopt;
}

}  // namespace

int run_cli(int argc, char** argv, Console& console) {
  CliConfig config;
  if (auto code = read_config_file(argc, argv, config, console)) return *code;

  CLI::App app{kDescription, "benchfleet"};
  app.set_version_flag("--version", std::string("benchfleet ") + BENCHFLEET_VERSION);
  app.require_subcommand(1);
  app.fallthrough();           // global options may follow the subcommand
  std::string ignored_config;  // read above
  app.add_option("-c,--config", ignored_config, "YAML config file (url, operator_token, ...)")
      ->envname("BENCHFLEET_CLI_CONFIG");
  for (const auto& o : cli_options(config)) o.add(app, config::flag_of(o.key), config::env_of(o.key), o.help);

  RunCommands runs(app);                                    // submit, runs, run, report, compare, cancel, watch
  AgentCommands agents(app);                                // agents, approve, drain
  const HistoryCommands history(app);                       // schedule, series, regressions
  const FleetCommands fleet(app);                           // models, builds, modes
  const ModelCommands model_commands(app, fleet.models());  // models add/show/rm, artifacts
  std::string launcher_config, slurm_class;
  auto* slurm_cmd = app.add_subcommand(
      "slurm-script",
      "Print the batch script benchfleet-slurm-launcher submits for one GPU class (#SBATCH lines from\n"
      "the launcher's config, then the agent in allocation mode), for a manual `sbatch`. Reads only the\n"
      "launcher's YAML config; asks no coordinator. Create the job's log directory (printed on stderr)\n"
      "first; several agents at once: sbatch --array=0-N.");
  slurm_cmd->add_option("--launcher-config", launcher_config, "the launcher's YAML config file")->required();
  slurm_cmd->add_option("--class", slurm_class, "the GPU class (a classes[].gpu_class of the config)")->required();

  if (auto code = parse_command_line(app, argc, argv, console)) return *code;
  if (slurm_cmd->parsed()) {  // needs no coordinator, URL or token
    auto script = slurm_script(launcher_config, slurm_class);
    if (!script.ok()) return fail(console, script.error());
    console.out << script->script << std::flush;
    console.err << "# the job writes its log under " << script->log_dir << ": mkdir -p " << script->log_dir
                << " before sbatch\n";
    return kExitOk;
  }
  if (auto s = validate(config); !s.ok()) return fail(console, Error::invalid("", s.error().describe()));
  auto token = resolve_operator_token(config);
  if (!token.ok()) return fail(console, Error::invalid("", token.error().describe()));
  FleetClient client(config.url, *token, std::chrono::seconds(config.timeout_s));

  if (auto code = runs.run(client, console)) return *code;
  if (auto code = agents.run(client, console)) return *code;
  if (auto code = history.run(client, console)) return *code;
  if (auto code = model_commands.run(client, console)) return *code;
  if (auto code = fleet.run(client, console)) return *code;
  return kExitUsage;
}

}  // namespace benchfleet::cli
