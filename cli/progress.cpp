#include "cli/progress.h"

#include <algorithm>
#include <cmath>

#include "common/json_reader.h"
#include "common/shared_rules.h"

namespace benchfleet::cli {
namespace {

std::int64_t count_of(const std::map<std::string, std::int64_t>& m, const std::string& key) {
  auto it = m.find(key);
  return it == m.end() ? 0 : it->second;
}

Result<std::map<std::string, std::int64_t>> counts(const nlohmann::json& j, const std::string& path) {
  std::map<std::string, std::int64_t> out;
  if (!j.is_object()) return Error::invalid(path, "must be an object of counts");
  for (const auto& [key, value] : j.items()) {
    if (!value.is_number_integer()) return Error::invalid(path + "." + key, "must be an integer");
    out[key] = value.get<std::int64_t>();
  }
  return out;
}

}  // namespace

Result<RunProgress> progress_from_json(const nlohmann::json& run) {
  // Members the display does not use are ignored: a newer coordinator may add some.
  if (auto err = expect_object(run, "run")) return *err;
  RunProgress p;
  auto member = [&](const char* key, auto& out) -> std::optional<Error> {
    auto it = run.find(key);
    if (it == run.end()) return Error::invalid(key, "is missing from the coordinator's answer");
    return decode_value(*it, key, out);
  };
  for (auto err : {member("id", p.id), member("name", p.name), member("state", p.state),
                   member("job_count", p.job_count), member("finished_jobs", p.finished_jobs)}) {
    if (err) return *err;
  }
  BF_ASSIGN_OR_RETURN(p.jobs, counts(run.value("jobs", nlohmann::json()), "jobs"));
  BF_ASSIGN_OR_RETURN(p.results, counts(run.value("results", nlohmann::json()), "results"));
  return p;
}

std::optional<double> coordinator_eta_s(const nlohmann::json& run) {
  const auto it = run.find("eta_s");
  if (it == run.end() || !it->is_number()) return std::nullopt;
  const double v = it->get<double>();
  if (!(v >= 0)) return std::nullopt;
  return v;
}

std::string format_duration(double seconds) {
  const auto s = static_cast<std::int64_t>(std::llround(std::max(0.0, seconds)));
  auto two = [](std::int64_t v) {
    std::string out = v < 10 ? "0" : "";
    out += std::to_string(v);
    return out;
  };
  std::string out;
  if (s < 60) {
    out = std::to_string(s);
    out += 's';
  } else if (s < 3600) {
    out = std::to_string(s / 60);
    out += 'm';
    out += two(s % 60);
    out += 's';
  } else {
    out = std::to_string(s / 3600);
    out += 'h';
    out += two(s / 60 % 60);
    out += 'm';
  }
  return out;
}

std::string status_counts(const RunProgress& p, const std::string& separator) {
  std::string out;
  auto add = [&](const std::string& name, std::int64_t n) {
    if (n == 0) return;
    if (!out.empty()) out += separator;
    out += name;
    out += ' ';
    out += std::to_string(n);
  };
  // Display order (statuses.json): verdicts, then the jobs that are running or ended without one.
  for (const std::string& v : statuses().results) add(v, count_of(p.results, v));
  // A leased job is about to run; the difference is not worth a flickering line.
  add("running", count_of(p.jobs, "running") + count_of(p.jobs, "leased"));
  for (const std::string& s : statuses().ended_jobs) {
    if (s != "done") add(s, count_of(p.jobs, s));
  }
  return out;
}

std::string render_bar(const RunProgress& p, std::optional<double> eta_s, int width) {
  const double fraction =
      p.job_count > 0 ? static_cast<double>(p.finished_jobs) / static_cast<double>(p.job_count) : 1.0;
  std::string head = "run ";
  head += std::to_string(p.id);
  head += ' ';
  std::string tail = " ";
  tail += std::to_string(p.finished_jobs);
  tail += '/';
  tail += std::to_string(p.job_count);
  tail += ' ';
  tail += std::to_string(static_cast<int>(std::floor(fraction * 100)));
  tail += '%';
  if (const std::string counts = status_counts(p); !counts.empty()) {
    tail += "  ";
    tail += counts;
  }
  if (!p.ended()) {
    tail += "  ETA ";
    tail += eta_s ? format_duration(*eta_s) : std::string("--");
  }
  // The bar's width follows the terminal's alone (a third of it, 10 to 30 cells), so it stays put
  // while the counts after it grow; the line is cut when too narrow.
  const int bar_cells = std::clamp(width / 3, 10, 30);
  const int filled = static_cast<int>(std::floor(fraction * bar_cells));
  std::string line = head;
  line += '[';
  line.append(static_cast<std::size_t>(filled), '#');
  line.append(static_cast<std::size_t>(bar_cells - filled), '-');
  line += ']';
  line += tail;
  if (width > 0 && static_cast<int>(line.size()) > width) line.resize(static_cast<std::size_t>(width));
  return line;
}

namespace {

// "run 7 running: 12/36 jobs" (the common start of the plain line and the summary).
std::string run_head(const RunProgress& p) {
  std::string line = "run ";
  line += std::to_string(p.id);
  line += ' ';
  line += p.state;
  return line;
}

std::string fraction_text(const RunProgress& p) {
  std::string out = std::to_string(p.finished_jobs);
  out += '/';
  out += std::to_string(p.job_count);
  out += " jobs";
  return out;
}

}  // namespace

std::string render_plain(const RunProgress& p, std::optional<double> eta_s) {
  std::string line = run_head(p);
  line += ": ";
  line += fraction_text(p);
  line += " finished";
  if (const std::string counts = status_counts(p, ", "); !counts.empty()) {
    line += " (";
    line += counts;
    line += ')';
  }
  if (!p.ended() && eta_s) {
    line += "; ETA ";
    line += format_duration(*eta_s);
  }
  return line;
}

std::string render_summary(const RunProgress& p, double elapsed_s) {
  std::string line = run_head(p);
  if (elapsed_s > 0) {
    line += " after ";
    line += format_duration(elapsed_s);
  }
  line += ": ";
  line += fraction_text(p);
  if (const std::string counts = status_counts(p); !counts.empty()) {
    line += " (";
    line += counts;
    line += ')';
  }
  return line;
}

int exit_code_for(const RunProgress& p) {
  if (p.state == "cancelled") return kExitRunCancelled;
  if (count_of(p.jobs, "failed") > 0) return kExitRunFailed;
  for (const std::string& v : statuses().problems) {
    if (count_of(p.results, v) > 0) return kExitRunFailed;
  }
  return kExitOk;
}

}  // namespace benchfleet::cli
