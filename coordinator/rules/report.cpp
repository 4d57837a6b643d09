#include "coordinator/rules/report.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstddef>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "common/number_format.h"
#include "coordinator/rules/change_rule.h"
#include "coordinator/rules/fingerprint_diff.h"
#include "coordinator/rules/report_cells.h"
#include "coordinator/rules/torch_version.h"

namespace benchfleet::rules {
namespace {

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

template <class T>
std::vector<T> unique_in_order(const std::vector<T>& values) {
  std::vector<T> out;
  for (const T& v : values) {
    if (std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  return out;
}

// (gpu, batch, dtype, build, runtime, mode, model): one matrix cell, all repetitions.
using CellKey = std::tuple<std::string, int, Dtype, std::string, Runtime, Mode, std::string>;
using CellIndex = std::map<CellKey, std::vector<const CellResult*>>;

CellIndex index_cells(const std::vector<CellResult>& cells) {
  CellIndex index;
  for (const CellResult& c : cells) {
    const JobSpec& j = c.job;
    index[{j.gpu, j.batch, j.dtype, j.torch_build, j.runtime, j.mode, j.model}].push_back(&c);
  }
  for (auto& [key, results] : index) {
    std::stable_sort(results.begin(), results.end(),
                     [](const CellResult* a, const CellResult* b) { return a->job.repetition < b->job.repetition; });
  }
  return index;
}

// A column plus where the latency cells it derives from sit in the row: speedup and memory
// ratio columns compare eager_index with mode_index; compile and memory columns read
// mode_index. The plan is the same for every table; headers and torch versions are filled per
// table.
struct ColumnPlan {
  Column column;
  std::string suffix;  // appended to the column's label: " speedup", " compile", ...
  std::size_t eager_index = 0;
  std::size_t mode_index = 0;
};

std::vector<ColumnPlan> plan_columns(const MatrixSpec& m) {
  const auto builds = unique_in_order(m.torch_builds);
  const auto runtimes = unique_in_order(m.runtimes);
  const auto modes = unique_in_order(m.modes);
  const bool has_eager = std::find(modes.begin(), modes.end(), Mode::kEager) != modes.end();

  std::vector<ColumnPlan> plan;
  std::map<std::tuple<std::string, Runtime, Mode>, std::size_t> latency_index;
  // One column per build, runtime and mode for which `wanted(mode)` holds.
  const auto add_columns = [&](std::string_view prefix, ColumnKind kind, std::string_view suffix, auto wanted) {
    for (const auto& build : builds) {
      for (Runtime runtime : runtimes) {
        for (Mode mode : modes) {
          if (!wanted(mode)) continue;
          ColumnPlan p;
          std::string key(prefix);
          key += '/';
          key += build;
          key += '/';
          key += to_string(runtime);
          key += '/';
          key += to_string(mode);
          p.column = {std::move(key), "", kind, build, runtime, mode, {}, {}};
          p.suffix = suffix;
          if (kind == ColumnKind::kLatency) {
            latency_index[{build, runtime, mode}] = plan.size();
          } else {
            p.mode_index = latency_index.at({build, runtime, mode});
            if (has_eager) p.eager_index = latency_index.at({build, runtime, Mode::kEager});
          }
          plan.push_back(std::move(p));
        }
      }
    }
  };
  add_columns("latency", ColumnKind::kLatency, "", [](Mode) { return true; });
  if (has_eager)
    add_columns("speedup", ColumnKind::kSpeedup, " speedup", [](Mode mode) { return mode != Mode::kEager; });
  add_columns("compile", ColumnKind::kCompileMs, " compile", [](Mode mode) { return is_compiled(mode); });
  add_columns("memory", ColumnKind::kPeakMemoryMb, " peak MB", [](Mode) { return true; });
  if (has_eager) {
    add_columns("memory_ratio", ColumnKind::kMemoryRatio, " memory ratio", [](Mode mode) { return is_compiled(mode); });
  }
  return plan;
}

// (gpu, batch, dtype, build, runtime) -> the distinct torch versions its results recorded, in
// version order. Only models of the matrix count: other jobs have no place in the tables.
using TorchVersionKey = std::tuple<std::string, int, Dtype, std::string, Runtime>;
using TorchVersions = std::map<TorchVersionKey, std::vector<std::string>>;

struct VersionLess {
  bool operator()(const std::string& a, const std::string& b) const { return version_less(a, b); }
};

TorchVersionKey torch_version_key(const CellKey& k) {
  return {std::get<0>(k), std::get<1>(k), std::get<2>(k), std::get<3>(k), std::get<4>(k)};
}

// Whether two index keys fall in the same (gpu, batch, dtype, build, runtime).
bool same_torch_version_key(const CellKey& a, const CellKey& b) {
  return std::get<0>(a) == std::get<0>(b) && std::get<1>(a) == std::get<1>(b) && std::get<2>(a) == std::get<2>(b) &&
         std::get<3>(a) == std::get<3>(b) && std::get<4>(a) == std::get<4>(b);
}

TorchVersions recorded_torch_versions(const CellIndex& index, const MatrixSpec& m) {
  const std::set<std::string> models(m.models.begin(), m.models.end());
  std::map<TorchVersionKey, std::set<std::string, VersionLess>> seen;
  // The index is sorted by (gpu, batch, dtype, build, runtime, ...), so consecutive cells share
  // a set, and nearly every result repeats the version before it: a report of 5,184 jobs stays
  // cheap.
  const CellKey* group = nullptr;
  std::set<std::string, VersionLess>* versions = nullptr;
  const std::string* last_version = nullptr;
  for (const auto& [key, results] : index) {
    if (!models.contains(std::get<6>(key))) continue;
    for (const CellResult* r : results) {
      if (r->torch_version.empty()) continue;
      if (!group || !same_torch_version_key(*group, key)) {
        group = &key;
        versions = &seen[torch_version_key(key)];
        last_version = nullptr;
      }
      if (last_version && *last_version == r->torch_version) continue;
      last_version = &*versions->insert(r->torch_version).first;
    }
  }
  TorchVersions out;
  for (auto& [key, versions] : seen) out[key].assign(versions.begin(), versions.end());
  return out;
}

// "stable (torch 2.6.0) - python - default": a column's header without its suffix.
std::string column_label(const Column& c, bool several_runtimes) {
  std::string s = c.build;
  if (!c.torch_versions.empty()) {
    s += " (";
    s += torch_versions_label(c.torch_versions);
    s += ')';
  }
  s += " - ";
  if (several_runtimes) {
    s += to_string(c.runtime);
    s += " - ";
  }
  s += to_string(c.mode);
  return s;
}

Geomean geomean_of(const Table& table, std::size_t column, const std::string& label, bool exclude_flagged) {
  Geomean g;
  g.column = table.columns[column].key;
  g.header = table.columns[column].header;
  g.total = static_cast<int>(table.rows.size());
  int wrong = 0, nondeterministic = 0;
  double log_sum = 0;
  for (const Row& row : table.rows) {
    const Cell& c = row.cells[column];
    if (c.status != kOk) continue;
    if (inaccurate(c.accuracy)) {
      ++g.excluded_inaccurate;
      ++(c.accuracy == AccuracyVerdict::kWrong ? wrong : nondeterministic);
      continue;
    }
    if (exclude_flagged && !c.flags.empty()) {
      ++g.excluded_flagged;
      continue;
    }
    ++g.covered;
    log_sum += std::log(*c.value);
  }
  if (g.covered > 0) g.value = std::exp(log_sum / g.covered);
  g.text = "Geomean speedup ";
  g.text += label;
  g.text += ": ";
  if (g.value) {
    g.text += format_fixed(*g.value, 2);
    g.text += 'x';
  } else {
    g.text += '-';
  }
  g.text += " (";
  g.text += std::to_string(g.covered);
  g.text += '/';
  g.text += std::to_string(g.total);
  std::vector<std::string> excluded;
  if (wrong > 0) excluded.push_back(std::to_string(wrong) + " wrong");
  if (nondeterministic > 0) excluded.push_back(std::to_string(nondeterministic) + " eager nondeterministic");
  if (g.excluded_flagged > 0) excluded.push_back(std::to_string(g.excluded_flagged) + " flagged");
  if (!excluded.empty()) {
    g.text += "; ";
    g.text += joined(excluded);
    g.text += " excluded";
  }
  g.text += ')';
  return g;
}

PassRate pass_rate_of(const Table& table, std::size_t column, const std::string& label) {
  PassRate p;
  p.column = table.columns[column].key;
  p.header = table.columns[column].header;
  for (const Row& row : table.rows) {
    const Cell& c = row.cells[column];
    if (c.status == kNotRun) continue;
    if (c.status == to_string(ResultStatus::kUnsupported)) {
      ++p.unsupported;
      continue;
    }
    ++p.attempted;
    if (c.status == kOk) {
      if (c.accuracy == AccuracyVerdict::kPass) {
        ++p.passed;
      } else if (c.accuracy == AccuracyVerdict::kWrong) {
        ++p.wrong;
      } else {
        ++p.unjudged;
      }
    } else if (c.status == to_string(ResultStatus::kOom) || c.status == to_string(ResultStatus::kOomImplied)) {
      ++p.oom;
    } else {
      ++p.errors;
    }
  }
  p.text = "Pass rate ";
  p.text += label;
  p.text += ": ";
  p.text += std::to_string(p.passed);
  p.text += '/';
  p.text += std::to_string(p.attempted);
  p.text += " (";
  // Rounded down: 199/200 is 99%, never 100%.
  p.text += p.attempted > 0 ? std::to_string(p.passed * 100 / p.attempted) + "%" : std::string("-");
  p.text += ')';
  std::vector<std::string> reasons;
  const auto count = [&](int n, std::string_view one, std::string_view many) {
    if (n > 0) reasons.push_back(std::to_string(n) + " " + std::string(n == 1 ? one : many));
  };
  count(p.oom, "OOM", "OOM");
  count(p.errors, "error", "errors");
  count(p.wrong, "wrong", "wrong");
  count(p.unjudged, "not judged", "not judged");
  count(p.unsupported, "unsupported", "unsupported");
  if (!reasons.empty()) p.text += ": " + joined(reasons);
  return p;
}

// Matrix models in catalog order; unlisted ones after, in matrix order.
std::vector<std::pair<std::string, std::string>> ordered_models(const ReportInput& in) {
  std::unordered_map<std::string, std::pair<std::size_t, const std::string*>> catalog;
  for (std::size_t i = 0; i < in.labels.size(); ++i) {
    catalog.try_emplace(in.labels[i].id, i, &in.labels[i].display_name);
  }
  std::vector<std::pair<std::string, std::string>> models;  // id, label
  std::vector<std::size_t> rank;
  for (const std::string& id : unique_in_order(in.matrix.models)) {
    auto it = catalog.find(id);
    models.emplace_back(id, it == catalog.end() ? id : *it->second.second);
    rank.push_back(it == catalog.end() ? in.labels.size() : it->second.first);
  }
  std::vector<std::size_t> order(models.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return rank[a] < rank[b]; });
  std::vector<std::pair<std::string, std::string>> sorted;
  for (std::size_t i : order) sorted.push_back(std::move(models[i]));
  return sorted;
}

}  // namespace

std::string_view to_string(Stat s) { return s == Stat::kMedian ? "median" : "mean"; }

std::optional<Stat> parse_stat(std::string_view s) {
  if (s == "mean") return Stat::kMean;
  if (s == "median") return Stat::kMedian;
  return std::nullopt;
}

std::string_view to_string(ColumnKind k) {
  switch (k) {
    case ColumnKind::kSpeedup:
      return "speedup";
    case ColumnKind::kCompileMs:
      return "compile_ms";
    case ColumnKind::kPeakMemoryMb:
      return "peak_memory_mb";
    case ColumnKind::kMemoryRatio:
      return "memory_ratio";
    case ColumnKind::kLatency:
      break;
  }
  return "latency_ms";
}

// The distinct speed fingerprints per (gpu, batch, dtype, build, runtime) of the matrix's models.
std::map<TorchVersionKey, std::set<std::string>> recorded_fingerprints(const CellIndex& index, const MatrixSpec& m) {
  const std::set<std::string> models(m.models.begin(), m.models.end());
  std::map<TorchVersionKey, std::set<std::string>> out;
  for (const auto& [key, results] : index) {
    if (!models.contains(std::get<6>(key))) continue;
    for (const CellResult* r : results) {
      if (!r->fingerprint.empty()) out[torch_version_key(key)].insert(r->fingerprint);
    }
  }
  return out;
}

// How the table's (build, runtime) sides differ in what changes speed, named by their labels.
std::vector<std::string> fingerprint_warnings_of(const Table& table, bool several_runtimes) {
  std::vector<std::pair<std::string, std::vector<std::string>>> sides;
  std::set<std::pair<std::string, Runtime>> seen;
  for (const Column& c : table.columns) {
    if (c.kind != ColumnKind::kLatency || !seen.emplace(c.build, c.runtime).second) continue;
    sides.emplace_back(several_runtimes ? c.build + " - " + std::string(to_string(c.runtime)) : c.build,
                       c.fingerprints);
  }
  std::vector<std::string> out;
  for (const auto& d : rules::fingerprint_differences(sides)) out.push_back(d.text);
  return out;
}

Report build_report(const ReportInput& in) {
  Report report;
  report.run_id = in.run_id;
  report.run_name = in.run_name;
  report.stat = in.stat;
  report.exclude_flagged = in.exclude_flagged;
  report.memory_cap_mb = in.matrix.memory_limit_mb;

  const CellIndex index = index_cells(in.cells);
  const std::vector<ColumnPlan> plan = plan_columns(in.matrix);
  const TorchVersions versions = recorded_torch_versions(index, in.matrix);
  const auto fingerprints = recorded_fingerprints(index, in.matrix);
  const bool several_runtimes = unique_in_order(in.matrix.runtimes).size() > 1;
  const auto models = ordered_models(in);
  std::vector<Dtype> dtypes = unique_in_order(in.matrix.dtypes);
  if (dtypes.empty()) dtypes = {Dtype::kFloat32};  // a matrix stored before the dtype axis
  const bool dtype_in_title = dtypes != std::vector<Dtype>{Dtype::kFloat32};

  for (const std::string& gpu : unique_in_order(in.matrix.gpus)) {
    for (int batch : unique_in_order(in.matrix.batch_sizes)) {
      for (Dtype dtype : dtypes) {
        Table table;
        table.gpu = gpu;
        table.gpu_label = upper(gpu);
        table.batch = batch;
        table.dtype = dtype;
        table.title = table.gpu_label;
        table.title += " (batch size: ";
        table.title += std::to_string(batch);
        if (dtype_in_title) {
          table.title += ", ";
          table.title += to_string(dtype);
        }
        table.title += ')';
        std::vector<std::string> labels;  // headers without their suffix: what geomean lines name
        for (const ColumnPlan& p : plan) {
          Column c = p.column;
          if (auto it = versions.find({gpu, batch, dtype, c.build, c.runtime}); it != versions.end()) {
            c.torch_versions = it->second;
          }
          if (auto it = fingerprints.find({gpu, batch, dtype, c.build, c.runtime}); it != fingerprints.end()) {
            c.fingerprints.assign(it->second.begin(), it->second.end());
          }
          labels.push_back(column_label(c, several_runtimes));
          c.header = labels.back() + p.suffix;
          table.columns.push_back(std::move(c));
        }

        table.rows.reserve(models.size());
        for (const auto& [model, label] : models) {
          Row row{model, label, {}};
          row.cells.reserve(plan.size());  // a Cell is big: no moves while the row grows
          for (const ColumnPlan& p : plan) {
            const Column& c = p.column;
            // Derived columns follow every latency column they refer to.
            switch (c.kind) {
              case ColumnKind::kLatency: {
                auto it = index.find({gpu, batch, dtype, c.build, c.runtime, c.mode, model});
                row.cells.push_back(latency_cell(it == index.end() ? nullptr : &it->second, c.mode, in));
                break;
              }
              case ColumnKind::kSpeedup:
                row.cells.push_back(speedup_cell(row.cells[p.eager_index], row.cells[p.mode_index], c.mode,
                                                 rules::noise_floor(rules::device_kind_of(gpu))));
                break;
              case ColumnKind::kCompileMs:
                row.cells.push_back(compile_cell(row.cells[p.mode_index]));
                break;
              case ColumnKind::kPeakMemoryMb:
                row.cells.push_back(memory_cell(row.cells[p.mode_index]));
                break;
              case ColumnKind::kMemoryRatio:
                row.cells.push_back(memory_ratio_cell(row.cells[p.eager_index], row.cells[p.mode_index], c.mode));
                break;
            }
          }
          table.rows.push_back(std::move(row));
        }

        for (std::size_t i = 0; i < plan.size(); ++i) {
          const Column& c = plan[i].column;
          if (c.kind == ColumnKind::kSpeedup) {
            table.geomeans.push_back(geomean_of(table, i, labels[i], in.exclude_flagged));
          }
          if (c.kind == ColumnKind::kLatency && is_compiled(c.mode)) {
            table.pass_rates.push_back(pass_rate_of(table, i, labels[i]));
          }
        }
        table.fingerprint_warnings = fingerprint_warnings_of(table, several_runtimes);
        report.tables.push_back(std::move(table));
      }
    }
  }
  return report;
}

}  // namespace benchfleet::rules
