#include "slurm/slurm_commands.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>

namespace benchfleet::slurm {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    const auto nl = text.find('\n');
    const auto line = trim(text.substr(0, nl));
    if (!line.empty()) lines.push_back(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return lines;
}

std::vector<std::string_view> fields_of(std::string_view line, char sep) {
  std::vector<std::string_view> fields;
  for (;;) {
    const auto pos = line.find(sep);
    fields.push_back(line.substr(0, pos));
    if (pos == std::string_view::npos) return fields;
    line.remove_prefix(pos + 1);
  }
}

// A job id as squeue/sacct print it: digits, optionally "_<task>" or "_[<range>]".
bool looks_like_job_id(std::string_view id) {
  if (id.empty() || !std::isdigit(static_cast<unsigned char>(id.front()))) return false;
  const auto us = id.find('_');
  const auto head = id.substr(0, us);
  if (!std::all_of(head.begin(), head.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    return false;
  }
  return us == std::string_view::npos || us + 1 < id.size();
}

// "Unknown", "None", "N/A" and "" are no time.
std::string time_or_empty(std::string_view t) {
  t = trim(t);
  if (t == "Unknown" || t == "None" || t == "N/A") return {};
  return std::string(t);
}

// "CANCELLED by 1000" -> state CANCELLED, rest "by 1000"; "CANCELLED+" -> CANCELLED.
void split_state(std::string_view text, std::string& state, std::string& rest) {
  text = trim(text);
  const auto sp = text.find(' ');
  state = std::string(text.substr(0, sp));
  if (!state.empty() && state.back() == '+') state.pop_back();
  rest = sp == std::string_view::npos ? std::string() : std::string(trim(text.substr(sp + 1)));
}

Error parse_error(std::string_view command, std::string_view line, std::string_view why) {
  return Error{ErrorCode::kUnavailable,
               std::string(command) + ": unexpected output line \"" + std::string(line.substr(0, 200)) +
                   "\": " + std::string(why),
               {}};
}

}  // namespace

bool is_final_state(std::string_view state) {
  static constexpr std::array kFinal{"BOOT_FAIL", "CANCELLED",     "COMPLETED", "DEADLINE",     "FAILED", "NODE_FAIL",
                                     "PREEMPTED", "OUT_OF_MEMORY", "TIMEOUT",   "SPECIAL_EXIT", "REVOKED"};
  return std::any_of(kFinal.begin(), kFinal.end(), [&](const char* s) { return state == s; });
}

Result<std::string> parse_sbatch_parsable(std::string_view out) {
  const auto lines = lines_of(out);
  // sbatch may print warnings before the id on stdout in some versions; the id is the last line.
  if (lines.empty()) return Error{ErrorCode::kUnavailable, "sbatch --parsable printed no job id", {}};
  const auto line = lines.back();
  const auto id = line.substr(0, line.find(';'));
  if (id.empty() ||
      !std::all_of(id.begin(), id.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); })) {
    return parse_error("sbatch --parsable", line, "expected JOBID or JOBID;CLUSTER");
  }
  return std::string(id);
}

Result<std::vector<SlurmJob>> parse_squeue(std::string_view out) {
  std::vector<SlurmJob> jobs;
  for (const auto line : lines_of(out)) {
    const auto f = fields_of(line, '|');
    if (f.size() != 5) return parse_error("squeue", line, "expected 5 fields %i|%T|%j|%N|%r");
    if (!looks_like_job_id(f[0])) return parse_error("squeue", line, "the first field is not a job id");
    SlurmJob job;
    job.job_id = std::string(f[0]);
    job.state = std::string(trim(f[1]));
    job.name = std::string(f[2]);
    job.node = std::string(trim(f[3]));
    job.reason = std::string(trim(f[4]));
    if (job.reason == "None") job.reason.clear();
    if (job.state.empty()) return parse_error("squeue", line, "no state");
    jobs.push_back(std::move(job));
  }
  return jobs;
}

Result<std::vector<SlurmJob>> parse_sacct(std::string_view out) {
  std::vector<SlurmJob> jobs;
  for (const auto line : lines_of(out)) {
    const auto f = fields_of(line, '|');
    if (f.size() != 5) return parse_error("sacct", line, "expected 5 fields JobID|State|Start|End|ExitCode");
    if (!looks_like_job_id(f[0])) return parse_error("sacct", line, "the first field is not a job id");
    SlurmJob job;
    job.job_id = std::string(f[0]);
    split_state(f[1], job.state, job.reason);
    if (job.state.empty()) return parse_error("sacct", line, "no state");
    job.start = time_or_empty(f[2]);
    job.end = time_or_empty(f[3]);
    job.exit_code = std::string(trim(f[4]));
    jobs.push_back(std::move(job));
  }
  return jobs;
}

