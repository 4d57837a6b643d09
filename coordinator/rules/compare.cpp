// compare_reports: A's latency cells matched with B's by table (GPU class, batch, dtype), runtime,
// mode and model, each judged by the change rule.
#include "coordinator/rules/compare.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "common/number_format.h"
#include "common/stats.h"
#include "coordinator/rules/fingerprint_diff.h"
#include "coordinator/rules/report_cells.h"
#include "coordinator/rules/torch_version.h"

namespace benchfleet::rules {
namespace {

const Table* same_table(const rules::Report& r, const Table& t) {
  for (const Table& u : r.tables) {
    if (u.gpu == t.gpu && u.batch == t.batch && u.dtype == t.dtype) return &u;
  }
  return nullptr;
}

constexpr std::size_t kNone = static_cast<std::size_t>(-1);

// The index of `build`'s latency column of `runtime` and `mode` in `t`, or kNone. (Not an
// optional: GCC 12 at -O3 warns falsely of a maybe-uninitialized one.)
std::size_t latency_column(const Table* t, const std::string& build, Runtime runtime, Mode mode) {
  if (!t) return kNone;
  for (std::size_t i = 0; i < t->columns.size(); ++i) {
    const Column& c = t->columns[i];
    if (c.kind == ColumnKind::kLatency && c.build == build && c.runtime == runtime && c.mode == mode) return i;
  }
  return kNone;
}

const rules::Row* row_of(const Table& t, const std::string& model) {
  for (const rules::Row& r : t.rows) {
    if (r.model == model) return &r;
  }
  return nullptr;
}

bool ok(const Cell& c) { return c.status == "ok" && c.value && *c.value > 0; }

int runtimes_of(const Table& t, const std::string& build) {
  std::set<Runtime> r;
  for (const Column& c : t.columns) {
    if (c.kind == ColumnKind::kLatency && c.build == build) r.insert(c.runtime);
  }
  return static_cast<int>(r.size());
}

std::string column_text(Runtime runtime, Mode mode, bool several_runtimes) {
  std::string m(to_string(mode));
  return several_runtimes ? std::string(to_string(runtime)) + " - " + m : m;
}

std::string joined(const std::set<std::string>& items) {
  std::string s;
  for (const std::string& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

std::optional<OverallChange> overall_change(const std::vector<ComparedCell>& cells) {
  std::vector<double> logs;
  for (const ComparedCell& c : cells) {
    if (c.change.noise == "repetitions" && c.change.ratio > 0) logs.push_back(std::log(c.change.ratio));
  }
  if (static_cast<int>(logs.size()) < kOverallMinCells) return std::nullopt;
  const double m = mean(logs);
  const double half = student_t_975(static_cast<int>(logs.size()) - 1) * sample_stddev(logs) /
                      std::sqrt(static_cast<double>(logs.size()));
  OverallChange o;
  o.cells = static_cast<int>(logs.size());
  o.ratio = std::exp(m);
  o.ci = Interval{std::exp(m - half), std::exp(m + half)};
  const bool apart = o.ci.low > 1 || o.ci.high < 1;
  const bool large = std::abs(std::max(o.ratio, 1 / o.ratio) - 1) >= kOverallMinEffect;
  o.verdict = apart && large ? (o.ratio > 1 ? "faster" : "slower") : "same";
  o.why = "geometric mean of A/B over the " + std::to_string(o.cells) + " cells judged by repetitions " +
          format_fixed(o.ratio, 3) + ", 95% interval over cells " + format_fixed(o.ci.low, 3) + "-" +
          format_fixed(o.ci.high, 3) +
          (!apart   ? ": within the cells' spread"
           : !large ? ": under the " + format_fixed(kOverallMinEffect * 100, 0) +
                          "% that two runs' machine state moves every cell together"
                    : ": every cell moved together, beyond their spread");
  return o;
}

std::vector<std::string> in_version_order(const std::set<std::string>& versions) {
  std::vector<std::string> out(versions.begin(), versions.end());
  std::sort(out.begin(), out.end(), [](const std::string& x, const std::string& y) { return version_less(x, y); });
  return out;
}

RatioGeomean geomean_of(const std::vector<double>& ratios) {
  RatioGeomean g;
  g.covered = static_cast<int>(ratios.size());
  if (ratios.empty()) return g;
  double logs = 0;
  for (double r : ratios) logs += std::log(r);
  g.value = std::exp(logs / static_cast<double>(ratios.size()));
  return g;
}

// A's table and B's, pair by pair, each pair's verdict the judged cell's (after the false
// discovery control) found by `judged`.
PairedTable paired_table(const Table& ta, const Table& tb, const std::string& build_a, const std::string& build_b,
                         const std::map<std::tuple<std::string, Runtime, Mode>, const ComparedCell*>& judged) {
  PairedTable out{ta.title, ta.gpu, ta.gpu_label, ta.batch, ta.dtype, {}, {}};
  const bool several = runtimes_of(ta, build_a) > 1;
  std::vector<std::pair<std::size_t, std::size_t>> at;  // column index in A's table and in B's
  for (std::size_t ia = 0; ia < ta.columns.size(); ++ia) {
    const Column& col = ta.columns[ia];
    if (col.kind != ColumnKind::kLatency || col.build != build_a) continue;
    const std::size_t ib = latency_column(&tb, build_b, col.runtime, col.mode);
    if (ib == kNone) continue;
    at.emplace_back(ia, ib);
    out.columns.push_back({col.runtime, col.mode, column_text(col.runtime, col.mode, several), {}, {}, 0});
  }
  std::vector<std::string> models;
  for (const rules::Row& r : ta.rows) models.push_back(r.model);
  for (const rules::Row& r : tb.rows) {
    if (!row_of(ta, r.model)) models.push_back(r.model);
  }
  std::vector<std::vector<double>> all(at.size()), unflagged(at.size());
  for (const std::string& model : models) {
    const rules::Row* ra = row_of(ta, model);
    const rules::Row* rb = row_of(tb, model);
    PairedRow row{model, (ra ? ra : rb)->label, {}};
    for (std::size_t k = 0; k < at.size(); ++k) {
      PairedCell pc;
      if (ra) pc.a = ra->cells.at(at[k].first);
      if (rb) pc.b = rb->cells.at(at[k].second);
      if (pc.a && pc.b && ok(*pc.a) && ok(*pc.b)) {
        pc.ratio = *pc.a->value / *pc.b->value;
        std::set<std::string> flags(pc.a->flags.begin(), pc.a->flags.end());
        flags.insert(pc.b->flags.begin(), pc.b->flags.end());
        pc.flags.assign(flags.begin(), flags.end());
        const auto j = judged.find({model, out.columns[k].runtime, out.columns[k].mode});
        if (j != judged.end()) {
          pc.verdict = j->second->change.verdict;
          pc.why = j->second->change.why;
        }
        all[k].push_back(*pc.ratio);
        if (pc.flags.empty()) {
          unflagged[k].push_back(*pc.ratio);
        } else {
          ++out.columns[k].flagged;
        }
      }
      row.cells.push_back(std::move(pc));
    }
    out.rows.push_back(std::move(row));
  }
  for (std::size_t k = 0; k < at.size(); ++k) {
    out.columns[k].all = geomean_of(all[k]);
    out.columns[k].unflagged = geomean_of(unflagged[k]);
  }
  return out;
}

}  // namespace

Comparison compare_reports(const CompareSide& a, const CompareSide& b) {
  Comparison out;
  out.stat = a.report->stat;
  out.run_a = a.report->run_id;
  out.run_b = b.report->run_id;
  out.build_a = a.build;
  out.build_b = b.build;
  std::set<std::string> versions_a, versions_b, prints_a, prints_b;
  for (const Table& ta : a.report->tables) {
    const Table* tb = same_table(*b.report, ta);
    const bool several = runtimes_of(ta, a.build) > 1;
    std::vector<std::string> fp_a, fp_b;
    for (const Column& col : ta.columns) {
      if (col.kind != ColumnKind::kLatency || col.build != a.build) continue;
      const std::size_t ia = static_cast<std::size_t>(&col - ta.columns.data());
      const std::size_t ib = latency_column(tb, b.build, col.runtime, col.mode);
      const std::string column = column_text(col.runtime, col.mode, several);
      if (ib != kNone) {
        const Column& colb = tb->columns[ib];
        versions_a.insert(col.torch_versions.begin(), col.torch_versions.end());
        versions_b.insert(colb.torch_versions.begin(), colb.torch_versions.end());
        prints_a.insert(col.fingerprints.begin(), col.fingerprints.end());
        prints_b.insert(colb.fingerprints.begin(), colb.fingerprints.end());
        fp_a.insert(fp_a.end(), col.fingerprints.begin(), col.fingerprints.end());
        fp_b.insert(fp_b.end(), colb.fingerprints.begin(), colb.fingerprints.end());
      }
      for (const rules::Row& ra : ta.rows) {
        const Cell& ca = ra.cells.at(ia);
        if (!ok(ca)) continue;
        ++out.expected;
        const auto skip = [&](std::string why) {
          out.uncompared.push_back({ta.title, ra.label, column, std::move(why)});
        };
        if (!tb) {
          skip("B has no " + ta.title + " table");
          continue;
        }
        if (ib == kNone) {
          skip("B's build " + b.build + " has no " + column_text(col.runtime, col.mode, true) + " column");
          continue;
        }
        const rules::Row* rb = row_of(*tb, ra.model);
        if (!rb) {
          skip("B did not measure this model");
          continue;
        }
        const Cell& cb = rb->cells.at(ib);
        if (!ok(cb)) {
          skip("B's cell is " + (cb.status == "not_run" ? std::string("not run") : cb.status));
          continue;
        }
        ComparedCell c;
        c.table = ta.title;
        c.gpu = ta.gpu;
        c.batch = ta.batch;
        c.dtype = ta.dtype;
        c.model = ra.model;
        c.label = ra.label;
        c.runtime = col.runtime;
        c.mode = col.mode;
        c.column = column;
        c.a_ms = *ca.value;
        c.b_ms = *cb.value;
        c.a_n = ca.n;
        c.b_n = cb.n;
        c.change = judge_change(rules::change_side(ca), rules::change_side(cb), noise_floor(device_kind_of(ta.gpu)));
        std::set<std::string> flags(ca.flags.begin(), ca.flags.end());
        flags.insert(cb.flags.begin(), cb.flags.end());
        c.flags.assign(flags.begin(), flags.end());
        out.cells.push_back(std::move(c));
      }
    }
    for (const auto& d : fingerprint_differences({{"A", fp_a}, {"B", fp_b}})) {
      out.warnings.push_back({ta.title, ta.gpu, ta.batch, ta.dtype, d.text});
    }
  }
  std::vector<ChangeVerdict*> verdicts;
  for (ComparedCell& c : out.cells) verdicts.push_back(&c.change);
  control_false_discoveries(verdicts);
  out.overall = overall_change(out.cells);
  for (const Table& ta : a.report->tables) {
    const Table* tb = same_table(*b.report, ta);
    if (!tb) continue;
    std::map<std::tuple<std::string, Runtime, Mode>, const ComparedCell*> judged;
    for (const ComparedCell& c : out.cells) {
      if (c.gpu == ta.gpu && c.batch == ta.batch && c.dtype == ta.dtype) judged[{c.model, c.runtime, c.mode}] = &c;
    }
    out.tables.push_back(paired_table(ta, *tb, a.build, b.build, judged));
  }
  out.torch_a = in_version_order(versions_a);
  out.torch_b = in_version_order(versions_b);
  out.aa = !out.cells.empty() && versions_a.size() == 1 && versions_a == versions_b && !prints_a.empty() &&
           prints_a == prints_b;
  if (out.aa) {
    out.aa_text = "A/A: torch " + joined(versions_a) +
                  " on both sides, with the same speed fingerprint (CPU, threads, GPU, driver, load): no change is "
                  "expected, and any cell called faster or slower is noise";
  }
  return out;
}

bool overall_slowdown(const Comparison& c, double percent) {
  return c.overall && c.overall->verdict == "slower" && (1 / c.overall->ratio - 1) * 100 > percent;
}

std::vector<ComparedCell> slowdowns(const Comparison& c, double percent) {
  std::vector<ComparedCell> out;
  for (const ComparedCell& cell : c.cells) {
    if (cell.change.verdict == "slower" && (cell.b_ms / cell.a_ms - 1) * 100 > percent) out.push_back(cell);
  }
  return out;
}

}  // namespace benchfleet::rules
