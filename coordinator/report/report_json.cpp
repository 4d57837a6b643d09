// to_json(const Report&), declared in render.h: the dashboard's source of truth.
#include "coordinator/report/render.h"

#include <optional>

namespace benchfleet::report {
namespace {

using nlohmann::json;

json number_or_null(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

json cell_json(const Cell& cell, ColumnKind kind) {
  json reps = json::array();
  for (const RepetitionOutcome& o : cell.repetitions) {
    reps.push_back({{"repetition", o.repetition},
                    {"status", o.status},
                    {"value_ms", number_or_null(o.value_ms)},
                    {"detail", o.detail},
                    {"result_id", o.result_id}});
  }
  return {{"text", cell.text},
          {"status", cell.status},
          {"value", number_or_null(cell.value)},
          {"value_ms", kind == ColumnKind::kLatency ? number_or_null(cell.value) : json(nullptr)},
          {"ci_low_ms", number_or_null(cell.ci_low_ms)},
          {"ci_high_ms", number_or_null(cell.ci_high_ms)},
          {"detail", cell.detail},
          {"result_ids", cell.result_ids},
          {"n", cell.n},
          {"repetitions", std::move(reps)}};
}

json table_json(const Table& table) {
  json columns = json::array();
  for (const Column& c : table.columns) {
    columns.push_back({{"key", c.key},
                       {"header", c.header},
                       {"kind", to_string(c.kind)},
                       {"build", c.build},
                       {"runtime", to_string(c.runtime)},
                       {"mode", to_string(c.mode)},
                       {"torch_versions", c.torch_versions}});
  }
  json rows = json::array();
  for (const Row& row : table.rows) {
    json cells = json::array();
    for (std::size_t i = 0; i < row.cells.size() && i < table.columns.size(); ++i) {
      cells.push_back(cell_json(row.cells[i], table.columns[i].kind));
    }
    rows.push_back({{"model", row.model}, {"label", row.label}, {"cells", std::move(cells)}});
  }
  json geomeans = json::array();
  for (const Geomean& g : table.geomeans) {
    geomeans.push_back({{"column", g.column},
                        {"header", g.header},
                        {"value", number_or_null(g.value)},
                        {"text", g.text},
                        {"covered", g.covered},
                        {"total", g.total}});
  }
  return {{"gpu", table.gpu},
          {"gpu_label", table.gpu_label},
          {"batch", table.batch},
          {"title", table.title},
          {"columns", std::move(columns)},
          {"rows", std::move(rows)},
          {"geomeans", std::move(geomeans)}};
}

}  // namespace

nlohmann::json to_json(const Report& report) {
  json tables = json::array();
  for (const Table& t : report.tables) tables.push_back(table_json(t));
  return {{"run_id", report.run_id},
          {"run_name", report.run_name},
          {"stat", to_string(report.stat)},
          {"tables", std::move(tables)}};
}

}  // namespace benchfleet::report
