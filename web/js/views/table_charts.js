// The figures under a comparison table, like the seeds': latency per model for eager and each
// compiled mode, the percentage improvement of each compiled mode over eager, and beside the
// latency the compile time of each compiled mode. Cells without a value (OOM, error, not run...)
// are marked gaps with their label, never zeros. Columns the table leaves out (empty for every
// model, report_table.js hiddenColumns) are left out of the figures too, not drawn as a row of
// gaps.
import { h } from "../dom.js";
import { barChart, loadCharts, seriesColor, whenNearViewport } from "../charts.js";
import { improvementPercent } from "../analysis.js";
import { shortLabel } from "../format.js";

export class TableCharts {
  // `eager`: draw right after the table paints even when off screen (the first table's figures).
  constructor({ eager = false } = {}) {
    this.el = h("div", { class: "figures pending" });
    this.latency = null;
    this.improvement = null;
    this.compile = null;
    this.key = "";
    this.pending = null;    // the latest {table, rows, stat, hidden} not drawn yet
    this.visible = eager;   // near the viewport: charts are drawn only then, after the tables
    this.scheduled = false;
    this.observer = whenNearViewport(this.el, () => {
      this.visible = true;
      this.schedule();
    });
  }

  // Charts follow the table: drawn in a later frame (the table paints first) once near the
  // viewport; charts already drawn are updated in place at once. `hidden`: the indices into
  // table.columns of the columns the table leaves out.
  render(table, rows, stat, { hidden = [] } = {}) {
    this.pending = { table, rows, stat, hidden };
    if (this.latency && this.key === figuresKey(table, hidden)) this.flush();
    else if (this.visible) this.schedule();
  }

  schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    // Two frames on: the frame that paints the tables goes first.
    requestAnimationFrame(() => requestAnimationFrame(() => setTimeout(async () => {
      const available = await loadCharts();
      this.scheduled = false;
      if (available) this.flush(); else this.unavailable();
    }, 0)));
  }

  unavailable() {
    if (this.el.querySelector(".charts-unavailable")) return;
    this.el.classList.remove("pending");
    this.el.replaceChildren(h("p", { class: "note charts-unavailable" },
      "Charts unavailable: vendor/chart.umd.js did not load (npm ci, then rebuild to copy chart.js). The table above has every value."));
  }

  flush() {
    if (!this.pending || !this.el.isConnected) return;
    const { table, rows, stat, hidden } = this.pending;
    this.pending = null;
    const specs = chartSpecs(table, rows, stat, { hidden });
    // Another table or other columns (a run that ended leaves its empty ones out): new figures.
    const key = figuresKey(table, hidden);
    if (!this.latency || this.key !== key) {
      this.destroyCharts();
      this.el.replaceChildren();
      this.el.classList.remove("pending");
      this.key = key;
      this.latency = this.figure(specs.latency, "latency");
      this.compile = specs.compile ? this.figure(specs.compile, "compile") : null;
      this.improvement = specs.improvement ? this.figure(specs.improvement, "improvement") : null;
      this.el.dataset.drawn = String(performance.now());
      return;
    }
    this.latency.update(specs.latency);
    if (this.compile && specs.compile) this.compile.update(specs.compile);
    if (this.improvement && specs.improvement) this.improvement.update(specs.improvement);
  }

  figure(spec, kind) {
    const canvas = h("canvas", { role: "img", "aria-label": spec.title });
    const wrap = h("div", { class: "chart-wrap" }, canvas);
    this.el.append(h("figure", { class: `chart-box chart-${kind}` }, wrap, h("figcaption", null, spec.caption)));
    return barChart(canvas, spec);
  }

  destroyCharts() {
    this.latency?.destroy();
    this.improvement?.destroy();
    this.compile?.destroy();
    this.latency = this.improvement = this.compile = null;
  }

  destroy() {
    this.observer.disconnect();
    this.destroyCharts();
  }
}

function figuresKey(table, hidden) {
  return `${table.gpu}/${table.batch}/${table.dtype ?? "float32"}#${[...hidden].sort((a, b) => a - b).join(",")}`;
}

