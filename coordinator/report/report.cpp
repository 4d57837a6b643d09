#include "coordinator/report/report.h"

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

#include "coordinator/report/format.h"
#include "coordinator/report/torch_version.h"

namespace benchfleet::report {
namespace {

constexpr std::string_view kOk = "ok";
constexpr std::string_view kFailed = "failed";
constexpr std::string_view kNotRun = "not_run";
constexpr std::string_view kUnavailable = "unavailable";

// When no repetition is ok, the cell shows the most telling of the others: a verdict beats
// "failed", which beats "not_run". Order among verdicts follows ResultStatus.
constexpr std::array<std::string_view, 9> kStatusPrecedence = {
    "oom", "oom_implied", "error", "timeout", "crash", "unsupported", "invalid", "failed", "not_run"};

std::size_t precedence(std::string_view status) {
  auto it = std::find(kStatusPrecedence.begin(), kStatusPrecedence.end(), status);
  return static_cast<std::size_t>(it - kStatusPrecedence.begin());
}

std::string status_text(std::string_view status) {
  if (status == "oom") return "OOM";
  if (status == "oom_implied") return "OOM (implied)";
  if (status == kNotRun) return "-";
  return std::string(status);  // error, timeout, crash, unsupported, invalid, failed
}

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

// (gpu, batch, build, runtime, mode, model): one matrix cell, all repetitions.
using CellKey = std::tuple<std::string, int, std::string, Runtime, Mode, std::string>;
using CellIndex = std::map<CellKey, std::vector<const CellResult*>>;

CellIndex index_cells(const std::vector<CellResult>& cells) {
  CellIndex index;
  for (const CellResult& c : cells) {
    const JobSpec& j = c.job;
    index[{j.gpu, j.batch, j.torch_build, j.runtime, j.mode, j.model}].push_back(&c);
  }
  for (auto& [key, results] : index) {
    std::stable_sort(results.begin(), results.end(),
                     [](const CellResult* a, const CellResult* b) { return a->job.repetition < b->job.repetition; });
  }
  return index;
}

// A column plus, for speedup columns, where its two latency sides sit in the row. The plan is
// the same for every table; headers and torch versions are filled per table.
struct ColumnPlan {
  Column column;
  std::size_t eager_index = 0;
  std::size_t mode_index = 0;
};

std::vector<ColumnPlan> plan_columns(const MatrixSpec& m) {
  const auto builds = unique_in_order(m.torch_builds);
  const auto runtimes = unique_in_order(m.runtimes);
  const auto modes = unique_in_order(m.modes);
  auto key_of = [](std::string_view kind, const std::string& build, Runtime runtime, Mode mode) {
    std::string s(kind);
    s += '/';
    s += build;
    s += '/';
    s += to_string(runtime);
    s += '/';
    s += to_string(mode);
    return s;
  };

  std::vector<ColumnPlan> plan;
  std::map<std::tuple<std::string, Runtime, Mode>, std::size_t> latency_index;
  for (const auto& build : builds) {
    for (Runtime runtime : runtimes) {
      for (Mode mode : modes) {
        latency_index[{build, runtime, mode}] = plan.size();
        ColumnPlan p;
        p.column = {key_of("latency", build, runtime, mode), "", ColumnKind::kLatency, build, runtime, mode, {}};
        plan.push_back(std::move(p));
      }
    }
  }
  if (std::find(modes.begin(), modes.end(), Mode::kEager) == modes.end()) return plan;
  for (const auto& build : builds) {
    for (Runtime runtime : runtimes) {
      for (Mode mode : modes) {
        if (mode == Mode::kEager) continue;
        ColumnPlan p;
        p.column = {key_of("speedup", build, runtime, mode), "", ColumnKind::kSpeedup, build, runtime, mode, {}};
        p.eager_index = latency_index.at({build, runtime, Mode::kEager});
        p.mode_index = latency_index.at({build, runtime, mode});
        plan.push_back(std::move(p));
      }
    }
  }
  return plan;
}

// (gpu, batch, build, runtime) -> the distinct torch versions its results recorded, in version
// order. Only models of the matrix count: other jobs have no place in the tables.
using TorchVersionKey = std::tuple<std::string, int, std::string, Runtime>;
using TorchVersions = std::map<TorchVersionKey, std::vector<std::string>>;

struct VersionLess {
  bool operator()(const std::string& a, const std::string& b) const { return version_less(a, b); }
};

// Whether two index keys fall in the same (gpu, batch, build, runtime).
bool same_torch_version_key(const CellKey& a, const CellKey& b) {
  return std::get<0>(a) == std::get<0>(b) && std::get<1>(a) == std::get<1>(b) && std::get<2>(a) == std::get<2>(b) &&
         std::get<3>(a) == std::get<3>(b);
}

TorchVersions recorded_torch_versions(const CellIndex& index, const MatrixSpec& m) {
  const std::set<std::string> models(m.models.begin(), m.models.end());
  std::map<TorchVersionKey, std::set<std::string, VersionLess>> seen;
  // The index is sorted by (gpu, batch, build, runtime, ...), so consecutive cells share a set,
  // and nearly every result repeats the version before it: a report of 5,184 jobs stays cheap.
  const CellKey* group = nullptr;
  std::set<std::string, VersionLess>* versions = nullptr;
  const std::string* last_version = nullptr;
  for (const auto& [key, results] : index) {
    if (!models.contains(std::get<5>(key))) continue;
    for (const CellResult* r : results) {
      if (r->torch_version.empty()) continue;
      if (!group || !same_torch_version_key(*group, key)) {
        group = &key;
        versions = &seen[{std::get<0>(key), std::get<1>(key), std::get<2>(key), std::get<3>(key)}];
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

// "stable (torch 2.6.0) - python - default": a column's header without " speedup".
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

RepetitionOutcome outcome_of(const CellResult& r, Stat stat) {
  RepetitionOutcome o;
  o.repetition = r.job.repetition;
  o.detail = r.detail;
  o.result_id = r.result_id;
  if (r.result_status) {
    o.status = to_string(*r.result_status);
    if (*r.result_status == ResultStatus::kOk) {
      if (r.stats) {
        o.value_ms = stat == Stat::kMean ? r.stats->mean_ms : r.stats->median_ms;
      } else {  // codecs forbid this; never show a number we do not have
        o.status = "invalid";
        o.detail = "ok result without statistics";
      }
    }
  } else {
    o.status = r.job_status == JobStatus::kFailed ? kFailed : kNotRun;
  }
  return o;
}

std::string multi_repetition_detail(const std::vector<RepetitionOutcome>& reps, int ok) {
  std::string s = std::to_string(ok);
  s += '/';
  s += std::to_string(reps.size());
  s += " repetitions ok";
  for (const RepetitionOutcome& o : reps) {
    if (o.status == kOk) continue;
    s += "; rep ";
    s += std::to_string(o.repetition);
    s += ": ";
    s += o.status;
    if (!o.detail.empty()) {
      s += ": ";
      s += o.detail;
    }
  }
  return s;
}

Cell latency_cell(const std::vector<const CellResult*>* results, const ReportInput& in) {
  Cell cell;
  if (results) {
    for (const CellResult* r : *results) cell.repetitions.push_back(outcome_of(*r, in.stat));
  }
  double sum = 0;
  for (std::size_t i = 0; i < cell.repetitions.size(); ++i) {
    const RepetitionOutcome& o = cell.repetitions[i];
    if (o.result_id != 0) cell.result_ids.push_back(o.result_id);
    if (o.status != kOk) continue;
    ++cell.n;
    sum += *o.value_ms;
    const Statistics& st = *(*results)[i]->stats;
    cell.ci_low_ms = cell.ci_low_ms ? std::min(*cell.ci_low_ms, st.ci_low_ms) : st.ci_low_ms;
    cell.ci_high_ms = cell.ci_high_ms ? std::max(*cell.ci_high_ms, st.ci_high_ms) : st.ci_high_ms;
  }
  if (cell.n > 0) {
    cell.status = kOk;
    cell.value = sum / cell.n;
    cell.text = format_fixed(*cell.value, 3);
  } else {
    cell.status = kNotRun;
    for (const RepetitionOutcome& o : cell.repetitions) {
      if (precedence(o.status) < precedence(cell.status)) cell.status = o.status;
    }
    cell.text = status_text(cell.status);
  }
  if (cell.repetitions.size() == 1) {
    cell.detail = cell.repetitions.front().detail;
  } else if (cell.repetitions.size() > 1) {
    cell.detail = multi_repetition_detail(cell.repetitions, cell.n);
  }
  return cell;
}

Cell speedup_cell(const Cell& eager, const Cell& compiled, Mode mode) {
  Cell cell;
  cell.result_ids = eager.result_ids;
  cell.result_ids.insert(cell.result_ids.end(), compiled.result_ids.begin(), compiled.result_ids.end());
  const bool ok = eager.status == kOk && compiled.status == kOk && *eager.value > 0 &&
                  *compiled.value > 0 &&                          // a ratio of a zero latency means nothing
                  std::isfinite(*eager.value / *compiled.value);  // nor one that overflows ("infx")
  if (ok) {
    cell.status = kOk;
    cell.value = *eager.value / *compiled.value;
    cell.text = format_fixed(*cell.value, 2);
    cell.text += 'x';
    cell.n = std::min(eager.n, compiled.n);
    cell.detail = "eager ";
    cell.detail += eager.text;
    cell.detail += " ms / ";
    cell.detail += to_string(mode);
    cell.detail += ' ';
    cell.detail += compiled.text;
    cell.detail += " ms";
  } else {
    cell.status = kUnavailable;
    cell.text = "-";
    cell.detail = "eager: ";
    cell.detail += eager.text;
    cell.detail += ", ";
    cell.detail += to_string(mode);
    cell.detail += ": ";
    cell.detail += compiled.text;
  }
  return cell;
}

Geomean geomean_of(const Table& table, std::size_t column, const std::string& label) {
  Geomean g;
  g.column = table.columns[column].key;
  g.header = table.columns[column].header;
  g.total = static_cast<int>(table.rows.size());
  double log_sum = 0;
  for (const Row& row : table.rows) {
    const Cell& c = row.cells[column];
    if (c.status != kOk) continue;
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
  g.text += ')';
  return g;
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

std::string_view to_string(ColumnKind k) { return k == ColumnKind::kSpeedup ? "speedup" : "latency_ms"; }

Report build_report(const ReportInput& in) {
  Report report;
  report.run_id = in.run_id;
  report.run_name = in.run_name;
  report.stat = in.stat;

  const CellIndex index = index_cells(in.cells);
  const std::vector<ColumnPlan> plan = plan_columns(in.matrix);
  const TorchVersions versions = recorded_torch_versions(index, in.matrix);
  const bool several_runtimes = unique_in_order(in.matrix.runtimes).size() > 1;
  const auto models = ordered_models(in);

  for (const std::string& gpu : unique_in_order(in.matrix.gpus)) {
    for (int batch : unique_in_order(in.matrix.batch_sizes)) {
      Table table;
      table.gpu = gpu;
      table.gpu_label = upper(gpu);
      table.batch = batch;
      table.title = table.gpu_label;
      table.title += " (batch size: ";
      table.title += std::to_string(batch);
      table.title += ')';
      std::vector<std::string> labels;  // headers without " speedup": what geomean lines name
      for (const ColumnPlan& p : plan) {
        Column c = p.column;
        if (auto it = versions.find({gpu, batch, c.build, c.runtime}); it != versions.end()) {
          c.torch_versions = it->second;
        }
        labels.push_back(column_label(c, several_runtimes));
        c.header = labels.back();
        if (c.kind == ColumnKind::kSpeedup) c.header += " speedup";
        table.columns.push_back(std::move(c));
      }

      for (const auto& [model, label] : models) {
        Row row{model, label, {}};
        for (const ColumnPlan& p : plan) {
          const Column& c = p.column;
          if (c.kind == ColumnKind::kLatency) {
            auto it = index.find({gpu, batch, c.build, c.runtime, c.mode, model});
            row.cells.push_back(latency_cell(it == index.end() ? nullptr : &it->second, in));
          } else {  // speedup columns follow every latency column they refer to
            row.cells.push_back(speedup_cell(row.cells[p.eager_index], row.cells[p.mode_index], c.mode));
          }
        }
        table.rows.push_back(std::move(row));
      }

      for (std::size_t i = 0; i < plan.size(); ++i) {
        if (plan[i].column.kind == ColumnKind::kSpeedup) {
          table.geomeans.push_back(geomean_of(table, i, labels[i]));
        }
      }
      report.tables.push_back(std::move(table));
    }
  }
  return report;
}

}  // namespace benchfleet::report
