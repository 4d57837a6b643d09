#include "coordinator/report/render.h"

#include <initializer_list>
#include <string>
#include <string_view>

#include "coordinator/report/format.h"

namespace benchfleet::report {
namespace {

// Text placed in Markdown verbatim: '|' would end a table cell, a newline the row, '*', '_',
// '`', '[', '<'... would format or link what is data (run names, error messages). Those get a
// backslash; control characters become spaces.
std::string markdown_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) {
      out += ' ';
    } else if (std::string_view("\\|`*_[]<>~").find(c) != std::string_view::npos) {
      out += '\\';
      out += c;
    } else {
      out += c;
    }
  }
  return out;
}

void append_markdown_table(std::string& out, const Table& table) {
  out += "### ";
  out += markdown_escape(table.title);
  out += "\n\n| **Task/Model** |";
  for (const Column& column : table.columns) {
    out += " **";
    out += markdown_escape(column.header);
    out += "** |";
  }
  out += "\n|:---:|";
  for (std::size_t i = 0; i < table.columns.size(); ++i) out += ":---:|";
  out += '\n';
  for (const Row& row : table.rows) {
    out += "| ";
    out += markdown_escape(row.label);
    out += " |";
    for (const Cell& cell : row.cells) {
      out += ' ';
      out += markdown_escape(cell.text);
      out += " |";
    }
    out += '\n';
  }
  if (!table.geomeans.empty()) {
    out += '\n';
    for (const Geomean& g : table.geomeans) {
      out += "- ";
      out += markdown_escape(g.text);
      out += '\n';
    }
  }
}

void append_csv_field(std::string& out, std::string_view field) {
  if (field.find_first_of(",\"\r\n") == std::string_view::npos) {
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
    append_markdown_table(out, table);
  }
  return out;
}

std::string render_csv(const Report& report) {
  std::string out;
  append_csv_row(out, {"gpu", "batch", "task_model", "model_id", "column", "build", "runtime", "mode", "kind", "value",
                       "status", "text"});
  for (const Table& table : report.tables) {
    const std::string batch = std::to_string(table.batch);
    for (const Row& row : table.rows) {
      for (std::size_t i = 0; i < table.columns.size() && i < row.cells.size(); ++i) {
        const Column& column = table.columns[i];
        const Cell& cell = row.cells[i];
        const std::string value = cell.value ? format_shortest(*cell.value) : std::string();
        append_csv_row(out,
                       {table.gpu, batch, row.label, row.model, column.header, column.build, to_string(column.runtime),
                        to_string(column.mode), to_string(column.kind), value, cell.status, cell.text});
      }
    }
  }
  return out;
}

}  // namespace benchfleet::report
