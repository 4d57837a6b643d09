// The run page's "Batch scaling" section: one model's latency (left axis, ms) and throughput
// (right axis, samples/s) across the run's batch sizes on one GPU class and dtype, a line pair
// per latency column (build · runtime · mode). Shown only when some GPU class/dtype has at least
// two batch sizes. A point without a value (OOM, error, not run...) is a gap in both lines with a
// marker labelled with its status at the bottom of the plot, named in the legend, the tooltip and
// the list under the chart; never a zero. Every number is also in a table (open when chart.js
// did not load).
//
//   const view = new BatchScalingView({ onSelect: (changes) => navigate(withParams(route, changes)) });
//   parent.append(view.el);
//   view.render(report, { gpu, dtype, model, q, stat });   // again on each fresh report
// `onSelect` gets {model} when a model is picked, {gpu, dtype, batch: undefined} when a GPU
// class/dtype is (the run view's own filters, which the section follows).
import { DEFAULT_STAT } from "../route.js";
import { h } from "../dom.js";
import { lineChartOptions, loadCharts, seriesColor, setDefaults, whenNearViewport } from "../charts.js";
import { fmtBytes, fmtMs } from "../format.js";
import { badgeClass, describeDetail } from "../status.js";
import { selectControl, focusKey, restoreFocus } from "./controls.js";
import {
  batchScaling, fmtThroughput, gapSummary, groupKey, pickGroup, pickModel, scalingGaps, scalingGroups, scalingModels,
} from "../scaling.js";

// How a point without a value is marked, by status (OOM apart from failures).
const MARKER_STYLE = { oom: "triangle", oom_implied: "triangle", not_run: "circle", unsupported: "circle" };

export class BatchScalingView {
  constructor({ onSelect }) {
    this.onSelect = onSelect;
    this.controls = h("div", { class: "toolbar scaling-controls", role: "toolbar", "aria-label": "Batch scaling options" });
    // The canvas is made only once chart.js has loaded (as the tables' figures are): without
    // chart.js the section has the note and the numbers, and no empty canvas.
    this.canvas = null;
    this.wrap = h("div", { class: "chart-wrap scaling-wrap" });
    this.caption = h("figcaption");
    this.figure = h("figure", { class: "chart-box chart-scaling" }, this.wrap, this.caption);
    this.gaps = h("div", { class: "scaling-gaps" });
    this.numbers = h("div", { class: "table-scroll" });
    this.details = h("details", { class: "scaling-numbers" }, h("summary", null, "Numbers"), this.numbers);
    this.el = h("section", { class: "panel batch-scaling", "aria-labelledby": "batch-scaling-heading", hidden: true },
      h("h2", { id: "batch-scaling-heading" }, "Batch scaling"),
      this.controls, this.figure, this.gaps, this.details);
    this.chart = null;
    this.spec = null;          // the chart spec last rendered, drawn once visible
    this.key = "";
    this.controlsKey = "";
    this.visible = false;
    this.unavailable = false;
    this.scheduled = false;
    this.observer = whenNearViewport(this.el, () => {
      this.visible = true;
      this.schedule();
    });
  }

  render(report, { gpu, dtype, model, q = "", stat = DEFAULT_STAT } = {}) {
    const groups = scalingGroups(report.tables);
    const group = pickGroup(groups, { gpu, dtype });
    const models = group ? scalingModels(report.tables, group) : [];
    const picked = pickModel(models, { model, q });
    if (!group || !picked) {
      this.el.hidden = true;
      this.key = "";
      return;
    }
    this.el.hidden = false;
    const scaling = batchScaling(report.tables, group, picked.model);
    this.renderControls(groups, group, models, picked);
    const key = JSON.stringify([scaling, stat]);
    if (key === this.key) return;  // a poll without news: the DOM stays quiet
    this.key = key;
    this.spec = scalingChartSpec(scaling, stat);
    this.canvas?.setAttribute("aria-label", this.spec.title);
    this.caption.textContent = `${stat === "median" ? "Median" : "Mean"} latency per call (solid, left axis; lower is better) ` +
      "and throughput = batch × 1000 / latency (dashed, right axis; higher is better). A batch size without a value " +
      "breaks both lines; its marker at the bottom is labelled with why (listed below).";
    this.renderGaps(scaling);
    this.renderNumbers(scaling, stat);
    if (this.chart) this.chart.update(this.spec);
    else if (this.visible) this.schedule();
  }

