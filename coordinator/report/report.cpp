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
          p.column = {std::move(key), "", kind, build, runtime, mode, {}};
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

void append_detail(std::string& detail, std::string_view more) {
  if (!detail.empty()) detail += "; ";
  detail += more;
}

std::string joined(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& item : items) {
    if (!s.empty()) s += ", ";
    s += item;
  }
  return s;
}

// The verdict of a compiled cell's ok repetitions (Cell::accuracy).
std::optional<AccuracyVerdict> cell_verdict(const std::vector<const CellResult*>& ok_results) {
  bool any = false, wrong = false, nondeterministic = false, all_pass = true;
  for (const CellResult* r : ok_results) {
    if (!r->accuracy) {
      all_pass = false;
      continue;
    }
    any = true;
    wrong = wrong || *r->accuracy == AccuracyVerdict::kWrong;
    nondeterministic = nondeterministic || *r->accuracy == AccuracyVerdict::kEagerNondeterministic;
    all_pass = all_pass && *r->accuracy == AccuracyVerdict::kPass;
  }
  if (!any) return std::nullopt;
  if (wrong) return AccuracyVerdict::kWrong;
  if (nondeterministic) return AccuracyVerdict::kEagerNondeterministic;
  return all_pass ? AccuracyVerdict::kPass : AccuracyVerdict::kUnchecked;
}

// "accuracy wrong: error 0.049, tolerance 0.0001" from the first ok repetition with the cell's
// verdict (with its figures when it has them).
std::string accuracy_detail(AccuracyVerdict verdict, const std::vector<const CellResult*>& ok_results) {
  std::string s = "accuracy ";
  s += to_string(verdict);
  for (const CellResult* r : ok_results) {
    if (r->accuracy != verdict) continue;
    if (r->accuracy_error && r->accuracy_tolerance) {
      s += ": error ";
      s += format_significant(*r->accuracy_error, 3);
      s += ", tolerance ";
      s += format_significant(*r->accuracy_tolerance, 3);
    }
    break;
  }
  return s;
}

// Accuracy, flags, compile, memory and recompiles of a latency cell, over its ok repetitions.
void summarize_ok_results(Cell& cell, const std::vector<const CellResult*>& ok_results, Mode mode) {
  if (is_compiled(mode)) cell.accuracy = cell_verdict(ok_results);
  std::set<std::string> flags;
  double compile_sum = 0;
  int compiled = 0;
  for (const CellResult* r : ok_results) {
    flags.insert(r->flags.begin(), r->flags.end());
    if (r->compile_ms) {
      compile_sum += *r->compile_ms;
      ++compiled;
    }
    if (!r->compile_cache.empty()) {
      if (cell.compile_cache.empty()) {
        cell.compile_cache = r->compile_cache;
      } else if (cell.compile_cache != r->compile_cache) {
        cell.compile_cache = "mixed";
      }
    }
    if (r->peak_memory_bytes) {
      cell.peak_memory_bytes = std::max(cell.peak_memory_bytes.value_or(*r->peak_memory_bytes), *r->peak_memory_bytes);
    }
    if (r->recompiles) cell.recompiles = std::max(cell.recompiles.value_or(*r->recompiles), *r->recompiles);
  }
  flags.erase("");
  cell.flags.assign(flags.begin(), flags.end());
  if (compiled > 0) cell.compile_ms = compile_sum / compiled;
  if (cell.accuracy) append_detail(cell.detail, accuracy_detail(*cell.accuracy, ok_results));
  if (!cell.flags.empty()) append_detail(cell.detail, "flags: " + joined(cell.flags));
}

Cell latency_cell(const std::vector<const CellResult*>* results, Mode mode, const ReportInput& in) {
  Cell cell;
  if (results) {
    for (const CellResult* r : *results) cell.repetitions.push_back(outcome_of(*r, in.stat));
  }
  double sum = 0;
  std::vector<const CellResult*> ok_results;
  for (std::size_t i = 0; i < cell.repetitions.size(); ++i) {
    const RepetitionOutcome& o = cell.repetitions[i];
    if (o.result_id != 0) cell.result_ids.push_back(o.result_id);
    if (o.status != kOk) continue;
    ++cell.n;
    sum += *o.value_ms;
    ok_results.push_back((*results)[i]);
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
  summarize_ok_results(cell, ok_results, mode);
  return cell;
}

bool inaccurate(const std::optional<AccuracyVerdict>& v) {
  return v == AccuracyVerdict::kWrong || v == AccuracyVerdict::kEagerNondeterministic;
}

Cell unavailable_cell(std::string detail) {
  Cell cell;
  cell.status = kUnavailable;
  cell.text = "-";
  cell.detail = std::move(detail);
  return cell;
}

Cell speedup_cell(const Cell& eager, const Cell& compiled, Mode mode) {
  Cell cell;
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
    std::string detail = "eager: ";
    detail += eager.text;
    detail += ", ";
    detail += to_string(mode);
    detail += ": ";
    detail += compiled.text;
    cell = unavailable_cell(std::move(detail));
  }
  cell.result_ids = eager.result_ids;
  cell.result_ids.insert(cell.result_ids.end(), compiled.result_ids.begin(), compiled.result_ids.end());
  cell.accuracy = compiled.accuracy;
  std::set<std::string> flags(eager.flags.begin(), eager.flags.end());
  flags.insert(compiled.flags.begin(), compiled.flags.end());
  cell.flags.assign(flags.begin(), flags.end());
  if (ok && inaccurate(cell.accuracy)) {
    append_detail(cell.detail, std::string(to_string(mode)) + " accuracy " + std::string(to_string(*cell.accuracy)));
  }
  if (ok && !cell.flags.empty()) append_detail(cell.detail, "flags: " + joined(cell.flags));
  return cell;
}

