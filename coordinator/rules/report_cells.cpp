// The cells of a report's tables: a latency cell from its repetitions, and the speedup,
// compile, memory and memory ratio cells derived from latency cells.
#include "coordinator/rules/report_cells.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <set>
#include <utility>

#include "common/number_format.h"
#include "common/shared_rules.h"
#include "common/stats.h"
#include "coordinator/rules/change_rule.h"

namespace benchfleet::rules {
namespace {

constexpr std::string_view kFailed = "failed";
constexpr std::string_view kUnavailable = "unavailable";

// When no repetition is ok, the cell shows the most telling of the others: a verdict beats
// "failed", which beats "not_run" (statuses.json cell_precedence).
std::size_t precedence(std::string_view status) {
  const auto& order = statuses().cell_precedence;
  return static_cast<std::size_t>(std::find(order.begin(), order.end(), status) - order.begin());
}

std::string status_text(std::string_view status) {
  const auto& texts = statuses().cell_text;
  const auto it = texts.find(status);
  return it == texts.end() ? std::string(status) : it->second;
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

}  // namespace

Interval ci_of(const Statistics& st, Stat stat) {
  if (stat == Stat::kMedian) return {st.ci_low_ms, st.ci_high_ms};
  return mean_ci_95(st.mean_ms, st.stddev_ms, st.iterations);
}

namespace {

void append_detail(std::string& detail, std::string_view more) {
  if (!detail.empty()) detail += "; ";
  detail += more;
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

Cell unavailable_cell(std::string detail) {
  Cell cell;
  cell.status = kUnavailable;
  cell.text.assign(1, '-');  // not `= "-"`: GCC 12 at -O3 reports a false -Wrestrict there
  cell.detail = std::move(detail);
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

std::string megabytes_text(double mib) { return format_fixed(mib, mib >= 100 ? 0 : 1); }

}  // namespace

std::string joined(const std::vector<std::string>& items) {
  std::string s;
  for (const std::string& item : items) {
    if (!s.empty()) s += ", ";
    s += item;
  }
  return s;
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
    const Interval ci = ci_of(*(*results)[i]->stats, in.stat);
    cell.ci_low_ms = cell.ci_low_ms ? std::min(*cell.ci_low_ms, ci.low) : ci.low;
    cell.ci_high_ms = cell.ci_high_ms ? std::max(*cell.ci_high_ms, ci.high) : ci.high;
  }
  if (cell.n > 1) {  // fresh processes: how far they moved
    double lo = 0, hi = 0, log_sum = 0, log_squares = 0;
    for (const RepetitionOutcome& o : cell.repetitions) {
      if (o.status != kOk || !(*o.value_ms > 0)) continue;
      lo = lo > 0 ? std::min(lo, *o.value_ms) : *o.value_ms;
      hi = std::max(hi, *o.value_ms);
      log_sum += std::log(*o.value_ms);
    }
    const double log_mean = log_sum / cell.n;
    for (const RepetitionOutcome& o : cell.repetitions) {
      if (o.status == kOk && *o.value_ms > 0) log_squares += std::pow(std::log(*o.value_ms) - log_mean, 2);
    }
    if (lo > 0) {
      cell.run_to_run_spread = hi / lo - 1;
      cell.run_to_run_cv = std::sqrt(log_squares / (cell.n - 1));
    }
  }
  if (cell.n > 0) {
    cell.status = kOk;
    cell.value = sum / cell.n;
    cell.text = format_fixed(*cell.value, 3);
    if (*cell.value > 0) cell.throughput_per_s = (*results).front()->job.batch * 1000.0 / *cell.value;
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

rules::ChangeSide change_side(const Cell& latency) {
  rules::ChangeSide s;
  s.value_ms = latency.value.value_or(0);
  if (latency.ci_low_ms && latency.ci_high_ms) s.ci = Interval{*latency.ci_low_ms, *latency.ci_high_ms};
  for (const RepetitionOutcome& o : latency.repetitions) {
    if (o.status == kOk && o.value_ms) s.per_process_ms.push_back(*o.value_ms);
  }
  return s;
}

Cell speedup_cell(const Cell& eager, const Cell& compiled, Mode mode, double noise_floor) {
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
    const rules::ChangeVerdict v = rules::judge_change(change_side(eager), change_side(compiled), noise_floor);
    cell.change = v.verdict == "unknown" ? "" : v.verdict;
    if (v.verdict == "same") {
      cell.detail += "; no significant change: ";
      cell.detail += v.why;
    }
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

}  // namespace benchfleet::rules
