// A schedule's build summary (#/schedules/3/summary?stat=median&limit=90), for following nightly
// builds: per run of the schedule and per compiled column (build · runtime · mode), the geomean
// speedup vs eager, the pass rate, the median compile time and the memory ratio, as four line
// charts over the runs (one line per column; a figure a run does not have is a gap, never a
// zero) and a table, newest run first, each run linking to its page. One legend for the four
// charts: a column's button hides or shows its line in all of them. The mean/median switch and
// how many runs are in the URL. Without chart.js the charts say "charts unavailable"; the table
// has every figure.
import { h, fill } from "../dom.js";
import { withParams, DEFAULT_STAT, statOf } from "../route.js";
import { fmtTime } from "../format.js";
import { badgeClass } from "../status.js";
import { lineChartOptions, loadCharts, seriesColor, setDefaults } from "../charts.js";
import { gridNav } from "../grid_nav.js";
import { NOT_IN_RUN, SUMMARY_METRICS, runTick, summaryCharts, summaryColumns, summaryRows } from "../summary_charts.js";
import { errorState, loadingState, emptyState } from "./states.js";
import { selectControl, statSwitch, focusKey, restoreFocus } from "./controls.js";

export const LIMITS = [10, 30, 90, 200];
const DEFAULT_LIMIT = 30;

export class ScheduleSummaryView {
  constructor(ctx, root) {
    this.ctx = ctx;
    this.root = root;
    this.seq = 0;
    this.charts = [];
    this.hidden = new Set();  // column keys whose lines the legend hid
    this.shown = false;       // a summary is on screen (kept when the coordinator goes away)
    this.destroyed = false;
  }

  mount(route) {
    this.route = route;
    this.ctx.setTitle(`Schedule ${route.id} summary`);
    this.load();
  }

  update(route) {
    this.route = route;
    this.load();
  }

  reconnected() { this.load(); }

  destroy() {
    this.destroyed = true;
    this.dropCharts();
  }

  stat() { return statOf(this.route.params); }
  limit() {
    const n = Number(this.route.params.limit);
    return Number.isInteger(n) && n >= 1 && n <= 200 ? n : DEFAULT_LIMIT;
  }

  async load() {
    const seq = ++this.seq;
    const id = this.route.id;
    if (!this.root.firstChild) this.root.append(loadingState(`Loading the summary of schedule ${id}…`));
    try {
      const summary = await this.ctx.api.scheduleSummary(id, { limit: this.limit(), stat: this.stat() });
      if (this.destroyed || seq !== this.seq) return;
      this.render(summary);
    } catch (e) {
      if (this.destroyed || seq !== this.seq) return;
      if (this.shown && e.unreachable) return;  // keep the figures shown; the banner says why
      this.dropCharts();
      this.shown = false;
      this.root.replaceChildren(errorState(e, h("p", null, h("a", { href: "#/schedules" }, "All schedules"))));
      this.ctx.setTitle(e.status === 404 ? "Not found" : `Schedule ${id} summary`);
    }
  }

