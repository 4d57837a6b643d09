#include "cli/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>
#include <utility>

#include "coordinator/rules/fingerprint_diff.h"

namespace benchfleet::cli {
namespace {

using nlohmann::json;

std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// `j[key]` when it is an array, else an empty one: a reference into `j`, never a copy.
const json& array_at(const json& j, const char* key) {
  static const json kEmpty = json::array();
  if (!j.is_object()) return kEmpty;
  const auto it = j.find(key);
  return it != j.end() && it->is_array() ? *it : kEmpty;
}

// The table of `report` with the same GPU class, batch and dtype as `t`, or nullptr.
const json* same_table(const json& report, const json& t) {
  for (const json& u : array_at(report, "tables")) {
    if (u.value("gpu", "") == t.value("gpu", "") && u.value("batch", 0) == t.value("batch", 0) &&
        u.value("dtype", "float32") == t.value("dtype", "float32")) {
      return &u;
    }
  }
  return nullptr;
}

// Latency column indexes of `build` in `table`, by "runtime/mode".
std::vector<std::pair<std::string, std::size_t>> latency_columns(const json& table, const std::string& build) {
  std::vector<std::pair<std::string, std::size_t>> out;
  const json& cols = array_at(table, "columns");
  for (std::size_t i = 0; i < cols.size(); ++i) {
    if (cols[i].value("kind", "") == "latency_ms" && cols[i].value("build", "") == build) {
      out.emplace_back(cols[i].value("runtime", "") + "/" + cols[i].value("mode", ""), i);
    }
  }
  return out;
}

std::vector<std::string> fingerprints(const json& table, const std::string& build) {
  std::vector<std::string> out;
  for (const json& c : array_at(table, "columns")) {
    if (c.value("kind", "") != "latency_ms" || c.value("build", "") != build) continue;
    for (const json& f : array_at(c, "fingerprints")) out.push_back(f.dump());
  }
  return out;
}

bool usable(const json& cell) {
  return cell.is_object() && cell.value("status", "") == "ok" && cell.contains("value") && cell["value"].is_number() &&
         cell["value"].get<double>() > 0;
}

std::string verdict_of(const json& a, const json& b) {
  const auto ci = [](const json& c, const char* k) { return c.contains(k) && c[k].is_number(); };
  if (!ci(a, "ci_low_ms") || !ci(a, "ci_high_ms") || !ci(b, "ci_low_ms") || !ci(b, "ci_high_ms")) return "unknown";
  const double al = a["ci_low_ms"], ah = a["ci_high_ms"], bl = b["ci_low_ms"], bh = b["ci_high_ms"];
  if (al <= bh && bl <= ah) return "same";
  return bh < al ? "faster" : "slower";
}

}  // namespace

Comparison compare_reports(const CompareSide& a, const CompareSide& b) {
  Comparison out;
  out.stat = a.report.value("stat", "mean");
  out.name_a = "run " + a.report.value("run_id", json(0)).dump() + " " + a.build;
  out.name_b = "run " + b.report.value("run_id", json(0)).dump() + " " + b.build;
  for (const json& ta : array_at(a.report, "tables")) {
    const json* tb = same_table(b.report, ta);
    if (!tb) continue;
    const auto cols_a = latency_columns(ta, a.build);
    const auto cols_b = latency_columns(*tb, b.build);
    std::set<std::string> runtimes;
    for (const auto& [key, i] : cols_a) runtimes.insert(key.substr(0, key.find('/')));
    for (const auto& column : cols_a) {
      const std::string& key = column.first;  // not a structured binding: clang 14 cannot capture one
      const std::size_t ia = column.second;
      const auto match = std::find_if(cols_b.begin(), cols_b.end(), [&key](const auto& c) { return c.first == key; });
      if (match == cols_b.end()) continue;
      const std::size_t ib = match->second;
      for (const json& ra : array_at(ta, "rows")) {
        for (const json& rb : array_at(*tb, "rows")) {
          if (rb.value("model", "") != ra.value("model", "")) continue;
          const json& cells_a = array_at(ra, "cells");
          const json& cells_b = array_at(rb, "cells");
          if (ia >= cells_a.size() || ib >= cells_b.size()) continue;
          const json& ca = cells_a[ia];
          const json& cb = cells_b[ib];
          if (!usable(ca) || !usable(cb)) continue;
          ComparedCell c;
          c.table = ta.value("title", "");
          c.model = ra.value("label", "");
          c.column = runtimes.size() > 1 ? key.substr(0, key.find('/')) + " - " + key.substr(key.find('/') + 1)
                                         : key.substr(key.find('/') + 1);
          c.a_ms = ca["value"];
          c.b_ms = cb["value"];
          c.ratio = c.a_ms / c.b_ms;
          c.verdict = verdict_of(ca, cb);
          std::set<std::string> flags;
          for (const json* cell : {&ca, &cb}) {
            for (const json& f : array_at(*cell, "flags")) {
              if (f.is_string()) flags.insert(f.get<std::string>());
            }
          }
          c.flags.assign(flags.begin(), flags.end());
          out.cells.push_back(std::move(c));
        }
      }
    }
    for (const auto& d :
         rules::fingerprint_differences({{"A", fingerprints(ta, a.build)}, {"B", fingerprints(*tb, b.build)}})) {
      out.warnings.push_back(ta.value("title", "") + ": " + d.text);
    }
  }
  return out;
}

std::vector<ComparedCell> slowdowns(const Comparison& c, double percent) {
  std::vector<ComparedCell> out;
  for (const ComparedCell& cell : c.cells) {
    if (cell.verdict == "slower" && (cell.b_ms / cell.a_ms - 1) * 100 > percent) out.push_back(cell);
  }
  return out;
}

std::string render_comparison(const Comparison& c, const std::string& format) {
  if (format == "json") {
    json cells = json::array();
    for (const ComparedCell& x : c.cells) {
      cells.push_back({{"table", x.table},
                       {"model", x.model},
                       {"column", x.column},
                       {"a_ms", x.a_ms},
                       {"b_ms", x.b_ms},
                       {"ratio", x.ratio},
                       {"verdict", x.verdict},
                       {"flags", x.flags}});
    }
    return json{{"stat", c.stat}, {"a", c.name_a}, {"b", c.name_b}, {"cells", cells}, {"warnings", c.warnings}}.dump(
               2) +
           "\n";
  }
  const char* words[] = {"same", "≈ no significant change", "faster", "▲ faster", "slower", "▼ slower", "unknown", "?"};
  const auto word = [&](const std::string& v) {
    for (std::size_t i = 0; i + 1 < std::size(words); i += 2) {
      if (v == words[i]) return std::string(words[i + 1]);
    }
    return v;
  };
  std::string s;
  if (format == "csv") {
    s = "table,model,column,a_ms,b_ms,ratio,verdict,flags\n";
    for (const ComparedCell& x : c.cells) {
      s += "\"" + x.table + "\",\"" + x.model + "\",\"" + x.column + "\"," + fixed(x.a_ms, 3) + "," + fixed(x.b_ms, 3) +
           "," + fixed(x.ratio, 4) + "," + x.verdict + ",\"";
      for (std::size_t i = 0; i < x.flags.size(); ++i) s += (i ? "," : "") + x.flags[i];
      s += "\"\n";
    }
    return s;
  }
  s = "# A = " + c.name_a + " vs B = " + c.name_b + " (" + c.stat + " latency in ms; A/B above 1: B is faster)\n\n";
  for (const std::string& w : c.warnings) s += "⚠ differs besides torch: " + w + "\n";
  if (!c.warnings.empty()) s += "\n";
  s += "| **Table** | **Task/Model** | **Column** | **A** | **B** | **A/B** | **Change** |\n";
  s += "|:---|:---|:---|---:|---:|---:|:---|\n";
  for (const ComparedCell& x : c.cells) {
    std::string mark = x.flags.empty() ? "" : "*";
    s += "| " + x.table + " | " + x.model + " | " + x.column + " | " + fixed(x.a_ms, 3) + " | " + fixed(x.b_ms, 3) +
         " | " + fixed(x.ratio, 2) + "x" + mark + " | " + word(x.verdict) + " |\n";
  }
  if (c.cells.empty()) s += "| - | no cell measured ok by both sides | | | | | |\n";
  return s;
}

}  // namespace benchfleet::cli
