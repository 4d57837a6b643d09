#include "cli/views.h"

#include <algorithm>
#include <cstdio>

namespace benchfleet::cli {
namespace {

using nlohmann::json;

// Code points, not bytes: names may hold non-ASCII text.
std::size_t display_width(const std::string& s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

std::string join(const json& j, const char* key, const char* separator = ",") {
  auto it = j.find(key);
  if (it == j.end() || !it->is_array()) return "?";
  std::string out;
  for (const json& v : *it) {
    if (!out.empty()) out += separator;
    out += v.is_string() ? v.get<std::string>() : v.dump();
  }
  return out.empty() ? "-" : out;
}

// "2026-11-21T20:05:00.123Z" -> "2026-11-21 20:05:00"
std::string timestamp(const json& j, const char* key) {
  std::string t = member_text(j, key);
  if (t.size() >= 19 && t[10] == 'T') {
    t[10] = ' ';
    t.resize(19);
  }
  return t;
}

std::string milliseconds(double ms) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f ms", ms);
  return buf;
}

std::string megabytes(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
  return buf;
}

// "ok 10, oom 2" from a counts object, skipping zeros.
std::string nonzero_counts(const json& counts) {
  if (!counts.is_object()) return "?";
  std::string out;
  for (const auto& [name, n] : counts.items()) {
    if (!n.is_number_integer() || n.get<std::int64_t>() == 0) continue;
    if (!out.empty()) out += ", ";
    out += name + " " + n.dump();
  }
  return out.empty() ? "-" : out;
}

// "dynamic shapes, shape walk" from the matrix's python compile options; "-" with neither.
std::string compile_options(const json& matrix) {
  std::string out;
  if (matrix.value("dynamic", false)) out = "dynamic shapes";
  if (matrix.value("shape_walk", false)) out += out.empty() ? "shape walk" : ", shape walk";
  return out.empty() ? "-" : out;
}

// "cv > 0.1, clock drop > 0.1" from the matrix's noise thresholds.
std::string noise_thresholds(const json& matrix) {
  const json noise = matrix.value("noise", json::object());
  if (!noise.is_object() || noise.empty()) return "-";
  return "cv > " + member_text(noise, "max_cv") + ", clock drop > " + member_text(noise, "max_clock_drop");
}

// "accuracy wrong (0.049 > 0.0001)" or "accuracy pass"; "" without a verdict.
std::string accuracy_text(const json& result) {
  const auto it = result.find("accuracy");
  if (it == result.end() || !it->is_object()) return "";
  std::string out = "accuracy " + it->value("verdict", "?");
  const std::string verdict = it->value("verdict", "");
  if ((verdict == "pass" || verdict == "wrong") && it->contains("compiled_error") && it->contains("tolerance")) {
    char buf[64];
    std::snprintf(buf, sizeof buf, " (%.3g %s %.3g)", it->value("compiled_error", 0.0), verdict == "pass" ? "<=" : ">",
                  it->value("tolerance", 0.0));
    out += buf;
  }
  return out;
}

}  // namespace

std::string member_text(const json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return "-";
  if (it->is_string()) return it->get<std::string>();
  if (it->is_boolean()) return it->get<bool>() ? "yes" : "no";
  if (it->is_number()) return it->dump();
  return "?";
}

std::string render_text_table(const std::vector<std::string>& headers,
                              const std::vector<std::vector<std::string>>& rows) {
  std::vector<std::size_t> widths(headers.size(), 0);
  auto widen = [&](const std::vector<std::string>& cells) {
    for (std::size_t i = 0; i < cells.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], display_width(cells[i]));
    }
  };
  widen(headers);
  for (const auto& row : rows) widen(row);
  std::string out;
  auto line = [&](const std::vector<std::string>& cells) {
    std::string l;
    for (std::size_t i = 0; i < widths.size(); ++i) {
      const std::string cell = i < cells.size() ? cells[i] : "";
      l += cell;
      if (i + 1 < widths.size()) l += std::string(widths[i] - display_width(cell) + 2, ' ');
    }
    while (!l.empty() && l.back() == ' ') l.pop_back();
    out += l + "\n";
  };
  line(headers);
  for (const auto& row : rows) line(row);
  return out;
}

std::string runs_view(const json& run_list) {
  std::vector<std::vector<std::string>> rows;
  if (auto it = run_list.find("runs"); it != run_list.end() && it->is_array()) {
    for (const json& r : *it) {
      rows.push_back({member_text(r, "id"), member_text(r, "name"), member_text(r, "state"),
                      member_text(r, "finished_jobs") + "/" + member_text(r, "job_count"),
                      nonzero_counts(r.value("results", json())), join(r, "gpus"), join(r, "torch_builds"),
                      timestamp(r, "created_at")});
    }
  }
  if (rows.empty()) return "no runs yet\n";
  return render_text_table({"ID", "NAME", "STATE", "PROGRESS", "RESULTS", "GPUS", "BUILDS", "CREATED"}, rows);
}

