#include "cli/aa_check.h"

#include <algorithm>
#include <utility>

#include "cli/progress.h"
#include "common/display_text.h"
#include "common/number_format.h"

namespace benchfleet::cli {
namespace {

using nlohmann::json;

std::string pct(double fraction) { return format_fixed(fraction * 100, 1) + "%"; }

std::string ms(double v) { return format_fixed(v, 3); }

int fail(Console& console, const std::string& message) {
  console.err << "benchfleet: " << escape_display_text(message) << "\n";
  return kExitError;
}

}  // namespace

std::string aa_noise_table(const json& report) {
  std::string s = "| **Table** | **Task/Model** | **Column** | **n** | **min** | **max** | **spread** | **CV** |\n";
  s += "|:---|:---|:---|---:|---:|---:|---:|---:|\n";
  std::vector<std::pair<double, std::string>> spreads;  // (spread, where) over the cells
  for (const json& t : report.value("tables", json::array())) {
    const json& cols = t.value("columns", json::array());
    for (const json& row : t.value("rows", json::array())) {
      const json& cells = row.value("cells", json::array());
      for (std::size_t i = 0; i < cols.size() && i < cells.size(); ++i) {
        const json& c = cells[i];
        if (cols[i].value("kind", "") != "latency_ms" || !c.value("run_to_run_spread", json()).is_number()) continue;
        double lo = 0, hi = 0;
        for (const json& r : c.value("repetitions", json::array())) {
          if (r.value("status", "") != "ok" || !r.value("value_ms", json()).is_number()) continue;
          const double v = r["value_ms"].get<double>();
          lo = lo > 0 ? std::min(lo, v) : v;
          hi = std::max(hi, v);
        }
        const double spread = c["run_to_run_spread"].get<double>();
        const std::string where =
            t.value("title", "") + " | " + row.value("label", "") + " | " + cols[i].value("header", "");
        spreads.emplace_back(spread, where);
        s += "| " + where + " | " + std::to_string(c.value("n", 0)) + " | " + ms(lo) + " | " + ms(hi) + " | " +
             pct(spread) + " | " + pct(c.value("run_to_run_cv", 0.0)) + " |\n";
      }
    }
  }
  if (spreads.empty()) return s + "| - | no cell with two or more ok repetitions | | | | | | |\n";
  std::sort(spreads.begin(), spreads.end());
  const auto& worst = spreads.back();
  s += "\nRun-to-run noise over " + std::to_string(spreads.size()) + " cells: median spread " +
       pct(spreads[spreads.size() / 2].first) + ", worst " + pct(worst.first) + " (" + worst.second + ").\n";
  return s;
}

int aa_check(FleetClient& client, Console& console, const AaOptions& o) {
  auto run = client.run(o.run);
  if (!run.ok()) return fail(console, run.error().message);
  json matrix = run->value("matrix", json::object());
  if (!matrix.is_object() || matrix.empty()) return fail(console, "run " + std::to_string(o.run) + " has no matrix");
  if (!o.models.empty()) {
    const json kept = matrix.value("models", json::array());
    for (const std::string& m : o.models) {
      if (std::find(kept.begin(), kept.end(), json(m)) == kept.end()) {
        return fail(console, "--models: run " + std::to_string(o.run) + " did not measure " + m +
                                 "; its models: " + kept.dump());
      }
    }
    matrix["models"] = o.models;
  }
  matrix["name"] = "A/A of run " + std::to_string(o.run);
  matrix["repetitions"] = o.repetitions;
  auto created = client.submit(matrix);
  if (!created.ok()) return fail(console, created.error().message);
  const std::int64_t id = created->value("id", std::int64_t{0});
  console.out << "A/A: run " << id << " repeats run " << o.run << "'s matrix with " << o.repetitions
              << " fresh processes per cell (" << created->value("job_count", 0) << " jobs)\n"
              << std::flush;
  WatchOptions w;
  w.interval_s = o.interval_s;
  const int code = watch_run(client, id, w, console);
  if (code != kExitOk && code != kExitRunFailed) return code;
  auto report = client.report_json(id, "median");
  if (!report.ok()) return fail(console, report.error().message);
  console.out << "\n# Run-to-run noise: run " << id << " (median latency in ms of each repetition, a fresh process)\n\n"
              << escape_display_text(aa_noise_table(*report), TextLines::kMany);
  // The comparison a user would make: the run against its repeat, one build each side.
  const auto builds = run->value("torch_builds", json::array());
  for (const json& b : builds) {
    if (!b.is_string()) continue;
    const std::string side_a = std::to_string(o.run) + ":" + b.get<std::string>();
    const std::string side_b = std::to_string(id) + ":" + b.get<std::string>();
    auto c = client.compare_json(side_a, side_b, "median");
    if (!c.ok()) return fail(console, c.error().message);
    int changes = 0;
    for (const json& x : c->value("cells", json::array())) changes += x.value("verdict", "") != "same" ? 1 : 0;
    console.out << "compare " << side_a << " " << side_b << ": " << changes << " of " << c->value("compared", 0)
                << " cells read as a change" << (changes ? " (noise: give the matrix more repetitions)" : "") << "\n";
  }
  console.out << std::flush;
  return kExitOk;
}

}  // namespace benchfleet::cli
