#include "coordinator/report/render.h"

#include <algorithm>
#include <charconv>
#include <initializer_list>
#include <set>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include "common/display_text.h"
#include "common/number_format.h"

namespace benchfleet::report {

// The rules' tables, rendered here.
using rules::Cell;
using rules::Column;
using rules::ColumnKind;
using rules::Geomean;
using rules::PassRate;
using rules::Report;
using rules::Row;
using rules::Table;
namespace {

// The characters markdown_escape puts a backslash before.
bool needs_markdown_backslash(char c) {
  switch (c) {
    case '\\':
    case '|':
    case '`':
    case '*':
    case '_':
    case '[':
    case ']':
    case '<':
    case '>':
    case '~':
      return true;
    default:
      return false;
  }
}

// Text placed in Markdown verbatim: '|' would end a table cell, a newline the row, '*', '_',
// '`', '[', '<'... would format or link what is data (run names, error messages). Those get a
// backslash; line breaks and tabs become spaces, and any other control, invisible or
// bidirectional character is written as a visible escape (common/display_text.h).
std::string markdown_escape(std::string_view text) {
  std::string flat(text);
  std::replace_if(
      flat.begin(), flat.end(), [](char c) { return c == '\n' || c == '\r' || c == '\t'; }, ' ');
  const std::string shown = escape_display_text(flat);
  std::string out;
  out.reserve(shown.size());
  for (char c : shown) {
    if (needs_markdown_backslash(c)) out += '\\';
    out += c;
  }
  return out;
}

bool in_latency_table(ColumnKind kind) { return kind == ColumnKind::kLatency || kind == ColumnKind::kSpeedup; }

// What a noise flag means, for the footnote under a table that has flagged cells.
std::string_view flag_meaning(std::string_view flag) {
  if (flag == "high_cv") return "the samples' CV, isolated spikes aside, above the run's noise.max_cv";
  if (flag == "second_mode") return "over 5% of the samples outside Tukey's outer fences: a second mode";
  if (flag == "clock_drop") return "the SM clock dropped while measuring";
  if (flag == "throttled") return "the GPU throttled while measuring";
  if (flag == "ci_not_met") return "the iteration or time bound stopped the loop with its CI wider than the target";
  return {};
}

// Whether a latency or speedup cell gets marks: only a number does ("-" of a speedup whose
// eager side failed says nothing about the compiled side's accuracy or flags).
bool marked(const Cell& cell) { return cell.status == "ok"; }

// A budget stop: measured, but the CI target was not reached before the bound. Not noise, so it
// has a mark of its own.
constexpr std::string_view kBudgetFlag = "ci_not_met";

// A latency or speedup cell's text with its marks: " (wrong)" or " (eager nondeterministic)"
// for an inaccurate compiled side, a trailing "*" when flagged as noisy and "†" when its
// measurement stopped at its budget.
std::string marked_text(const Cell& cell) {
  std::string out = markdown_escape(cell.text);
  if (!marked(cell)) return out;
  if (cell.accuracy == AccuracyVerdict::kWrong) out += " (wrong)";
  if (cell.accuracy == AccuracyVerdict::kEagerNondeterministic) out += " (eager nondeterministic)";
  const bool budget = std::find(cell.flags.begin(), cell.flags.end(), kBudgetFlag) != cell.flags.end();
  if (cell.flags.size() > (budget ? 1u : 0u)) out += '*';
  if (budget) out += "†";
  return out;
}

// A pipe table of the columns `wanted` picks, each cell written by `text_of(cell, column kind)`;
// returns whether it had any.
template <class Wanted, class TextOf>
bool append_pipe_table(std::string& out, const Table& table, Wanted wanted, TextOf text_of) {
  std::vector<std::size_t> columns;
  for (std::size_t i = 0; i < table.columns.size(); ++i) {
    if (wanted(table.columns[i].kind)) columns.push_back(i);
  }
  if (columns.empty()) return false;
  out += "| **Task/Model** |";
  for (std::size_t i : columns) {
    out += " **";
    out += markdown_escape(table.columns[i].header);
    out += "** |";
  }
  out += "\n|:---:|";
  for (std::size_t i = 0; i < columns.size(); ++i) out += ":---:|";
  out += '\n';
  for (const Row& row : table.rows) {
    out += "| ";
    out += markdown_escape(row.label);
    out += " |";
    for (std::size_t i : columns) {
      if (i >= row.cells.size()) break;
      out += ' ';
      out += text_of(row.cells[i], table.columns[i].kind);
      out += " |";
    }
    out += '\n';
  }
  return true;
}

// Samples per second of each latency column, for a batch above 1 (at batch 1 it is 1000 / latency)
// where at least one cell has a latency (a batch every model ran out of memory at has none).
void append_throughput_table(std::string& out, const Table& table) {
  const bool any = std::any_of(table.rows.begin(), table.rows.end(), [](const Row& row) {
    return std::any_of(row.cells.begin(), row.cells.end(),
                       [](const Cell& c) { return c.throughput_per_s.has_value(); });
  });
  if (!any) return;
  std::string section = "\n#### Throughput (samples/s), ";
  section += markdown_escape(table.title);
  section += "\n\n";
  const auto latency = [](ColumnKind kind) { return kind == ColumnKind::kLatency; };
  const auto throughput = [](const Cell& cell, ColumnKind) {
    if (!cell.throughput_per_s) return markdown_escape(cell.text);
    return format_fixed(*cell.throughput_per_s, *cell.throughput_per_s >= 100 ? 0 : 1);
  };
  if (append_pipe_table(section, table, latency, throughput)) out += section;
}

void append_markdown_table(std::string& out, const Table& table, const std::optional<std::int64_t>& memory_cap_mb) {
  out += "### ";
  out += markdown_escape(table.title);
  out += "\n\n";
  std::set<std::string> flags;
  // Latency and speedup cells with their marks, whose flags the footnote explains.
  const auto marked_cell = [&flags](const Cell& cell, ColumnKind) {
    if (marked(cell)) flags.insert(cell.flags.begin(), cell.flags.end());
    return marked_text(cell);
  };
  append_pipe_table(out, table, in_latency_table, marked_cell);
  const bool budget = flags.erase(std::string(kBudgetFlag)) > 0;
  if (!flags.empty()) {
    out += "\n\\* flagged as noisy:";
    bool first = true;
    for (const std::string& flag : flags) {
      out += first ? " " : "; ";
      first = false;
      out += markdown_escape(flag);
      if (std::string_view meaning = flag_meaning(flag); !meaning.empty()) {
        out += " (";
        out += markdown_escape(meaning);
        out += ')';
      }
    }
    out += '\n';
  }
  if (budget) {
    if (flags.empty()) out += '\n';
    out += "† stopped at its budget: ";
    out += markdown_escape(flag_meaning(kBudgetFlag));
    out += " (";
    out += markdown_escape(kBudgetFlag);
    out += "; measured, not noisy)\n";
  }
  if (!table.fingerprint_warnings.empty()) {
    out += "\n⚠ The builds compared here differ in what changes speed, not only in their torch: ";
    for (std::size_t i = 0; i < table.fingerprint_warnings.size(); ++i) {
      if (i > 0) out += "; ";
      out += markdown_escape(table.fingerprint_warnings[i]);
    }
    out += '\n';
  }
  if (!table.geomeans.empty() || !table.pass_rates.empty()) {
    out += '\n';
    for (const Geomean& g : table.geomeans) {
      out += "- ";
      out += markdown_escape(g.text);
      out += '\n';
    }
    for (const PassRate& p : table.pass_rates) {
      out += "- ";
      out += markdown_escape(p.text);
      out += '\n';
    }
  }
  if (table.batch > 1) append_throughput_table(out, table);
  std::string second = "\n#### Compile time and memory, ";
  second += markdown_escape(table.title);
  second += "\n\n";
  const auto plain = [](const Cell& cell, ColumnKind) { return markdown_escape(cell.text); };
  if (append_pipe_table(
          second, table, [](ColumnKind kind) { return !in_latency_table(kind); }, plain)) {
    out += second;
    if (memory_cap_mb) {
      out += "\nMemory cap: " + std::to_string(*memory_cap_mb) +
             " MB per job beyond its start-up (torch loaded), held as RAM by a memory cgroup where the agent "
             "could make one, else as address space; peak MB is the job's peak RSS, start-up included.\n";
    }
  }
}

// A field a spreadsheet would run as a formula: one starting with '=', '+', '-' or '@' (or a tab
// or carriage return before them) that is not a number and not the empty cell's "-".
bool reads_as_formula(std::string_view field) {
  if (field.empty() || field == "-" || std::string_view("=+-@\t\r").find(field.front()) == std::string_view::npos) {
    return false;
  }
  double ignored = 0;
  const auto [end, ec] =
      std::from_chars(field.data() + (field.front() == '+' ? 1 : 0), field.data() + field.size(), ignored);
  return ec != std::errc() || end != field.data() + field.size();
}

void append_csv_field(std::string& out, std::string_view raw) {
  // Controls become visible escapes (newlines stay, quoted); a formula is kept as text by a
  // leading apostrophe, as spreadsheets expect. Plain fields (nearly all) are not copied.
  std::string escaped;
  std::string_view field = raw;
  if (!is_plain_ascii(raw, TextLines::kMany) || reads_as_formula(raw)) {
    escaped = escape_display_text(raw, TextLines::kMany);
    if (reads_as_formula(escaped)) escaped.insert(escaped.begin(), '\'');
    field = escaped;
  }
  // One pass over the field (find_first_of with a set searches the set once per character).
  const bool plain =
      std::none_of(field.begin(), field.end(), [](char c) { return c == ',' || c == '"' || c == '\r' || c == '\n'; });
  if (plain) {
    out += field;
    return;
  }
  out += '"';
  for (char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
}

void append_csv_row(std::string& out, std::initializer_list<std::string_view> fields) {
  bool first = true;
  for (std::string_view f : fields) {
    if (!first) out += ',';
    first = false;
    append_csv_field(out, f);
  }
  out += "\r\n";
}

}  // namespace

std::string render_markdown(const Report& report) {
  std::string out = "# ";
  out += markdown_escape(report.run_name);
  out += " (run ";
  out += std::to_string(report.run_id);
  out += ", ";
  out += to_string(report.stat);
  out += " latency in ms)\n";
  for (const Table& table : report.tables) {
    out += '\n';
    append_markdown_table(out, table, report.memory_cap_mb);
  }
  return out;
}

std::string render_csv(const Report& report) {
  std::string out;
  append_csv_row(out, {"gpu",           "batch",    "dtype",     "task_model", "model_id",      "column",
                       "build",         "runtime",  "mode",      "kind",       "value",         "status",
                       "text",          "accuracy", "flags",     "compile_ms", "compile_cache", "peak_memory_mb",
                       "samples_per_s", "stat",     "ci_low_ms", "ci_high_ms", "change"});
  const std::string stat(to_string(report.stat));
  for (const Table& table : report.tables) {
    const std::string batch = std::to_string(table.batch);
    for (const Row& row : table.rows) {
      for (std::size_t i = 0; i < table.columns.size() && i < row.cells.size(); ++i) {
        const Column& column = table.columns[i];
        const Cell& cell = row.cells[i];
        const auto number = [](const std::optional<double>& v) { return v ? format_shortest(*v) : std::string(); };
        std::string flags;
        for (const std::string& flag : cell.flags) {
          if (!flags.empty()) flags += ';';
          flags += flag;
        }
        const std::string peak_mb =
            cell.peak_memory_bytes ? format_shortest(static_cast<double>(*cell.peak_memory_bytes) / (1 << 20)) : "";
        append_csv_row(out, {table.gpu,
                             batch,
                             to_string(table.dtype),
                             row.label,
                             row.model,
                             column.header,
                             column.build,
                             to_string(column.runtime),
                             to_string(column.mode),
                             to_string(column.kind),
                             number(cell.value),
                             cell.status,
                             cell.text,
                             cell.accuracy ? to_string(*cell.accuracy) : std::string_view(),
                             flags,
                             number(cell.compile_ms),
                             cell.compile_cache,
                             peak_mb,
                             number(cell.throughput_per_s),
                             stat,
                             number(cell.ci_low_ms),
                             number(cell.ci_high_ms),
                             cell.change});
      }
    }
  }
  return out;
}

}  // namespace benchfleet::report

namespace benchfleet::report {
namespace {

std::string verdict_words(const std::string& verdict) {
  if (verdict == "same") return "≈ no significant change";
  if (verdict == "faster") return "▲ faster";
  if (verdict == "slower") return "▼ slower";
  return "?";
}

std::string noise_words(const rules::ChangeVerdict& v) {
  if (v.noise == "repetitions" && v.ratio_ci) {
    std::string s = "repetitions: " + format_fixed(v.ratio_ci->low, 2) + "-" + format_fixed(v.ratio_ci->high, 2);
    if (v.p) s += *v.p < 0.001 ? ", p < 0.001" : ", p = " + format_fixed(*v.p, 3);
    return s;
  }
  return "floor " + format_fixed(v.floor * 100, 0) + "%";
}

}  // namespace

nlohmann::json comparison_json(const rules::Comparison& c) {
  nlohmann::json cells = nlohmann::json::array();
  for (const rules::ComparedCell& x : c.cells) {
    const auto& v = x.change;
    cells.push_back({{"table", x.table},
                     {"gpu", x.gpu},
                     {"batch", x.batch},
                     {"dtype", to_string(x.dtype)},
                     {"model", x.model},
                     {"label", x.label},
                     {"runtime", to_string(x.runtime)},
                     {"mode", to_string(x.mode)},
                     {"column", x.column},
                     {"a_ms", x.a_ms},
                     {"b_ms", x.b_ms},
                     {"a_n", x.a_n},
                     {"b_n", x.b_n},
                     {"ratio", v.ratio},
                     {"ratio_ci_low", v.ratio_ci ? nlohmann::json(v.ratio_ci->low) : nlohmann::json()},
                     {"ratio_ci_high", v.ratio_ci ? nlohmann::json(v.ratio_ci->high) : nlohmann::json()},
                     {"p", v.p ? nlohmann::json(*v.p) : nlohmann::json()},
                     {"verdict", v.verdict},
                     {"noise", v.noise},
                     {"noise_floor", v.floor},
                     {"why", v.why},
                     {"flags", x.flags}});
  }
  nlohmann::json uncompared = nlohmann::json::array();
  for (const rules::UncomparedCell& u : c.uncompared) {
    uncompared.push_back({{"table", u.table}, {"label", u.label}, {"column", u.column}, {"why", u.why}});
  }
  // The warnings as text for a reader, and by table for a view that places them.
  nlohmann::json warnings = nlohmann::json::array();
  nlohmann::json table_warnings = nlohmann::json::array();
  for (const rules::TableWarning& w : c.warnings) {
    warnings.push_back(w.table + ": " + w.text);
    table_warnings.push_back(
        {{"table", w.table}, {"gpu", w.gpu}, {"batch", w.batch}, {"dtype", to_string(w.dtype)}, {"text", w.text}});
  }
  nlohmann::json overall = nullptr;
  if (c.overall) {
    overall = {{"cells", c.overall->cells},         {"ratio", c.overall->ratio},
               {"ratio_ci_low", c.overall->ci.low}, {"ratio_ci_high", c.overall->ci.high},
               {"verdict", c.overall->verdict},     {"why", c.overall->why}};
  }
  const auto side = [](const std::optional<rules::Cell>& cell) {
    return cell ? cell_to_json(*cell, rules::ColumnKind::kLatency) : nlohmann::json();
  };
  const auto number = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  nlohmann::json tables = nlohmann::json::array();
  for (const rules::PairedTable& t : c.tables) {
    nlohmann::json columns = nlohmann::json::array();
    for (const rules::PairedColumn& col : t.columns) {
      columns.push_back({{"runtime", to_string(col.runtime)},
                         {"mode", to_string(col.mode)},
                         {"text", col.text},
                         {"geomean", number(col.all.value)},
                         {"geomean_covered", col.all.covered},
                         {"geomean_unflagged", number(col.unflagged.value)},
                         {"geomean_unflagged_covered", col.unflagged.covered},
                         {"flagged", col.flagged}});
    }
    nlohmann::json rows = nlohmann::json::array();
    for (const rules::PairedRow& r : t.rows) {
      nlohmann::json pairs = nlohmann::json::array();
      for (const rules::PairedCell& p : r.cells) {
        pairs.push_back({{"a", side(p.a)},
                         {"b", side(p.b)},
                         {"ratio", number(p.ratio)},
                         {"verdict", p.verdict},
                         {"why", p.why},
                         {"flags", p.flags}});
      }
      rows.push_back({{"model", r.model}, {"label", r.label}, {"cells", std::move(pairs)}});
    }
    tables.push_back({{"title", t.title},
                      {"gpu", t.gpu},
                      {"gpu_label", t.gpu_label},
                      {"batch", t.batch},
                      {"dtype", to_string(t.dtype)},
                      {"columns", std::move(columns)},
                      {"rows", std::move(rows)}});
  }
  return {{"stat", to_string(c.stat)},
          {"overall", overall},
          {"a", {{"run", c.run_a}, {"build", c.build_a}}},
          {"b", {{"run", c.run_b}, {"build", c.build_b}}},
          {"aa", c.aa},
          {"aa_text", c.aa_text},
          {"expected", c.expected},
          {"compared", c.cells.size()},
          {"cells", cells},
          {"uncompared", uncompared},
          {"warnings", warnings},
          {"table_warnings", table_warnings},
          {"torch_a", c.torch_a},
          {"torch_b", c.torch_b},
          {"tables", std::move(tables)}};
}

std::string render_comparison_markdown(const rules::Comparison& c) {
  const std::string name_a = "run " + std::to_string(c.run_a) + " " + c.build_a;
  const std::string name_b = "run " + std::to_string(c.run_b) + " " + c.build_b;
  std::string s = "# A = " + markdown_escape(name_a) + " vs B = " + markdown_escape(name_b) + " (" +
                  std::string(to_string(c.stat)) + " latency in ms; A/B above 1: B is faster)\n\n";
  if (c.aa) s += "ℹ " + c.aa_text + ".\n\n";
  for (const rules::TableWarning& w : c.warnings) {
    s += "⚠ differs besides torch: " + markdown_escape(w.table + ": " + w.text) + "\n";
  }
  if (!c.warnings.empty()) s += "\n";
  s += "| **Table** | **Task/Model** | **Column** | **A** | **B** | **A/B** | **Change** | **Noise** |\n";
  s += "|:---|:---|:---|---:|---:|---:|:---|:---|\n";
  for (const rules::ComparedCell& x : c.cells) {
    const std::string mark = x.flags.empty() ? "" : "*";
    s += "| " + markdown_escape(x.table) + " | " + markdown_escape(x.label) + " | " + markdown_escape(x.column) +
         " | " + format_fixed(x.a_ms, 3) + " | " + format_fixed(x.b_ms, 3) + " | " + format_fixed(x.change.ratio, 2) +
         "x" + mark + " | " + verdict_words(x.change.verdict) + " | " + noise_words(x.change) + " |\n";
  }
  if (c.cells.empty()) s += "| - | no cell measured ok by both sides | | | | | | |\n";
  if (!c.uncompared.empty()) {
    s += "\nNot compared:\n";
    for (const rules::UncomparedCell& u : c.uncompared) {
      s += "- " + markdown_escape(u.table) + " | " + markdown_escape(u.label) + " | " + markdown_escape(u.column) +
           ": " + markdown_escape(u.why) + "\n";
    }
  }
  if (c.overall) {
    s += "\n**Overall** (" + std::to_string(c.overall->cells) + " cells judged by repetitions): A/B " +
         format_fixed(c.overall->ratio, 2) + "x, 95% interval " + format_fixed(c.overall->ci.low, 2) + "-" +
         format_fixed(c.overall->ci.high, 2) + ": " + verdict_words(c.overall->verdict) + "\n";
  }
  s += "\nCompared " + std::to_string(c.cells.size()) + " of A's " + std::to_string(c.expected) +
       " measured cells. A change is significant when the within-run intervals are apart and it is beyond the "
       "run-to-run noise: the spread of the repetitions (fresh processes) where both sides have two or more, "
       "else the device's stated floor. The cells judged by repetitions are held together to a " +
       format_fixed(rules::kFalseDiscoveryRate * 100, 0) +
       "% false-discovery rate; overall, their geometric mean changed when its interval over the cells excludes 1 "
       "and it moved at least " +
       format_fixed(rules::kOverallMinEffect * 100, 0) + "%.\n";
  return s;
}

std::string render_comparison_csv(const rules::Comparison& c) {
  std::string out;
  append_csv_row(out, {"table", "model", "column", "stat", "a_ms", "b_ms", "a_n", "b_n", "ratio", "ratio_ci_low",
                       "ratio_ci_high", "p", "verdict", "noise", "noise_floor", "flags"});
  const std::string stat(to_string(c.stat));
  for (const rules::ComparedCell& x : c.cells) {
    const auto& v = x.change;
    std::string flags;
    for (const std::string& f : x.flags) flags += (flags.empty() ? "" : ";") + f;
    const std::string lo = v.ratio_ci ? format_fixed(v.ratio_ci->low, 4) : "";
    const std::string hi = v.ratio_ci ? format_fixed(v.ratio_ci->high, 4) : "";
    append_csv_row(out, {x.table, x.label, x.column, stat, format_fixed(x.a_ms, 3), format_fixed(x.b_ms, 3),
                         std::to_string(x.a_n), std::to_string(x.b_n), format_fixed(v.ratio, 4), lo, hi,
                         v.p ? format_fixed(*v.p, 6) : "", v.verdict, v.noise, format_fixed(v.floor, 2), flags});
  }
  return out;
}

}  // namespace benchfleet::report
