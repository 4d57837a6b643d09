// One comparison table of a run (a GPU class x batch x dtype of the report JSON), exactly as the
// report builds it: "Task/Model" rows, latency per (build, runtime, mode), speedup vs eager,
// compile time, peak memory and memory ratio, every status a distinct badge whose tooltip is the
// cell detail, an accuracy badge on compiled cells that are not accurate (a quiet ✓ on accurate
// ones) and a flag on noisy ones, geomean speedups with coverage and pass rates (OOM, errors and
// wrong outputs apart) under it, and its figures. Updated in place when a fresh report arrives
// (live runs). Once the run is final, columns with nothing in them are left out and named in a
// note under the table. The table scrolls sideways in its box, the model column and the header
// staying in view.
//
//   const view = new ReportTableView({ resultHref, seriesHref });   // seriesHref optional
// With `seriesHref(params)`, a cell pointed at or focused (every cell but a not-run one) ends
// with a small link to its series (history.js cellSeriesParams: the row's model, the table's GPU
// class, batch and dtype, the column's build, runtime and mode): the trend of that cell across
// runs and torch versions. Made on demand, so that big tables pay nothing per cell for it.
//   parent.append(view.el);
//   view.render(table, { q, stat, final });   // final: the run ended (no cell will still fill)
import { DEFAULT_STAT } from "../route.js";
import { h, patch } from "../dom.js";
import { badgeClass, describeDetail } from "../status.js";
import { fmtBytes, fmtDuration, fmtThroughput } from "../format.js";
import { gridNav } from "../grid_nav.js";
import { TableCharts } from "./table_charts.js";
import { cellSeriesParams } from "../history.js";

export class ReportTableView {
  constructor({ resultHref, seriesHref = null, eagerCharts = false }) {
    this.resultHref = resultHref;
    this.seriesHref = seriesHref;
    this.heading = h("h3", { class: "table-title" });
    this.table = h("table", { class: "report" });
    this.detail = h("p", { class: "cell-detail", "aria-live": "polite" }, "Focus or point at a cell for its details.");
    this.hiddenNote = h("p", { class: "note hidden-columns", hidden: true });
    this.geomeans = h("ul", { class: "geomeans" });
    // What differs between the table's builds besides torch (threads, CPU, GPU, driver).
    this.fingerprintWarning = h("p", { class: "fingerprint-warning", role: "note", hidden: true });
    this.passRates = h("ul", { class: "pass-rates" });
    this.charts = new TableCharts({ eager: eagerCharts });
    this.el = h("article", { class: "report-table" },
      this.heading,
      h("div", { class: "table-scroll" }, this.table),
      this.hiddenNote,
      this.detail,
      this.fingerprintWarning,
      this.geomeans,
      this.passRates,
      this.charts.el);
    this.signature = "";
    this.nav = gridNav(this.table, { onFocus: (cell) => this.showDetail(cell) });
    this.table.addEventListener("mouseover", (e) => {
      const cell = e.target.closest("td, th[scope=row]");
      this.pointed = cell;
      if (cell) this.showDetail(cell);
    });
  }

