// render_json and to_json (declared in render.h): the dashboard's source of truth. The text is
// written directly, not through a JSON tree: a 5,000-cell report is 1.3 MB, and building the
// tree cost more than everything else its request does.
#include <charconv>
#include <cmath>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "coordinator/report/render.h"

namespace benchfleet::report {

// The rules' tables, rendered here.
using rules::Cell;
using rules::Column;
using rules::ColumnKind;
using rules::Geomean;
using rules::PassRate;
using rules::RepetitionOutcome;
using rules::Report;
using rules::Row;
using rules::Table;
namespace {

// Appends JSON values to a string. The caller writes well-formed sequences: key() before each
// member's value, comma() between elements.
class JsonText {
 public:
  explicit JsonText(std::string& out) : out_(out) {}

  void raw(std::string_view s) { out_ += s; }
  // REQUIRES: `k` needs no escaping (the member names below are plain ASCII literals).
  void key(std::string_view k) {
    out_ += '"';
    out_ += k;
    out_ += "\":";
  }
  void string(std::string_view s) {
    bool plain = true;
    for (unsigned char c : s) {
      if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') {
        plain = false;
        break;
      }
    }
    if (plain) {
      out_ += '"';
      out_ += s;
      out_ += '"';
    } else {
      // Escapes, and invalid UTF-8 replaced rather than thrown on, exactly as json_response does.
      out_ += nlohmann::json(std::string(s)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    }
  }
  void integer(std::int64_t v) {
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, r.ptr);
  }
  // Shortest text that reads back as the same double; always with a fraction or exponent, as
  // nlohmann writes doubles; null when not finite.
  void number(double v) {
    if (!std::isfinite(v)) {
      out_ += "null";
      return;
    }
    char buf[32];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    const std::string_view text(buf, static_cast<std::size_t>(r.ptr - buf));
    out_ += text;
    if (text.find_first_of(".e") == std::string_view::npos) out_ += ".0";
  }
  template <class Int>
  void integer_or_null(const std::optional<Int>& v) {
    if (v) {
      integer(*v);
    } else {
      out_ += "null";
    }
  }
  void string_or_null(std::string_view s) {
    if (s.empty()) {
      out_ += "null";
    } else {
      string(s);
    }
  }
  void number_or_null(const std::optional<double>& v) {
    if (v) {
      number(*v);
    } else {
      out_ += "null";
    }
  }
  template <class T, class Each>
  void array(const std::vector<T>& items, Each each) {
    out_ += '[';
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out_ += ',';
      each(items[i]);
    }
    out_ += ']';
  }

 private:
  std::string& out_;
};

void cell_json(JsonText& w, const Cell& cell, ColumnKind kind) {
  w.raw("{");
  w.key("text"), w.string(cell.text);
  w.raw(","), w.key("status"), w.string(cell.status);
  w.raw(","), w.key("value"), w.number_or_null(cell.value);
  w.raw(","), w.key("value_ms"), w.number_or_null(kind == ColumnKind::kLatency ? cell.value : std::nullopt);
  w.raw(","), w.key("ci_low_ms"), w.number_or_null(cell.ci_low_ms);
  w.raw(","), w.key("ci_high_ms"), w.number_or_null(cell.ci_high_ms);
  w.raw(","), w.key("throughput_per_s"), w.number_or_null(cell.throughput_per_s);
  w.raw(","), w.key("detail"), w.string(cell.detail);
  w.raw(","), w.key("result_ids"), w.array(cell.result_ids, [&](std::int64_t id) { w.integer(id); });
  w.raw(","), w.key("n"), w.integer(cell.n);
  w.raw(","), w.key("repetitions");
  w.array(cell.repetitions, [&](const RepetitionOutcome& o) {
    w.raw("{");
    w.key("repetition"), w.integer(o.repetition);
    w.raw(","), w.key("status"), w.string(o.status);
    w.raw(","), w.key("value_ms"), w.number_or_null(o.value_ms);
    w.raw(","), w.key("detail"), w.string(o.detail);
    w.raw(","), w.key("result_id"), w.integer(o.result_id);
    w.raw("}");
  });
  w.raw(","), w.key("accuracy"), w.string_or_null(cell.accuracy ? to_string(*cell.accuracy) : std::string_view());
  w.raw(","), w.key("flags"), w.array(cell.flags, [&](const std::string& f) { w.string(f); });
  w.raw(","), w.key("compile_ms"), w.number_or_null(cell.compile_ms);
  w.raw(","), w.key("compile_cache"), w.string_or_null(cell.compile_cache);
  w.raw(","), w.key("change"), w.string_or_null(cell.change);
  w.raw(","), w.key("run_to_run_spread"), w.number_or_null(cell.run_to_run_spread);
  w.raw(","), w.key("run_to_run_cv"), w.number_or_null(cell.run_to_run_cv);
  w.raw(","), w.key("peak_memory_bytes"), w.integer_or_null(cell.peak_memory_bytes);
  w.raw(","), w.key("recompiles"), w.integer_or_null(cell.recompiles);
  w.raw("}");
}

