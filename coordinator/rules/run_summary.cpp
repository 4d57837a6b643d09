#include "coordinator/rules/run_summary.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <map>

namespace benchfleet::rules {
namespace {

std::string key_of(const Column& c) {
  return c.build + "/" + std::string(to_string(c.runtime)) + "/" + std::string(to_string(c.mode));
}

// What is summed per key before the figures are made.
struct Sums {
  double speedup_log_sum = 0;
  std::vector<double> compile_ms;
  double ratio_log_sum = 0;
  int ratios = 0;
};

std::optional<double> median_of(std::vector<double> v) {
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  const std::size_t mid = v.size() / 2;
  return v.size() % 2 == 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

bool ok_positive(const Cell& c) { return c.status == "ok" && c.value && *c.value > 0 && std::isfinite(*c.value); }

}  // namespace

std::vector<ModeSummary> summarize(const rules::Report& report) {
  std::vector<ModeSummary> out;
  std::map<std::string, std::size_t> index;
  std::vector<Sums> sums;
  const auto entry = [&](const Column& c) -> std::size_t {
    const std::string key = key_of(c);
    auto [it, added] = index.emplace(key, out.size());
    if (added) {
      ModeSummary s;
      s.key = key;
      s.build = c.build;
      s.runtime = c.runtime;
      s.mode = c.mode;
      out.push_back(std::move(s));
      sums.emplace_back();
    }
    return it->second;
  };
  for (const Table& table : report.tables) {
    for (std::size_t i = 0; i < table.columns.size(); ++i) {
      const Column& c = table.columns[i];
      if (!is_compiled(c.mode)) continue;
      const std::size_t at = entry(c);
      ModeSummary& s = out[at];
      Sums& sum = sums[at];
      if (c.kind == ColumnKind::kLatency) {
        for (const std::string& v : c.torch_versions) {
          if (std::find(s.torch_versions.begin(), s.torch_versions.end(), v) == s.torch_versions.end()) {
            s.torch_versions.push_back(v);
          }
        }
      }
      for (const auto& row : table.rows) {
        if (i >= row.cells.size() || !ok_positive(row.cells[i])) continue;
        if (c.kind == ColumnKind::kCompileMs) sum.compile_ms.push_back(*row.cells[i].value);
        if (c.kind == ColumnKind::kMemoryRatio) {
          sum.ratio_log_sum += std::log(*row.cells[i].value);
          ++sum.ratios;
        }
      }
    }
    for (const rules::Geomean& g : table.geomeans) {
      const auto col =
          std::find_if(table.columns.begin(), table.columns.end(), [&](const Column& c) { return c.key == g.column; });
      if (col == table.columns.end()) continue;
      const std::size_t at = entry(*col);
      out[at].speedup_total += g.total;
      out[at].speedup_covered += g.covered;
      if (g.value && *g.value > 0) sums[at].speedup_log_sum += g.covered * std::log(*g.value);
    }
    for (const rules::PassRate& p : table.pass_rates) {
      const auto col =
          std::find_if(table.columns.begin(), table.columns.end(), [&](const Column& c) { return c.key == p.column; });
      if (col == table.columns.end()) continue;
      ModeSummary& s = out[entry(*col)];
      s.passed += p.passed;
      s.attempted += p.attempted;
      s.oom += p.oom;
      s.errors += p.errors;
      s.wrong += p.wrong;
      s.unsupported += p.unsupported;
    }
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    ModeSummary& s = out[i];
    if (s.speedup_covered > 0) s.geomean_speedup = std::exp(sums[i].speedup_log_sum / s.speedup_covered);
    if (s.attempted > 0) s.pass_rate = static_cast<double>(s.passed) / s.attempted;
    s.compile_ms_median = median_of(sums[i].compile_ms);
    if (sums[i].ratios > 0) s.memory_ratio_geomean = std::exp(sums[i].ratio_log_sum / sums[i].ratios);
  }
  return out;
}

}  // namespace benchfleet::rules