  render(table, { q = "", stat = DEFAULT_STAT, final = true } = {}) {
    this.shown = table;
    this.el.dataset.gpu = table.gpu;
    this.el.dataset.batch = String(table.batch);
    this.el.dataset.dtype = table.dtype ?? "float32";
    patch(this.heading, { text: table.title });
    this.table.setAttribute("aria-label", table.title);
    const hidden = new Set(hiddenColumns(table, { final }));
    // Indices into table.columns of the columns drawn, in order.
    this.drawn = table.columns.map((_, c) => c).filter((c) => !hidden.has(c));
    const signature = `${this.drawn.map((c) => table.columns[c].key).join("|")}#${table.rows.map((r) => r.model).join("|")}`;
    if (signature !== this.signature) {
      this.build(table);
      this.signature = signature;
    }
    const note = hidden.size ? `Hidden, empty for every model: ${[...hidden].map((c) => table.columns[c].header).join(", ")}.` : "";
    this.hiddenNote.hidden = !note;
    patch(this.hiddenNote, { text: note });
    const body = this.table.tBodies[0];
    const needle = q.toLowerCase();
    table.rows.forEach((row, r) => {
      const tr = body.rows[r];
      tr.hidden = Boolean(needle) && !`${row.label} ${row.model}`.toLowerCase().includes(needle);
      this.drawn.forEach((c, i) => this.renderCell(tr.cells[i + 1], row.cells[c], table.columns[c], stat));
    });
    const warnings = table.fingerprint_warnings ?? [];
    this.fingerprintWarning.hidden = !warnings.length;
    patch(this.fingerprintWarning, { text: warnings.length ? `⚠ The builds compared here differ in what changes speed, not only in their torch: ${warnings.join("; ")}` : "" });
    const items = table.geomeans.map((g) => g.text);
    if (this.geomeans.dataset.key !== items.join("\n")) {
      this.geomeans.dataset.key = items.join("\n");
      this.geomeans.replaceChildren(...table.geomeans.map((g) =>
        h("li", { dataset: { column: g.column, covered: g.covered, total: g.total } }, g.text)));
    }
    const rates = (table.pass_rates ?? []).map((p) => ({ rate: p, parts: passRateParts(p, table) }));
    const rateKey = JSON.stringify(rates.map(({ parts }) => parts));
    if (this.passRates.dataset.key !== rateKey) {
      this.passRates.dataset.key = rateKey;
      this.passRates.replaceChildren(...rates.map(({ rate, parts }) =>
        h("li", { dataset: { column: rate.column, passed: rate.passed, attempted: rate.attempted } }, passRateLine(parts))));
    }
    this.nav.refresh();
    const focused = document.activeElement?.closest?.("td, th");
    if (focused && this.table.tBodies[0].contains(focused)) this.showDetail(focused);  // live values
    const visible = needle ? table.rows.filter((_, r) => !body.rows[r].hidden) : table.rows;
    this.charts.render(table, visible, stat, { hidden: [...hidden] });
  }

  build(table) {
    const columns = this.drawn.map((c) => table.columns[c]);
    const head = h("tr", null, h("th", { scope: "col", class: "model-col" }, "Task/Model"),
      ...columns.map((col) => h("th", { scope: "col", class: COLUMN_CLASS[col.kind] ?? "",
        dataset: { col: col.key } },
      col.header, h("span", { class: "unit" }, COLUMN_UNIT[col.kind] ?? ""))));
    const body = h("tbody", null, table.rows.map((row) =>
      h("tr", { dataset: { model: row.model } },
        h("th", { scope: "row", title: row.model }, row.label),
        columns.map((col) => h("td", { dataset: { col: col.key } })))));
    this.table.replaceChildren(h("thead", null, head), body);
  }

  // The column (index into the shown table's columns) of body cell `td`.
  columnOf(td) {
    return this.drawn?.[td.cellIndex - 1] ?? -1;
  }