  render(summary) {
    const focused = focusKey(document.activeElement);
    this.dropCharts();
    this.shown = true;
    const { schedule, runs } = summary;
    const stat = summary.stat ?? this.stat();
    this.ctx.setTitle(`${schedule.name} · build summary`);
    const head = [
      h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: "#/schedules" }, "Schedules"), " › ", `${schedule.name} #${schedule.id}`),
      h("header", { class: "run-head" },
        h("h1", null, `Build summary: ${schedule.name}`),
        h("p", { class: "meta" }, `Schedule #${schedule.id}: per run, per compiled build · runtime · mode, over all of the run's tables (GPU classes, batch sizes, dtypes). `,
          `Speedups from ${stat} latencies.`)),
      this.toolbar(stat, runs.length),
    ];
    if (!runs.length) {
      fill(this.root, head, emptyState("No runs of this schedule yet.",
        h("p", null, "Each run the schedule creates when due is summarised here. ", h("a", { href: "#/schedules" }, "All schedules"))));
      restoreFocus(this.root, focused);
      return;
    }
    const columns = summaryColumns(summary);
    const charts = summaryCharts(summary);
    const figures = h("div", { class: "figures summary-figures" }, charts.map((spec) => this.figure(spec)));
    const legend = this.legend(columns);
    fill(this.root, head,
      h("section", { class: "panel", "aria-labelledby": "summary-charts-heading" },
        h("h2", { id: "summary-charts-heading" }, "Over time"),
        h("p", { class: "note" }, `${runs.length} run${runs.length === 1 ? "" : "s"}, oldest on the left. `,
          "A figure a run does not have (its column not in the run, nothing covered) breaks the line; it is never drawn as zero."),
        legend, figures),
      h("section", { class: "panel", "aria-labelledby": "summary-table-heading" },
        h("h2", { id: "summary-table-heading" }, "Runs"),
        columns.length ? this.table(summaryRows(summary, columns), columns, stat) : emptyState("No compiled column in these runs.")));
    restoreFocus(this.root, focused);
    const seq = this.seq;
    loadCharts().then((available) => {
      if (this.destroyed || seq !== this.seq || !figures.isConnected) return;
      if (!available) {
        legend.remove();
        figures.replaceWith(h("p", { class: "note charts-unavailable" },
          "Charts unavailable: vendor/chart.umd.js did not load (npm ci, then rebuild to copy chart.js). The table below has every figure."));
        return;
      }
      for (const [i, spec] of charts.entries()) {
        const figure = figures.children[i];
        this.charts.push(summaryChart(figure.querySelector("canvas"), spec, this.hidden));
        figure.dataset.drawn = "1";
      }
    });
  }

  toolbar(stat, shown) {
    const go = (changes) => this.ctx.navigate(withParams(this.route, changes));
    const limit = this.limit();
    const limits = LIMITS.includes(limit) ? LIMITS : [...LIMITS, limit].sort((a, b) => a - b);  // a count typed in the URL
    return h("div", { class: "toolbar summary-controls", role: "toolbar", "aria-label": "Summary options" },
      statSwitch(stat, (v) => go({ stat: v === DEFAULT_STAT ? undefined : v })),
      selectControl("Runs", "limit", limits.map((n) => [String(n), `latest ${n}`]), String(limit),
        (v) => go({ limit: Number(v) === DEFAULT_LIMIT ? undefined : v })),
      shown >= limit ? h("p", { class: "note" }, `Showing the latest ${limit} runs.`) : null);
  }

  figure(spec) {
    const canvas = h("canvas", { role: "img", "aria-label": `${spec.title} per run (${spec.axis}), one line per build · runtime · mode` });
    return h("figure", { class: "chart-box summary-chart", dataset: { metric: spec.metric } },
      h("div", { class: "chart-wrap summary-wrap" }, canvas),
      h("figcaption", null, spec.caption));
  }

  // The four charts' legend: per column its colour and a button hiding or showing its lines.
  legend(columns) {
    const known = new Set(columns.map((c) => c.key));
    for (const key of this.hidden) if (!known.has(key)) this.hidden.delete(key);
    return h("div", { class: "legend summary-legend", role: "group", "aria-label": "Lines (build · runtime · mode)" },
      columns.map((c, i) => h("button", {
        type: "button", class: "legend-item", "aria-pressed": String(!this.hidden.has(c.key)), dataset: { col: c.key },
        title: "Show or hide this line in the four charts",
        on: {
          click: (e) => {
            const shown = this.hidden.has(c.key);
            if (shown) this.hidden.delete(c.key); else this.hidden.add(c.key);
            e.currentTarget.setAttribute("aria-pressed", String(shown));
            for (const chart of this.charts) chart.setVisible(c.key, shown);
          },
        },
      }, h("span", { class: "swatch", style: `background: ${seriesColor(i, c.eager)}` }), c.label)));
  }

  // Rows: runs, newest first; per column a group of the four figures with their units.
  table(rows, columns, stat) {
    const table = h("table", { class: "summary-table", "aria-label": "Build summary per run" },
      h("thead", null,
        h("tr", null,
          h("th", { scope: "col", rowspan: 2, class: "run-col" }, "Run"),
          h("th", { scope: "col", rowspan: 2 }, "Created"),
          columns.map((c) => h("th", { scope: "colgroup", colspan: SUMMARY_METRICS.length, class: "gstart", dataset: { col: c.key } }, c.label))),
        h("tr", null, columns.map(() => SUMMARY_METRICS.map((m, i) => h("th", { scope: "col", class: i === 0 ? "gstart" : null, dataset: { metric: m.id } },
          { speedup: `Speedup (${stat})`, pass_rate: "Pass rate", compile: "Compile", memory: "Memory ratio" }[m.id]))))),
      h("tbody", null, rows.map((r) => h("tr", { dataset: { run: r.runId } },
        h("th", { scope: "row", class: "run-col" }, h("a", { href: `#/runs/${r.runId}` }, `#${r.runId}`),
          r.state !== "done" ? [" ", h("span", { class: `badge ${badgeClass(r.state)}` }, r.state)] : null,
          r.name ? h("small", { class: "sub" }, r.name) : null),
        h("td", { class: "created", title: r.createdAt ?? "" }, fmtTime(r.createdAt)),
        r.cells.map((cell, c) => SUMMARY_METRICS.map((m, i) => {
          const cls = ["num", i === 0 ? "gstart" : null];
          if (!cell) {
            return h("td", { class: [...cls, "absent"].filter(Boolean).join(" "), title: NOT_IN_RUN, dataset: { col: columns[c].key, metric: m.id } }, "—");
          }
          const f = cell[m.id];
          if (f.value === null) cls.push("no-value");
          return h("td", { class: cls.filter(Boolean).join(" "), title: f.title, dataset: { col: columns[c].key, metric: m.id } },
            h("span", { class: "figure" }, f.text), f.sub ? h("small", { class: "sub" }, f.sub) : null);
        }))))));
    gridNav(table);
    return h("div", { class: "table-scroll" }, table);
  }

  dropCharts() {
    for (const c of this.charts) c.destroy();
    this.charts = [];
  }
}