// chart specs for one table: {latency, compile (null without compile columns), improvement (null
// without speedup columns)}. `hidden`: indices into table.columns of columns left out (the
// table's hiddenColumns); a compile or speedup kind with all its columns hidden has no figure.
export function chartSpecs(table, rows, stat, { hidden = [] } = {}) {
  const labels = rows.map((r) => shortLabel(r.label));
  const fullLabels = rows.map((r) => r.label);
  const idx = new Map(table.columns.map((c, i) => [c.key, i]));
  const left = new Set(hidden);
  const shown = table.columns.filter((_, i) => !left.has(i));
  const latencyCols = shown.filter((c) => c.kind === "latency_ms");
  const speedupCols = shown.filter((c) => c.kind === "speedup");
  const compileCols = shown.filter((c) => c.kind === "compile_ms");

  // Colours by the table's every latency column: a series keeps its colour when others are left out.
  const colorOf = new Map(table.columns.filter((c) => c.kind === "latency_ms")
    .map((c, i) => [`${c.build}/${c.runtime}/${c.mode}`, seriesColor(i, c.mode === "eager")]));
  const gapLabel = (cell) => (cell.status === "ok" ? null : cell.status === "not_run" ? "not run" : cell.text);
  const latency = {
    title: `${table.title}: ${stat} latency (ms)`,
    caption: `${stat === "median" ? "Median" : "Mean"} latency per model (lower is better). Hatched slots: no value (label says why).`,
    unit: "ms",
    yTitle: "ms",
    labels,
    fullLabels,
    datasets: latencyCols.map((col) => ({
      label: col.header,
      color: colorOf.get(`${col.build}/${col.runtime}/${col.mode}`),
      data: rows.map((r) => (r.cells[idx.get(col.key)].status === "ok" ? r.cells[idx.get(col.key)].value : null)),
      gaps: rows.map((r) => gapLabel(r.cells[idx.get(col.key)])),
    })),
  };
  const compile = compileCols.length ? {
    title: `${table.title}: compile time (s)`,
    caption: "Compile time per model and compiled mode (lower is better); a warm cache makes it shorter (tooltips say). Hatched slots: no value.",
    unit: "s",
    yTitle: "s",
    labels,
    fullLabels,
    datasets: compileCols.map((col) => ({
      label: col.header,
      color: colorOf.get(`${col.build}/${col.runtime}/${col.mode}`) ?? seriesColor(0, false),
      data: rows.map((r) => {
        const cell = r.cells[idx.get(col.key)];
        return cell.status === "ok" && cell.value !== null ? cell.value / 1000 : null;
      }),
      gaps: rows.map((r) => gapLabel(r.cells[idx.get(col.key)])),
    })),
  } : null;
  if (!speedupCols.length) return { latency, compile, improvement: null };

  // Why a speedup is missing: the first side of it without a value.
  const speedupGap = (row, col) => {
    const cell = row.cells[idx.get(col.key)];
    if (cell.status === "ok") return null;
    for (const side of [`latency/${col.build}/${col.runtime}/eager`, `latency/${col.build}/${col.runtime}/${col.mode}`]) {
      const c = row.cells[idx.get(side)];
      if (c && c.status !== "ok") return gapLabel(c);
    }
    return "n/a";
  };
  const improvement = {
    title: `${table.title}: improvement over eager (%)`,
    caption: "Time saved vs eager per model: (1 − 1/speedup) × 100 (higher is better).",
    unit: "%",
    yTitle: "% of eager's time saved",
    labels,
    fullLabels,
    datasets: speedupCols.map((col) => ({
      label: col.header.replace(/ speedup$/, ""),
      color: colorOf.get(`${col.build}/${col.runtime}/${col.mode}`) ?? seriesColor(0, false),
      data: rows.map((r) => {
        const cell = r.cells[idx.get(col.key)];
        return cell.status === "ok" ? improvementPercent(cell.value) : null;
      }),
      gaps: rows.map((r) => speedupGap(r, col)),
    })),
  };
  return { latency, compile, improvement };
}