std::string run_view(const json& run) {
  const json matrix = run.value("matrix", json::object());
  std::vector<std::vector<std::string>> rows = {
      {"run", member_text(run, "id")},
      {"name", member_text(run, "name")},
      {"state", member_text(run, "state")},
      {"progress", member_text(run, "finished_jobs") + "/" + member_text(run, "job_count") + " jobs finished"},
      {"jobs", nonzero_counts(run.value("jobs", json()))},
      {"results", nonzero_counts(run.value("results", json()))},
      {"models", join(matrix, "models", ", ")},
      {"batch sizes", join(matrix, "batch_sizes", ", ")},
      {"modes", join(matrix, "modes", ", ")},
      {"torch builds", join(matrix, "torch_builds", ", ")},
      {"gpus", join(matrix, "gpus", ", ")},
      {"runtimes", join(matrix, "runtimes", ", ")},
      {"dtypes", join(matrix, "dtypes", ", ")},
      {"compile", compile_options(matrix)},
      {"noise flags", noise_thresholds(matrix)},
      {"repetitions", member_text(matrix, "repetitions")},
      {"memory limit", matrix.contains("memory_limit_mb") && matrix["memory_limit_mb"].is_number()
                           ? matrix["memory_limit_mb"].dump() + " MB"
                           : "-"},
      {"created", timestamp(run, "created_at")},
      {"finished", timestamp(run, "finished_at")},
      {"cancelled", timestamp(run, "cancelled_at")},
  };
  std::string out;
  for (const auto& row : rows) {
    out += row[0] + ":" + std::string(14 - row[0].size(), ' ') + row[1] + "\n";
  }
  return out;
}

std::string agents_view(const json& agent_list) {
  std::vector<std::vector<std::string>> rows;
  if (auto it = agent_list.find("agents"); it != agent_list.end() && it->is_array()) {
    for (const json& a : *it) {
      std::string slots;
      for (const json& s : a.value("slots", json::array())) {
        if (!slots.empty()) slots += ", ";
        slots += s.value("id", "?") + "=" + s.value("gpu_class", "?");
        if (s.contains("gpu") && s["gpu"].is_object()) {
          slots += " (" + s["gpu"].value("name", "?") + ", " + std::to_string(s["gpu"].value("memory_mb", 0)) + " MiB)";
        }
      }
      std::string builds;
      for (const json& b : a.value("torch_builds", json::array())) {
        if (!builds.empty()) builds += ", ";
        builds += b.value("name", "?") + " " + b.value("version", "?");
      }
      std::string state = a.value("online", false) ? "online" : "offline";
      if (a.value("draining", false)) state += ", draining";
      if (a.value("reenrolment_approved", false)) state += ", re-enrolment approved";
      std::string jobs;
      for (const json& l : a.value("leases", json::array())) {
        if (!jobs.empty()) jobs += ", ";
        jobs += l.value("slot", "?") + ": job " + member_text(l, "job_id") + " (run " + member_text(l, "run_id") + ")";
      }
      rows.push_back({member_text(a, "id"), member_text(a, "name"), member_text(a, "hostname"),
                      slots.empty() ? "-" : slots, builds.empty() ? "-" : builds, timestamp(a, "last_seen_at"), state,
                      jobs.empty() ? "-" : jobs});
    }
  }
  if (rows.empty()) return "no agents enrolled\n";
  return render_text_table({"ID", "NAME", "HOST", "SLOTS", "BUILDS", "LAST SEEN", "STATE", "JOBS"}, rows);
}

std::string result_line(const json& row) {
  const json job = row.value("job", json::object());
  const json result = row.value("result", json::object());
  const std::string status = result.value("status", "?");
  std::string detail;
  if (status == "ok" && result.contains("stats") && result["stats"].is_object()) {
    detail = "mean " + milliseconds(result["stats"].value("mean_ms", 0.0)) + ", median " +
             milliseconds(result["stats"].value("median_ms", 0.0));
  } else if ((status == "oom") && result.contains("oom") && result["oom"].is_object()) {
    detail = "phase " + result["oom"].value("phase", "?");
    if (result["oom"].contains("bytes_requested") && result["oom"]["bytes_requested"].is_number()) {
      detail += ", " + megabytes(result["oom"]["bytes_requested"].get<double>()) + " requested";
    }
  } else if (result.contains("error") && result["error"].is_string()) {
    detail = result["error"].get<std::string>();
    if (auto nl = detail.find('\n'); nl != std::string::npos) detail.resize(nl);
    if (display_width(detail) > 100) detail = detail.substr(0, 97) + "...";
  }
  std::string line = status;
  line.resize(std::max<std::size_t>(line.size(), 12), ' ');
  line += job.value("model", "?") + "  batch " + member_text(job, "batch") + "  " + job.value("mode", "?") + "  " +
          job.value("torch_build", "?") + "/" + job.value("gpu", "?") + "/" + job.value("runtime", "?");
  // float32 is every run's default: only another precision is named.
  if (const std::string dtype = job.value("dtype", "float32"); dtype != "float32") line += "/" + dtype;
  if (!detail.empty()) line += "  " + detail;
  if (const std::string accuracy = accuracy_text(result); !accuracy.empty()) line += "  " + accuracy;
  if (const std::string flags = join(row, "flags"); flags != "?" && flags != "-") line += "  flagged " + flags;
  return line;
}

}  // namespace benchfleet::cli