void table_json(JsonText& w, const Table& table) {
  w.raw("{");
  w.key("gpu"), w.string(table.gpu);
  w.raw(","), w.key("gpu_label"), w.string(table.gpu_label);
  w.raw(","), w.key("batch"), w.integer(table.batch);
  w.raw(","), w.key("dtype"), w.string(to_string(table.dtype));
  w.raw(","), w.key("title"), w.string(table.title);
  w.raw(","), w.key("columns");
  w.array(table.columns, [&](const Column& c) {
    w.raw("{");
    w.key("key"), w.string(c.key);
    w.raw(","), w.key("header"), w.string(c.header);
    w.raw(","), w.key("kind"), w.string(to_string(c.kind));
    w.raw(","), w.key("build"), w.string(c.build);
    w.raw(","), w.key("runtime"), w.string(to_string(c.runtime));
    w.raw(","), w.key("mode"), w.string(to_string(c.mode));
    w.raw(","), w.key("torch_versions"), w.array(c.torch_versions, [&](const std::string& v) { w.string(v); });
    // Each is compact JSON the store wrote (rules::speed_fingerprint): embedded as it is, once
    // checked to be JSON (a damaged row reads as null).
    w.raw(","), w.key("fingerprints"), w.array(c.fingerprints, [&](const std::string& v) {
      w.raw(nlohmann::json::accept(v) ? std::string_view(v) : std::string_view("null"));
    });
    w.raw("}");
  });
  w.raw(","), w.key("rows");
  w.array(table.rows, [&](const Row& row) {
    w.raw("{");
    w.key("model"), w.string(row.model);
    w.raw(","), w.key("label"), w.string(row.label);
    w.raw(","), w.key("cells"), w.raw("[");
    for (std::size_t i = 0; i < row.cells.size() && i < table.columns.size(); ++i) {
      if (i > 0) w.raw(",");
      cell_json(w, row.cells[i], table.columns[i].kind);
    }
    w.raw("]}");
  });
  w.raw(","), w.key("geomeans");
  w.array(table.geomeans, [&](const Geomean& g) {
    w.raw("{");
    w.key("column"), w.string(g.column);
    w.raw(","), w.key("header"), w.string(g.header);
    w.raw(","), w.key("value"), w.number_or_null(g.value);
    w.raw(","), w.key("text"), w.string(g.text);
    w.raw(","), w.key("covered"), w.integer(g.covered);
    w.raw(","), w.key("total"), w.integer(g.total);
    w.raw(","), w.key("excluded_inaccurate"), w.integer(g.excluded_inaccurate);
    w.raw(","), w.key("excluded_flagged"), w.integer(g.excluded_flagged);
    w.raw("}");
  });
  w.raw(","), w.key("fingerprint_warnings");
  w.array(table.fingerprint_warnings, [&](const std::string& v) { w.string(v); });
  w.raw(","), w.key("pass_rates");
  w.array(table.pass_rates, [&](const PassRate& p) {
    w.raw("{");
    w.key("column"), w.string(p.column);
    w.raw(","), w.key("header"), w.string(p.header);
    w.raw(","), w.key("passed"), w.integer(p.passed);
    w.raw(","), w.key("attempted"), w.integer(p.attempted);
    w.raw(","), w.key("oom"), w.integer(p.oom);
    w.raw(","), w.key("errors"), w.integer(p.errors);
    w.raw(","), w.key("wrong"), w.integer(p.wrong);
    w.raw(","), w.key("unjudged"), w.integer(p.unjudged);
    w.raw(","), w.key("unsupported"), w.integer(p.unsupported);
    w.raw(","), w.key("text"), w.string(p.text);
    w.raw("}");
  });
  w.raw("}");
}

}  // namespace

std::string render_json(const Report& report) {
  std::string out;
  std::size_t cells = 0;
  for (const Table& t : report.tables) cells += t.rows.size() * t.columns.size();
  out.reserve(512 + cells * 448);  // the seeds' study averages 441 bytes a cell
  JsonText w(out);
  w.raw("{");
  w.key("run_id"), w.integer(report.run_id);
  w.raw(","), w.key("run_name"), w.string(report.run_name);
  w.raw(","), w.key("stat"), w.string(to_string(report.stat));
  w.raw(","), w.key("exclude_flagged"), w.raw(report.exclude_flagged ? "true" : "false");
  w.raw(","), w.key("memory_cap_mb"), w.integer_or_null(report.memory_cap_mb);
  w.raw(","), w.key("tables"), w.array(report.tables, [&](const Table& t) { table_json(w, t); });
  w.raw("}");
  return out;
}

nlohmann::json to_json(const Report& report) { return nlohmann::json::parse(render_json(report)); }

nlohmann::json cell_to_json(const Cell& cell, ColumnKind kind) {
  std::string out;
  JsonText w(out);
  cell_json(w, cell, kind);
  return nlohmann::json::parse(out);
}

}  // namespace benchfleet::report