  renderCell(td, cell, col, stat) {
    const flags = cell.flags ?? [];
    const key = `${cell.status}|${cell.text}|${cell.detail}|${cell.result_ids.join(",")}|${stat}|${cell.accuracy ?? ""}|${flags.join(",")}`;
    if (td.dataset.key === key) return;
    td.dataset.key = key;
    td.dataset.status = cell.status;
    td.dataset.results = cell.result_ids.join(",");
    if (cell.accuracy) td.dataset.accuracy = cell.accuracy; else delete td.dataset.accuracy;
    if (flags.length) td.dataset.flags = flags.join(","); else delete td.dataset.flags;
    const tooltip = cellTooltip(cell, col, stat, { batch: this.shown?.batch });
    td.title = tooltip;
    td.dataset.tooltip = tooltip;
    const marks = cellMarks(cell, { accurate: col.kind === "latency_ms" });
    if (cell.status === "ok" && col.kind === "latency_ms") {
      td.className = "num";
      const id = cell.result_ids[0];
      td.replaceChildren(id ? h("a", { href: this.resultHref(id), tabindex: -1 }, cell.text) : cell.text, ...marks);
    } else if (cell.status === "ok" && col.kind === "speedup") {
      const excluded = INACCURATE.has(cell.accuracy) ? " excluded" : "";
      // Coloured by the coordinator's verdict (the change rule: beyond the run-to-run noise), not
      // by which side of 1.00x it falls: 0.99x and 1.01x are the same within the noise.
      td.className = `num speedup ${cell.change === "faster" || cell.change === "slower" ? cell.change : ""}${excluded}`;
      if (cell.change) td.dataset.change = cell.change; else delete td.dataset.change;
      td.replaceChildren(cell.text, ...marks);
    } else if (cell.status === "ok") {
      td.className = "num";
      td.replaceChildren(cell.text);
    } else {
      td.className = "status";
      td.replaceChildren(h("span", { class: `badge ${badgeClass(cell.status)}` }, cell.text));
    }
    // No text of its own (the arrow is CSS): the cell's text stays its value.
    if (td === this.pointed || td === document.activeElement) this.addSeriesLink(td);  // a live update
  }

  // The link to the series of cell `td` of the table last rendered, once it is pointed at or
  // focused. It has no text of its own (the arrow is CSS): the cell's text stays its value.
  addSeriesLink(td) {
    if (!this.seriesHref || !this.shown || td.querySelector("a.series-link")) return;
    const r = td.parentElement.sectionRowIndex;
    const c = this.columnOf(td);
    const row = this.shown.rows[r];
    const col = this.shown.columns[c];
    const params = row && col ? cellSeriesParams(this.shown, col, row, row.cells[c]) : null;
    if (!params) return;
    const title = col.kind === "latency_ms"
      ? "Trend of this cell across runs and torch versions"
      : `Trend of this model's ${col.mode} latency across runs and torch versions`;
    td.append(h("a", { class: "series-link", href: this.seriesHref(params), tabindex: -1, title, "aria-label": "trend" }));
  }

  showDetail(cell) {
    if (cell.tagName === "TD") this.addSeriesLink(cell);
    const tr = cell.parentElement;
    const label = tr.cells[0].textContent;
    if (cell.tagName === "TH") { patch(this.detail, { text: `${label}: ${cell.title}` }); return; }
    const header = this.table.tHead.rows[0].cells[cell.cellIndex]?.firstChild?.textContent ?? "";
    // The cell's text but its accurate mark (the tooltip says "accurate").
    const value = [...cell.childNodes].filter((n) => !n.classList?.contains("acc-pass")).map((n) => n.textContent).join("");
    patch(this.detail, { text: `${label} · ${header}: ${value} — ${cell.dataset.tooltip || ""}` });
  }

  destroy() { this.charts.destroy(); }
}

const COLUMN_UNIT = { latency_ms: " (ms)", speedup: " (×)", peak_memory_mb: " (MiB)", memory_ratio: " (×)" };
const COLUMN_CLASS = { speedup: "speedup-col", compile_ms: "compile-col", peak_memory_mb: "memory-col", memory_ratio: "memory-col" };
// Verdicts that keep a compiled cell out of geomeans and pass rates (docs/design.md §11).
const INACCURATE = new Set(["wrong", "eager_nondeterministic"]);
export const ACCURACY_LABELS = {
  pass: "accurate (within tolerance of the float64 reference)",
  wrong: "wrong: further from the float64 reference than eager allows (left out of geomeans)",
  eager_nondeterministic: "eager is non-deterministic: two eager runs differ, nothing to judge against",
  unchecked: "accuracy not checked",
};
export const FLAG_LABELS = {
  high_cv: "high CV (samples vary more than the run's noise.max_cv, isolated spikes aside)",
  second_mode: "a second mode: over 5% of the samples far from the rest (outside Tukey's outer fences)",
  clock_drop: "SM clock dropped while measuring",
  throttled: "GPU throttled while measuring",
  ci_not_met: "the time or iteration bound stopped the loop with its CI wider than the target",
};