  renderControls(groups, group, models, picked) {
    const key = JSON.stringify([groups.map(groupKey), groupKey(group), models, picked.model]);
    if (key === this.controlsKey) return;
    this.controlsKey = key;
    const focused = focusKey(document.activeElement);
    const groupText = (g) => `${g.gpuLabel} · ${g.dtype} (batch ${g.batches.join("/")})`;
    this.controls.replaceChildren(
      selectControl("Model", "scaling_model", models.map((m) => [m.model, m.label]), picked.model,
        (v) => this.onSelect({ model: v })),
      groups.length > 1
        ? selectControl("GPU class · dtype", "scaling_group", groups.map((g) => [groupKey(g), groupText(g)]), groupKey(group), (v) => {
          const g = groups.find((x) => groupKey(x) === v);
          this.onSelect({ gpu: g.gpu, dtype: g.dtype, batch: undefined });
        })
        : h("p", { class: "note scaling-group" }, groupText(group)));
    restoreFocus(this.controls, focused);
  }

  // The points without a value, in words: "OOM · stable · libtorch · default at batch 16 — out of memory…".
  renderGaps(scaling) {
    const gaps = scalingGaps(scaling);
    if (!gaps.length) {
      this.gaps.replaceChildren();
      return;
    }
    this.gaps.replaceChildren(
      h("p", { class: "note" }, `${gaps.length} point${gaps.length > 1 ? "s" : ""} without a value:`),
      h("ul", { class: "plain" }, gaps.map((g) => h("li", { dataset: { series: g.key, batch: g.batch, status: g.status } },
        h("span", { class: `badge ${badgeClass(g.status)}` }, g.text), ` ${g.series} at batch ${g.batch}`,
        g.detail ? h("span", { class: "note-text" }, ` — ${describeDetail(g.status, g.detail, fmtBytes)}`) : null))));
  }

  // Per series a row; per batch size its latency and throughput, or one cell with the status.
  renderNumbers(scaling, stat) {
    const table = h("table", { class: "scaling-table", "aria-label": `${scaling.label}: ${stat} latency and throughput by batch size` },
      h("thead", null,
        h("tr", null, h("th", { scope: "col", rowspan: 2 }, "Build · runtime · mode"),
          scaling.batches.map((b) => h("th", { scope: "colgroup", colspan: 2, class: "gstart" }, `batch ${b}`))),
        h("tr", null, scaling.batches.map(() => [
          h("th", { scope: "col", class: "gstart" }, `${stat} latency (ms)`),
          h("th", { scope: "col" }, "samples/s")]))),
      h("tbody", null, scaling.series.map((s) => h("tr", { dataset: { series: s.key } },
        h("th", { scope: "row" }, s.label),
        s.points.map((p) => (p.latencyMs !== null
          ? [
            h("td", { class: "num gstart", dataset: { batch: p.batch, kind: "latency", status: p.status },
              title: p.ciLowMs !== null && p.ciHighMs !== null ? `95% CI of the ${stat} ${fmtMs(p.ciLowMs)}–${fmtMs(p.ciHighMs)} ms` : null },
            fmtMs(p.latencyMs)),
            h("td", { class: "num", dataset: { batch: p.batch, kind: "throughput", status: p.status } }, fmtThroughput(p.throughputPerS))]
          : h("td", { class: "status gstart", colspan: 2, dataset: { batch: p.batch, status: p.status },
            title: describeDetail(p.status, p.detail, fmtBytes) },
          h("span", { class: `badge ${badgeClass(p.status)}` }, p.text))))))));
    this.numbers.replaceChildren(table);
  }

