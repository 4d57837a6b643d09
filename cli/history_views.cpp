#include "cli/history_views.h"

#include <cstdio>
#include <vector>

#include "cli/views.h"

namespace benchfleet::cli {
namespace {

using nlohmann::json;

// "2026-11-21T20:05:00.123Z" -> "2026-11-21 20:05"
std::string minute(const json& j, const char* key) {
  std::string t = member_text(j, key);
  if (t.size() >= 16 && t[10] == 'T') {
    t[10] = ' ';
    t.resize(16);
  }
  return t;
}

std::string number(const json& j, const char* key, const char* format) {
  auto it = j.find(key);
  if (it == j.end() || !it->is_number()) return "-";
  char buf[48];
  std::snprintf(buf, sizeof buf, format, it->get<double>());
  return buf;
}

// "microsoft/resnet-50 b1 eager/float32/libtorch a100 nightly" from a series key.
std::string key_text(const json& k) {
  return member_text(k, "model") + " b" + member_text(k, "batch") + " " + member_text(k, "mode") + "/" +
         member_text(k, "dtype") + "/" + member_text(k, "runtime") + " " + member_text(k, "gpu") + " " +
         member_text(k, "torch_build");
}

// "2.7.0.dev20250106 (abc123)" of a point reference; "-" when null.
std::string version_of(const json& ref) {
  if (!ref.is_object()) return "-";
  std::string v = member_text(ref, "torch_version");
  if (const std::string git = member_text(ref, "torch_git"); git != "-") v += " (" + git.substr(0, 12) + ")";
  return v;
}

std::string bisect_range(const json& r) {
  return version_of(r.value("last_good", json())) + " -> " + version_of(r.value("first_bad", json()));
}

}  // namespace

std::string schedules_view(const json& list) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : list.value("schedules", json::array())) {
    rows.push_back({member_text(s, "id"), member_text(s, "name"), member_text(s, "cron"),
                    s.value("enabled", false) ? "enabled" : "paused", minute(s, "next_due_at"),
                    member_text(s, "last_run_id"), member_text(s, "runs"), member_text(s, "missed")});
  }
  if (rows.empty()) return "no schedules\n";
  return render_text_table({"ID", "NAME", "CRON", "STATE", "NEXT DUE (UTC)", "LAST RUN", "RUNS", "MISSED"}, rows);
}

std::string schedule_view(const json& s) {
  const json m = s.value("matrix", json::object());
  auto axis = [&](const char* key) {
    std::string out;
    for (const auto& v : m.value(key, json::array())) {
      if (!out.empty()) out += ',';
      out += v.is_string() ? v.get<std::string>() : v.dump();
    }
    return out.empty() ? std::string("-") : out;
  };
  std::string out;
  out += "schedule " + member_text(s, "id") + " \"" + member_text(s, "name") + "\"\n";
  out += "  cron:        " + member_text(s, "cron") + " (UTC)\n";
  out += "  state:       " + std::string(s.value("enabled", false) ? "enabled" : "paused") + "\n";
  out += "  next due:    " + minute(s, "next_due_at") + "\n";
  out += "  last due:    " + minute(s, "last_due_at") + " (run " + member_text(s, "last_run_id") + ")\n";
  out += "  runs:        " + member_text(s, "runs") + " created, " + member_text(s, "missed") + " due times missed\n";
  out += "  models:      " + axis("models") + "\n";
  out += "  batch sizes: " + axis("batch_sizes") + "\n";
  out += "  modes:       " + axis("modes") + "\n";
  out += "  builds:      " + axis("torch_builds") + "\n";
  out += "  gpus:        " + axis("gpus") + "\n";
  out += "  created:     " + minute(s, "created_at") + "\n";
  return out;
}

std::string series_list_view(const json& list) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& s : list.value("series", json::array())) {
    rows.push_back({member_text(s, "id"), member_text(s, "model"), member_text(s, "batch"), member_text(s, "mode"),
                    member_text(s, "dtype"), member_text(s, "runtime"), member_text(s, "gpu"),
                    member_text(s, "torch_build"), member_text(s, "point_count"), member_text(s, "last_torch_version"),
                    number(s, "last_median_ms", "%.3f ms"), member_text(s, "open_regressions")});
  }
  if (rows.empty()) return "no series match\n";
  std::string out = render_text_table({"ID", "MODEL", "BATCH", "MODE", "DTYPE", "RUNTIME", "GPU", "BUILD", "POINTS",
                                       "LAST TORCH", "LAST MEDIAN", "OPEN REGRESSIONS"},
                                      rows);
  if (list.contains("next_after") && !list["next_after"].is_null()) {
    out += "(more: --after " + list["next_after"].dump() + ")\n";
  }
  return out;
}

std::string series_view(const json& s) {
  std::string out = "series " + member_text(s, "id") + ": " + key_text(s) + "\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : s.value("points", json::array())) {
    std::string ci = "-";
    if (p.value("ci_low_ms", json()).is_number() && p.value("ci_high_ms", json()).is_number()) {
      ci = number(p, "ci_low_ms", "%.3f") + " .. " + number(p, "ci_high_ms", "%.3f");
    }
    std::string git = member_text(p, "torch_git");
    if (git.size() > 12) git.resize(12);
    rows.push_back({member_text(p, "torch_version"), git, member_text(p, "run_id"), member_text(p, "status"),
                    number(p, "median_ms", "%.3f ms"), ci, minute(p, "recorded_at")});
  }
  if (rows.empty()) {
    out += "no points\n";
  } else {
    out += render_text_table({"TORCH", "GIT", "RUN", "STATUS", "MEDIAN", "CI (ms)", "RECORDED"}, rows);
  }
  if (s.contains("next_after_point") && !s["next_after_point"].is_null()) {
    out += "(more points: --after-point " + s["next_after_point"].dump() + ")\n";
  }
  const json regressions = s.value("regressions", json::array());
  for (const auto& r : regressions) out += regression_line(r) + "\n";
  return out;
}

std::string regressions_view(const json& list) {
  std::vector<std::vector<std::string>> rows;
  for (const auto& r : list.value("regressions", json::array())) {
    rows.push_back({member_text(r, "id"), key_text(r.value("series", json::object())), member_text(r, "direction"),
                    member_text(r, "state"), number(r, "before_median_ms", "%.3f ms"),
                    number(r, "after_median_ms", "%.3f ms"), number(r, "ratio", "x%.3f"), number(r, "p_value", "%.2g"),
                    bisect_range(r), minute(r, "detected_at")});
  }
  if (rows.empty()) return "no regressions match\n";
  return render_text_table(
      {"ID", "SERIES", "DIRECTION", "STATE", "BEFORE", "AFTER", "RATIO", "P", "LAST GOOD -> FIRST BAD", "DETECTED"},
      rows);
}

std::string regression_line(const json& r) {
  std::string out = member_text(r, "direction") + " " + member_text(r, "id") + " " + member_text(r, "state") + ": " +
                    number(r, "before_median_ms", "%.3f") + " -> " + number(r, "after_median_ms", "%.3f") + " ms (" +
                    number(r, "ratio", "x%.3f") + ", p=" + number(r, "p_value", "%.2g") + "), torch " + bisect_range(r);
  if (const std::string note = member_text(r, "note"); note != "-") out += "; note: " + note;
  return out;
}

}  // namespace benchfleet::cli
