// One comparison table of a run (a GPU class x batch of the report JSON), exactly as the report
// builds it: "Task/Model" rows, latency per (build, runtime, mode), speedup vs eager, every
// status a distinct badge whose tooltip is the cell detail, geomean speedups with coverage under
// it, and its two figures. Updated in place when a fresh report arrives (live runs).
//
//   const view = new ReportTableView({ resultHref, stat });
//   parent.append(view.el);
//   view.render(table, { q, stat });
import { h, patch } from "../dom.js";
import { badgeClass, describeDetail } from "../status.js";
import { fmtBytes } from "../format.js";
import { gridNav } from "../grid_nav.js";
import { TableCharts } from "./table_charts.js";

export class ReportTableView {
  constructor({ resultHref, eagerCharts = false }) {
    this.resultHref = resultHref;
    this.heading = h("h3", { class: "table-title" });
    this.table = h("table", { class: "report" });
    this.detail = h("p", { class: "cell-detail", "aria-live": "polite" }, "Focus or point at a cell for its details.");
    this.geomeans = h("ul", { class: "geomeans" });
    this.charts = new TableCharts({ eager: eagerCharts });
    this.el = h("article", { class: "report-table" },
      this.heading,
      h("div", { class: "table-scroll" }, this.table),
      this.detail,
      this.geomeans,
      this.charts.el);
    this.signature = "";
    this.nav = gridNav(this.table, { onFocus: (cell) => this.showDetail(cell) });
    this.table.addEventListener("mouseover", (e) => {
      const cell = e.target.closest("td, th[scope=row]");
      if (cell) this.showDetail(cell);
    });
  }

  render(table, { q = "", stat = "mean" } = {}) {
    this.el.dataset.gpu = table.gpu;
    this.el.dataset.batch = String(table.batch);
    patch(this.heading, { text: table.title });
    this.table.setAttribute("aria-label", table.title);
    const signature = `${table.columns.map((c) => c.key).join("|")}#${table.rows.map((r) => r.model).join("|")}`;
    if (signature !== this.signature) {
      this.build(table);
      this.signature = signature;
    }
    const body = this.table.tBodies[0];
    const needle = q.toLowerCase();
    table.rows.forEach((row, r) => {
      const tr = body.rows[r];
      tr.hidden = Boolean(needle) && !`${row.label} ${row.model}`.toLowerCase().includes(needle);
      row.cells.forEach((cell, c) => this.renderCell(tr.cells[c + 1], cell, table.columns[c], stat));
    });
    const items = table.geomeans.map((g) => g.text);
    if (this.geomeans.dataset.key !== items.join("\n")) {
      this.geomeans.dataset.key = items.join("\n");
      this.geomeans.replaceChildren(...table.geomeans.map((g) =>
        h("li", { dataset: { column: g.column, covered: g.covered, total: g.total } }, g.text)));
    }
    this.nav.refresh();
    const focused = document.activeElement?.closest?.("td, th");
    if (focused && this.table.tBodies[0].contains(focused)) this.showDetail(focused);  // live values
    const visible = needle ? table.rows.filter((_, r) => !body.rows[r].hidden) : table.rows;
    this.charts.render(table, visible, stat);
  }

  build(table) {
    const head = h("tr", null, h("th", { scope: "col", class: "model-col" }, "Task/Model"),
      ...table.columns.map((col) => h("th", { scope: "col", class: col.kind === "speedup" ? "speedup-col" : "" ,
        dataset: { col: col.key } },
      col.header, h("span", { class: "unit" }, col.kind === "speedup" ? " (×)" : " (ms)"))));
    const body = h("tbody", null, table.rows.map((row) =>
      h("tr", { dataset: { model: row.model } },
        h("th", { scope: "row", title: row.model }, row.label),
        table.columns.map((col) => h("td", { dataset: { col: col.key } })))));
    this.table.replaceChildren(h("thead", null, head), body);
  }

  renderCell(td, cell, col, stat) {
    const key = `${cell.status}|${cell.text}|${cell.detail}|${cell.result_ids.join(",")}|${stat}`;
    if (td.dataset.key === key) return;
    td.dataset.key = key;
    td.dataset.status = cell.status;
    td.dataset.results = cell.result_ids.join(",");
    const tooltip = cellTooltip(cell, col, stat);
    td.title = tooltip;
    td.dataset.tooltip = tooltip;
    if (cell.status === "ok" && col.kind === "latency_ms") {
      td.className = "num";
      const id = cell.result_ids[0];
      td.replaceChildren(id ? h("a", { href: this.resultHref(id), tabindex: -1 }, cell.text) : cell.text);
    } else if (cell.status === "ok") {
      td.className = `num speedup ${cell.value > 1 ? "faster" : cell.value < 1 ? "slower" : ""}`;
      td.replaceChildren(cell.text);
    } else {
      td.className = "status";
      td.replaceChildren(h("span", { class: `badge ${badgeClass(cell.status)}` }, cell.text));
    }
  }

  showDetail(cell) {
    const tr = cell.parentElement;
    const label = tr.cells[0].textContent;
    if (cell.tagName === "TH") { patch(this.detail, { text: `${label}: ${cell.title}` }); return; }
    const header = this.table.tHead.rows[0].cells[cell.cellIndex]?.firstChild?.textContent ?? "";
    patch(this.detail, { text: `${label} · ${header}: ${cell.textContent} — ${cell.dataset.tooltip || ""}` });
  }

  destroy() { this.charts.destroy(); }
}

// What a cell's tooltip says: the error text, the OOM phase and bytes, the CI of an ok latency.
export function cellTooltip(cell, col, stat) {
  if (col.kind === "speedup") {
    return cell.status === "ok" ? `speedup vs eager: ${cell.detail}` : `no speedup: ${cell.detail || "a side is missing"}`;
  }
  if (cell.status === "ok") {
    let s = `${stat} latency ${cell.text} ms`;
    if (cell.ci_low_ms !== null && cell.ci_high_ms !== null) {
      s += `; 95% CI of the median ${cell.ci_low_ms.toFixed(3)}–${cell.ci_high_ms.toFixed(3)} ms`;
    }
    if (cell.n > 1) s += `; mean of ${cell.n} repetitions`;
    if (cell.detail) s += `; ${cell.detail}`;
    return s;
  }
  return describeDetail(cell.status, cell.detail, fmtBytes);
}