// The badges after a value: the accuracy verdict when it is not a pass (with `accurate`, a quiet
// ✓ when it is), a flag when noisy.
export function cellMarks(cell, { accurate = false } = {}) {
  const marks = [];
  if (accurate && cell.status === "ok" && cell.accuracy === "pass") {
    // A check mark on screen; "accurate" spelled out for screen readers and the tooltip.
    marks.push(h("span", { class: "acc acc-pass", title: ACCURACY_LABELS.pass }, "✓", h("span", { class: "visually-hidden" }, " accurate")));
  }
  if (INACCURATE.has(cell.accuracy)) {
    marks.push(h("span", { class: `badge acc b-${cell.accuracy}`, title: ACCURACY_LABELS[cell.accuracy] },
      cell.accuracy === "wrong" ? "wrong" : "nondet."));
  }
  // Noise (the samples spread, the clock moved) and a budget stop (measured, but the CI target
  // was not reached in time) are different warnings, so they have different marks.
  const noise = (cell.flags ?? []).filter((f) => f !== "ci_not_met");
  if (noise.length) {
    marks.push(h("span", { class: "flag", title: noise.map((f) => FLAG_LABELS[f] ?? f).join("; ") }, "⚑"));
  }
  if (cell.flags?.includes("ci_not_met")) {
    marks.push(h("span", { class: "flag budget", title: FLAG_LABELS.ci_not_met }, "⏱"));
  }
  return marks;
}

// What a cell's tooltip says: the error text, the OOM phase and bytes, the CI and throughput of
// an ok latency (`batch`: the table's, for a report without throughput_per_s), the accuracy
// verdict and noise flags.
export function cellTooltip(cell, col, stat, { batch } = {}) {
  const extra = [];
  if (cell.accuracy) extra.push(ACCURACY_LABELS[cell.accuracy] ?? cell.accuracy);
  for (const f of cell.flags ?? []) extra.push(`flagged: ${FLAG_LABELS[f] ?? f}`);
  const tail = extra.length ? `; ${extra.join("; ")}` : "";
  if (col.kind === "speedup") {
    return cell.status === "ok" ? `speedup vs eager: ${cell.detail}${tail}` : `no speedup: ${cell.detail || "a side is missing"}`;
  }
  if (col.kind === "compile_ms" || col.kind === "peak_memory_mb" || col.kind === "memory_ratio") {
    const what = { compile_ms: "compile time", peak_memory_mb: "peak memory", memory_ratio: "eager peak / compiled peak memory" }[col.kind];
    return cell.status === "ok" ? `${what} ${cell.text}${cell.detail ? `; ${cell.detail}` : ""}` : `no ${what}: ${cell.detail || cell.text}`;
  }
  if (cell.status === "ok") {
    let s = `${stat} latency ${cell.text} ms`;
    const throughput = cellThroughput(cell, batch);
    if (throughput !== null) s += ` (${fmtThroughput(throughput)})`;
    if (cell.ci_low_ms !== null && cell.ci_high_ms !== null) {
      s += `; 95% CI of the ${stat} ${cell.ci_low_ms.toFixed(3)}–${cell.ci_high_ms.toFixed(3)} ms`;
    }
    if (cell.n > 1) s += `; mean of ${cell.n} repetitions`;
    if (cell.detail) s += `; ${cell.detail}`;
    if (cell.compile_ms !== undefined && cell.compile_ms !== null) {
      s += `; compile ${fmtDuration(cell.compile_ms)}${cell.compile_cache && cell.compile_cache !== "cold" ? ` (${cell.compile_cache} cache)` : ""}`;
    }
    if (cell.recompiles) s += `; ${cell.recompiles} recompile(s)`;
    return s + tail;
  }
  return describeDetail(cell.status, cell.detail, fmtBytes);
}