// Narrow charts (phones) leave out the title (the caption says it) and the x axis title, and
// tick runs by date only, so that the plot keeps its height.
const NARROW_PX = 420;
function fitWidth(options, narrow) {
  options.plugins.title.display = !narrow;
  options.scales.x.title.display = !narrow;
}

// One metric's line chart: a line per column over the runs, gaps where a run has no figure;
// the legend is the page's (ScheduleSummaryView.legend), shared by the four charts.
function summaryChart(canvas, spec, hidden) {
  setDefaults();
  const suffix = spec.unit === "%" ? "%" : spec.unit === "s" ? " s" : "×";
  const digits = spec.unit === "%" ? 1 : 2;
  let narrow = (canvas.parentElement?.clientWidth ?? NARROW_PX) < NARROW_PX;
  const base = lineChartOptions(spec.title);
  const options = {
    ...base,
    plugins: {
      ...base.plugins,
      legend: { display: false },
      tooltip: {
        callbacks: {
          title: (items) => spec.fullLabels[items[0]?.dataIndex] ?? "",
          label: (item) => `${item.dataset.label}: ${item.raw === null ? item.dataset.bfWhy[item.dataIndex] : `${item.raw.toFixed(digits)}${suffix}`}`,
        },
      },
    },
    scales: {
      // Offset: the first and last runs off the edges (a line of two runs reads as one).
      x: {
        offset: true,
        grid: { display: false },
        title: { display: true, text: "run (UTC date, id)" },
        ticks: {
          autoSkip: true, maxRotation: 45, minRotation: 0,
          callback(value) { return runTick(this.getLabelForValue(value), narrow); },
        },
      },
      y: spec.unit === "%"
        ? { min: 0, max: 100, title: { display: true, text: spec.axis } }
        : { beginAtZero: spec.unit === "s", grace: "10%", title: { display: true, text: spec.axis } },
    },
    onResize: (c, size) => {
      narrow = size.width < NARROW_PX;
      fitWidth(c.options, narrow);
    },
  };
  fitWidth(options, narrow);
  const chart = new window.Chart(canvas, {
    type: "line",
    data: {
      labels: spec.labels,
      datasets: spec.datasets.map((d) => {
        const color = seriesColor(d.index, d.eager);
        return {
          label: d.label, data: d.data, borderColor: color, backgroundColor: color, bfKey: d.key, bfWhy: d.why,
          hidden: hidden.has(d.key), clip: 6,  // a point at 100% drawn whole
          borderWidth: 2, pointRadius: spec.labels.length > 60 ? 2 : 3, pointHoverRadius: 5, spanGaps: false, tension: 0,
        };
      }),
    },
    options,
  });
  return {
    chart,
    setVisible(key, visible) {
      const i = chart.data.datasets.findIndex((d) => d.bfKey === key);
      if (i < 0) return;
      chart.setDatasetVisibility(i, visible);
      chart.update("none");
    },
    destroy() { chart.destroy(); },
  };
}