  // Drawn in a later frame (the tables paint first), once near the viewport.
  schedule() {
    if (this.scheduled || this.unavailable) return;
    this.scheduled = true;
    requestAnimationFrame(() => setTimeout(async () => {
      const available = await loadCharts();
      this.scheduled = false;
      if (!this.el.isConnected || !this.spec) return;
      if (!available) {
        this.showUnavailable();
        return;
      }
      if (this.chart) {
        this.chart.update(this.spec);
      } else {
        this.canvas = h("canvas", { role: "img", "aria-label": this.spec.title });
        this.wrap.replaceChildren(this.canvas);
        this.chart = scalingChart(this.canvas, this.spec);
      }
      this.figure.dataset.drawn = "1";
    }, 0));
  }

  showUnavailable() {
    this.unavailable = true;
    this.figure.replaceWith(h("p", { class: "note charts-unavailable" },
      "Charts unavailable: vendor/chart.umd.js did not load (npm ci, then rebuild to copy chart.js). The numbers below have every value."));
    this.details.open = true;
  }

  destroy() {
    this.observer.disconnect();
    this.chart?.destroy();
    this.chart = null;
  }
}

// The chart of batchScaling(...): categorical batch sizes on x; per series a latency dataset
// (axis "latency"), a throughput dataset (axis "throughput") and, when some batch has no value,
// a marker dataset (axis "status", 0..1) with the status text of each gap. Pure.
export function scalingChartSpec(scaling, stat) {
  const dtype = scaling.dtype ?? "float32";
  const datasets = [];
  const markers = [];
  const latencyCount = scaling.series.length;
  scaling.series.forEach((s, i) => {
    const color = seriesColor(i, s.mode === "eager");
    const gaps = gapSummary(s);
    datasets.push({
      kind: "latency", series: s.label, color,
      label: `${s.label} · latency${gaps ? ` (no value: ${gaps})` : ""}`,
      data: s.points.map((p) => p.latencyMs),
    });
    datasets.push({
      kind: "throughput", series: s.label, color,
      label: `${s.label} · throughput`,
      data: s.points.map((p) => p.throughputPerS),
    });
    if (!gaps) return;
    // Stacked upwards by series, so that gaps of several series at one batch stay apart.
    const y = 0.04 + 0.08 * (i % Math.max(1, Math.min(latencyCount, 10)));
    markers.push({
      kind: "gap", series: s.label, color,
      label: `${s.label}: no value`,
      data: s.points.map((p) => (p.latencyMs === null ? y : null)),
      texts: s.points.map((p) => (p.latencyMs === null ? p.text : null)),
      statuses: s.points.map((p) => (p.latencyMs === null ? p.status : null)),
    });
  });
  return {
    title: `${scaling.label} · ${scaling.gpuLabel} · ${dtype}: ${stat} latency and throughput by batch size`,
    labels: scaling.batches.map(String),
    stat,
    datasets: [...datasets, ...markers],
  };
}

// Gap markers' status texts ("OOM") beside them, readable without a tooltip.
const gapLabelPlugin = {
  id: "bfScalingGaps",
  afterDatasetsDraw(chart) {
    const { ctx } = chart;
    chart.data.datasets.forEach((ds, i) => {
      if (ds.bfKind !== "gap" || !chart.isDatasetVisible(i)) return;
      const meta = chart.getDatasetMeta(i);
      ds.bfTexts.forEach((text, j) => {
        const el = meta.data[j];
        if (!text || !el || el.skip || !Number.isFinite(el.x)) return;
        ctx.save();
        ctx.font = `600 10px ${window.Chart.defaults.font.family || "sans-serif"}`;
        ctx.fillStyle = ds.bfStatuses[j] === "not_run" ? "#64748b" : "#7f1d1d";
        ctx.textBaseline = "middle";
        const w = ctx.measureText(text).width;
        const right = el.x + 9 + w <= chart.chartArea.right;
        ctx.textAlign = right ? "left" : "right";
        ctx.fillText(text, right ? el.x + 9 : el.x - 9, el.y);
        ctx.restore();
      });
    });
  },
};