// Samples per second of an ok latency cell: the report's throughput_per_s, else batch x 1000 /
// latency ms; null for anything else.
export function cellThroughput(cell, batch) {
  if (cell.status !== "ok") return null;
  if (typeof cell.throughput_per_s === "number") return cell.throughput_per_s;
  const ms = cell.value_ms ?? cell.value;
  return batch > 0 && ms > 0 ? (batch * 1000) / ms : null;
}

// Statuses of a cell with nothing in it: a job that did not run (yet), a figure that has no side.
const EMPTY = new Set(["not_run", "unavailable"]);

// The columns (indices into table.columns) to leave out: those whose every cell is empty, e.g.
// the speedup, compile and memory columns of a build that could not compile. None while the run
// is live (`final` false: a column fills as its jobs end, and the table keeps its shape), and none
// when every column is empty (nothing has run here: the table's shape tells what will).
export function hiddenColumns(table, { final = true } = {}) {
  if (!final || !table.rows.length) return [];
  const empty = table.columns.map((_, c) => c).filter((c) => table.rows.every((row) => EMPTY.has(row.cells[c]?.status)));
  return empty.length === table.columns.length ? [] : empty;
}

// A pass rate apart: {base: "Pass rate stable - default: 10/12 (83%)", reasons: [{kind, n,
// text}]} with why the others did not pass (OOM, errors, wrong outputs, not judged), so that an
// OOM does not read as an accuracy failure, and the cells judged without running (unsupported:
// the build or runtime lacks the mode), which are not attempted and are no failure. The counts
// are the report's (oom, errors, wrong, unjudged, unsupported); a report without them has them
// counted from the table's column, as the report does.
export function passRateParts(rate, table) {
  let counts = rate;
  if (typeof rate.oom !== "number") {
    counts = { oom: 0, errors: 0, wrong: 0, unjudged: 0, unsupported: 0 };
    const c = table.columns.findIndex((col) => col.key === rate.column);
    for (const row of c < 0 ? [] : table.rows) {
      const cell = row.cells[c];
      if (cell.status === "not_run") continue;
      if (cell.status === "unsupported") {
        counts.unsupported++;
      } else if (cell.status === "ok") {
        if (cell.accuracy === "wrong") counts.wrong++;
        else if (cell.accuracy !== "pass") counts.unjudged++;
      } else if (cell.status === "oom" || cell.status === "oom_implied") {
        counts.oom++;
      } else {
        counts.errors++;
      }
    }
  }
  // The report's text is the base, then ": " and the reasons when it names them.
  const m = /^(.*\((?:\d+%|-)\))/.exec(rate.text);
  const base = m ? m[1] : rate.text;
  const reasons = [];
  const add = (kind, n, one, many) => { if (n > 0) reasons.push({ kind, n, text: `${n} ${n === 1 ? one : many}` }); };
  add("oom", counts.oom ?? 0, "OOM", "OOM");
  add("error", counts.errors ?? 0, "error", "errors");
  add("wrong", counts.wrong ?? 0, "wrong", "wrong");
  add("unjudged", counts.unjudged ?? 0, "not judged", "not judged");
  add("unsupported", counts.unsupported ?? 0, "unsupported", "unsupported");
  return { base, reasons };
}

// What each reason means, in its tooltip.
const REASON_TITLES = {
  oom: "out of GPU memory: not an accuracy failure",
  error: "failed to run (error, timeout, crash, invalid or attempts exhausted)",
  wrong: "ran, but its output is further from the reference than eager allows",
  unjudged: "ran, without an accuracy verdict",
  unsupported: "the build or runtime lacks this mode: judged without running, so not attempted and no failure",
};

// A pass-rate line: the base, then each reason in its own look (an OOM is not an accuracy failure).
function passRateLine({ base, reasons }) {
  if (!reasons.length) return [base];
  const items = reasons.flatMap((r, i) => [i ? ", " : null,
    h("span", { class: `pass-reason pr-${r.kind}`, dataset: { reason: r.kind, count: r.n }, title: REASON_TITLES[r.kind] }, r.text)]);
  return [base, ": ", ...items];
}