// "12.4 s", "850 ms", "850 ms (warm)".
std::string compile_text(double ms, const std::string& cache) {
  std::string text = ms >= 1000 ? format_fixed(ms / 1000, 1) + " s" : format_fixed(ms, 0) + " ms";
  if (!cache.empty() && cache != "cold" && cache != "none") {
    text += " (";
    text += cache;
    text += ')';
  }
  return text;
}

Cell compile_cell(const Cell& latency) {
  if (!latency.compile_ms) return unavailable_cell(latency.status == kOk ? "no compile time recorded" : latency.text);
  Cell cell;
  cell.status = kOk;
  cell.value = latency.compile_ms;
  cell.compile_ms = latency.compile_ms;
  cell.compile_cache = latency.compile_cache;
  cell.recompiles = latency.recompiles;
  cell.text = compile_text(*cell.value, cell.compile_cache);
  cell.n = latency.n;
  cell.result_ids = latency.result_ids;
  if (!cell.compile_cache.empty()) cell.detail = "cache " + cell.compile_cache;
  if (cell.recompiles) append_detail(cell.detail, std::to_string(*cell.recompiles) + " recompiles");
  return cell;
}

constexpr double kMiB = 1024.0 * 1024.0;

std::string megabytes_text(double mib) { return format_fixed(mib, mib >= 100 ? 0 : 1); }

Cell memory_cell(const Cell& latency) {
  if (!latency.peak_memory_bytes) {
    return unavailable_cell(latency.status == kOk ? "no peak memory recorded" : latency.text);
  }
  Cell cell;
  cell.status = kOk;
  cell.peak_memory_bytes = latency.peak_memory_bytes;
  cell.value = static_cast<double>(*latency.peak_memory_bytes) / kMiB;
  cell.text = megabytes_text(*cell.value);
  cell.n = latency.n;
  cell.result_ids = latency.result_ids;  // the exact bytes are in peak_memory_bytes
  return cell;
}

Cell memory_ratio_cell(const Cell& eager, const Cell& compiled, Mode mode) {
  const auto peak = [](const Cell& c) { return c.peak_memory_bytes.value_or(0); };
  if (peak(eager) <= 0 || peak(compiled) <= 0) {
    std::string detail = "eager peak: ";
    detail += eager.peak_memory_bytes ? megabytes_text(static_cast<double>(peak(eager)) / kMiB) + " MB" : "-";
    detail += ", ";
    detail += to_string(mode);
    detail += " peak: ";
    detail += compiled.peak_memory_bytes ? megabytes_text(static_cast<double>(peak(compiled)) / kMiB) + " MB" : "-";
    return unavailable_cell(std::move(detail));
  }
  Cell cell;
  cell.status = kOk;
  cell.value = static_cast<double>(peak(eager)) / static_cast<double>(peak(compiled));
  cell.text = format_fixed(*cell.value, 2);
  cell.text += 'x';
  cell.n = std::min(eager.n, compiled.n);
  cell.result_ids = eager.result_ids;
  cell.result_ids.insert(cell.result_ids.end(), compiled.result_ids.begin(), compiled.result_ids.end());
  cell.detail = "eager ";
  cell.detail += megabytes_text(static_cast<double>(peak(eager)) / kMiB);
  cell.detail += " MB / ";
  cell.detail += to_string(mode);
  cell.detail += ' ';
  cell.detail += megabytes_text(static_cast<double>(peak(compiled)) / kMiB);
  cell.detail += " MB";
  return cell;
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
    ++p.attempted;
    if (c.status == kOk && c.accuracy == AccuracyVerdict::kPass) ++p.passed;
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

Report build_report(const ReportInput& in) {
  Report report;
  report.run_id = in.run_id;
  report.run_name = in.run_name;
  report.stat = in.stat;
  report.exclude_flagged = in.exclude_flagged;

  const CellIndex index = index_cells(in.cells);
  const std::vector<ColumnPlan> plan = plan_columns(in.matrix);
  const TorchVersions versions = recorded_torch_versions(index, in.matrix);
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
                row.cells.push_back(speedup_cell(row.cells[p.eager_index], row.cells[p.mode_index], c.mode));
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
        report.tables.push_back(std::move(table));
      }
    }
  }
  return report;
}

}  // namespace benchfleet::report