function chartDataset(d) {
  const common = { label: d.label, data: d.data, borderColor: d.color, backgroundColor: d.color, bfKind: d.kind, bfSeries: d.series };
  if (d.kind === "latency") {
    return { ...common, yAxisID: "latency", borderWidth: 2, pointRadius: 3, pointHoverRadius: 5, spanGaps: false, tension: 0 };
  }
  if (d.kind === "throughput") {
    return { ...common, yAxisID: "throughput", borderWidth: 2, borderDash: [6, 4], pointStyle: "rectRot", pointRadius: 3, pointHoverRadius: 5, spanGaps: false, tension: 0 };
  }
  return {
    ...common, yAxisID: "status", showLine: false, borderWidth: 2, pointRadius: 7, pointHoverRadius: 8,
    pointStyle: d.statuses.map((s) => MARKER_STYLE[s] ?? "crossRot"),
    backgroundColor: d.statuses.map((s) => (s === "oom_implied" || s === "not_run" ? "#fff" : d.color)),
    bfTexts: d.texts, bfStatuses: d.statuses,
  };
}

// Narrow charts (phones) leave out the title (the canvas' label and the section say it) and
// shrink the legend, so that the plot keeps its height and legend entries their text.
const NARROW_PX = 520;
function fitWidth(options, width) {
  const narrow = width < NARROW_PX;
  options.plugins.title.display = !narrow;
  options.plugins.legend.labels.font = { size: narrow ? 10 : 12 };
  options.plugins.legend.labels.boxWidth = narrow ? 9 : 12;
}

function chartConfig(spec, width) {
  const base = lineChartOptions(spec.title);
  const config = {
    type: "line",
    data: { labels: spec.labels, datasets: spec.datasets.map(chartDataset) },
    options: {
      ...base,
      plugins: {
        ...base.plugins,
        legend: {
          position: "bottom",
          labels: { boxWidth: 12, boxHeight: 12, usePointStyle: true, filter: (item, data) => data.datasets[item.datasetIndex].bfKind !== "gap" },
        },
        tooltip: {
          callbacks: {
            title: (items) => `batch ${items[0]?.label ?? ""}`,
            label: (item) => {
              const ds = item.dataset;
              if (ds.bfKind === "latency") return `${ds.bfSeries}: ${fmtMs(item.raw)} ms`;
              if (ds.bfKind === "throughput") return `${ds.bfSeries}: ${fmtThroughput(item.raw)} samples/s`;
              return `${ds.bfSeries}: ${ds.bfTexts[item.dataIndex]} (no value)`;
            },
          },
        },
      },
      scales: {
        // Offset: the first and last batch sizes off the edges, with room for their gap labels.
        x: { offset: true, grid: { display: false }, title: { display: true, text: "batch size" } },
        latency: { type: "linear", axis: "y", position: "left", beginAtZero: true, grace: "5%", title: { display: true, text: `${spec.stat} latency (ms)` } },
        throughput: {
          type: "linear", axis: "y", position: "right", beginAtZero: true, grace: "5%", grid: { drawOnChartArea: false },
          title: { display: true, text: "throughput (samples/s)" },
        },
        // `axis` given: without a gap dataset nothing else tells chart.js this is a y axis.
        status: { axis: "y", display: false, min: 0, max: 1 },
      },
    },
    plugins: [gapLabelPlugin],
  };
  fitWidth(config.options, width);
  config.options.onResize = (chart, size) => fitWidth(chart.options, size.width);
  return config;
}

// The chart in `canvas`; update(spec) in place (live runs), no animation.
function scalingChart(canvas, spec) {
  setDefaults();
  const width = () => canvas.parentElement?.clientWidth ?? NARROW_PX;
  let chart = new window.Chart(canvas, chartConfig(spec, width()));
  return {
    update(next) {
      const cfg = chartConfig(next, width());
      const sameShape = cfg.data.datasets.length === chart.data.datasets.length &&
        cfg.data.labels.length === chart.data.labels.length &&
        cfg.data.datasets.every((d, i) => d.bfKind === chart.data.datasets[i].bfKind);
      if (!sameShape) {
        chart.destroy();
        chart = new window.Chart(canvas, cfg);
        return;
      }
      chart.data.labels = cfg.data.labels;
      cfg.data.datasets.forEach((d, i) => Object.assign(chart.data.datasets[i], d));
      chart.options.plugins.title.text = next.title;
      chart.options.scales.latency.title.text = cfg.options.scales.latency.title.text;
      chart.update("none");
    },
    destroy() { chart.destroy(); },
  };
}