Result<std::vector<SlurmJob>> parse_scontrol_jobs(std::string_view out) {
  std::vector<SlurmJob> jobs;
  for (const auto line : lines_of(out)) {
    std::map<std::string, std::string, std::less<>> kv;
    std::string_view rest = line;
    while (!rest.empty()) {
      const auto sp = rest.find(' ');
      const auto token = rest.substr(0, sp);
      if (const auto eq = token.find('='); eq != std::string_view::npos) {
        kv.emplace(std::string(token.substr(0, eq)), std::string(token.substr(eq + 1)));
      }
      if (sp == std::string_view::npos) break;
      rest.remove_prefix(sp + 1);
    }
    const auto get = [&](std::string_view key) {
      const auto it = kv.find(key);
      return it == kv.end() ? std::string() : it->second;
    };
    SlurmJob job;
    job.job_id = get("JobId");
    if (const auto array_job = get("ArrayJobId"); !array_job.empty()) {
      const auto task = get("ArrayTaskId");
      const bool range = task.find_first_of("-,") != std::string::npos;
      job.job_id = array_job + "_" + (range ? "[" + task + "]" : task);
    }
    if (!looks_like_job_id(job.job_id)) return parse_error("scontrol show job", line, "no JobId");
    split_state(get("JobState"), job.state, job.reason);
    if (job.state.empty()) return parse_error("scontrol show job", line, "no JobState");
    // A job that ended while pending keeps its last pending reason (Resources, Priority): not why it ended.
    if (const auto reason = get("Reason");
        !reason.empty() && reason != "None" &&
        !(is_final_state(job.state) && (reason == "Resources" || reason == "Priority"))) {
      job.reason = reason;
    }
    job.name = get("JobName");
    job.node = get("NodeList");
    if (job.node == "(null)") job.node.clear();
    job.start = time_or_empty(get("StartTime"));
    job.end = time_or_empty(get("EndTime"));
    job.exit_code = get("ExitCode");
    jobs.push_back(std::move(job));
  }
  return jobs;
}

SlurmCommands::SlurmCommands(const LauncherConfig& config, CommandRunner& runner, std::chrono::milliseconds timeout)
    : config_(config), runner_(runner), timeout_(timeout) {}

Result<CommandOutput> SlurmCommands::run(const std::vector<std::string>& argv) { return runner_.run(argv, timeout_); }

Result<std::string> SlurmCommands::submit(const std::string& script_path, int count) {
  std::vector<std::string> argv{config_.sbatch, "--parsable"};
  if (count > 1) argv.push_back("--array=0-" + std::to_string(count - 1));
  argv.push_back(script_path);
  BF_ASSIGN_OR_RETURN(auto out, run(argv));
  if (!out.succeeded()) {
    return Error{ErrorCode::kUnavailable, command_line(argv) + ": " + out.describe_failure(), {}};
  }
  return parse_sbatch_parsable(out.out);
}

Result<std::vector<SlurmJob>> SlurmCommands::list(const std::vector<std::string>& job_names) {
  std::string names;
  for (const auto& n : job_names) names += (names.empty() ? "" : ",") + n;
  std::vector<std::string> argv{config_.squeue, "-h", "-r", "--me", "--name=" + names, "-o", "%i|%T|%j|%N|%r"};
  BF_ASSIGN_OR_RETURN(auto out, run(argv));
  if (!out.succeeded()) {
    return Error{ErrorCode::kUnavailable, command_line(argv) + ": " + out.describe_failure(), {}};
  }
  return parse_squeue(out.out);
}

Result<std::vector<SlurmJob>> SlurmCommands::account(const std::vector<std::string>& job_ids) {
  std::string ids;
  for (const auto& id : job_ids) ids += (ids.empty() ? "" : ",") + id;
  std::vector<std::string> argv{config_.sacct, "-X", "-n", "-P", "-o", "JobID,State,Start,End,ExitCode", "-j", ids};
  BF_ASSIGN_OR_RETURN(auto out, run(argv));
  if (!out.succeeded()) {
    return Error{ErrorCode::kUnavailable, command_line(argv) + ": " + out.describe_failure(), {}};
  }
  return parse_sacct(out.out);
}

Result<std::optional<SlurmJob>> SlurmCommands::show(const std::string& job_id) {
  std::vector<std::string> argv{config_.scontrol, "show", "job", "-o", job_id};
  BF_ASSIGN_OR_RETURN(auto out, run(argv));
  if (!out.succeeded()) {
    // "slurm_load_jobs error: Invalid job id specified": forgotten (or never known).
    if (out.err.find("Invalid job id") != std::string::npos) return std::optional<SlurmJob>();
    return Error{ErrorCode::kUnavailable, command_line(argv) + ": " + out.describe_failure(), {}};
  }
  BF_ASSIGN_OR_RETURN(auto jobs, parse_scontrol_jobs(out.out));
  for (auto& job : jobs) {
    if (job.job_id == job_id) return std::optional<SlurmJob>(std::move(job));
  }
  if (jobs.size() == 1) return std::optional<SlurmJob>(std::move(jobs.front()));
  return std::optional<SlurmJob>();
}

}  // namespace benchfleet::slurm
