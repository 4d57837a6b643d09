// The trend chart of a series (chart.js, global `Chart`, loaded by charts.js's loadCharts()):
// points in series order (torch version, then time) on the x axis; the median of each ok point
// as a line (broken where a point has no value) with its 95% CI as a band; points without a
// value (OOM, error, timeout, crash) as distinct markers at the bottom (OOM) or top (failures)
// of the plot, never as zeros; where a confirmed change starts, a dashed vertical line between
// the last good and the first bad point, and the first bad point highlighted. The tooltip is an
// HTML element (readable, testable) showing the torch version (+ short git hash), median, CI and
// run of the point under the pointer.
//
//   const chart = trendChart(canvas, tooltipEl, trendModel(points, regressions));
//   chart.destroy();

import { setDefaults } from "./charts.js";

const MEDIAN_COLOR = "#2563eb";
const BAND_COLOR = "rgba(37, 99, 235, 0.16)";
const REGRESSION_COLOR = "#dc2626";
const IMPROVEMENT_COLOR = "#16a34a";

const changeColor = (direction) => (direction === "improvement" ? IMPROVEMENT_COLOR : REGRESSION_COLOR);

// Dashed vertical lines where changes start, labelled with their ratio.
const changePlugin = {
  id: "bfChanges",
  afterDatasetsDraw(chart) {
    const { ctx, chartArea, scales } = chart;
    const changes = chart.config.options.plugins.bfChanges?.changes ?? [];
    if (!chartArea || !scales.x) return;
    for (const c of changes) {
      const bad = scales.x.getPixelForValue(c.index);
      const good = c.lastGoodIndex !== null ? scales.x.getPixelForValue(c.lastGoodIndex) : null;
      const x = good !== null ? (good + bad) / 2 : bad;
      ctx.save();
      ctx.strokeStyle = changeColor(c.regression.direction);
      ctx.setLineDash([5, 4]);
      ctx.lineWidth = 1.5;
      ctx.beginPath();
      ctx.moveTo(x, chartArea.top);
      ctx.lineTo(x, chartArea.bottom);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = changeColor(c.regression.direction);
      ctx.font = `600 11px ${window.Chart.defaults.font.family || "sans-serif"}`;
      ctx.textBaseline = "top";
      const text = `×${c.regression.ratio.toFixed(2)}`;
      const w = ctx.measureText(text).width;
      ctx.fillText(text, Math.min(x + 4, chartArea.right - w), chartArea.top + 2);
      ctx.restore();
    }
  },
};

function config(model) {
  const n = model.labels.length;
  const missingAt = new Map(model.missing.map((m) => [m.index, m]));
  const changeAt = new Map(model.changes.map((c) => [c.index, c]));
  const missingData = model.labels.map((_, i) => {
    const m = missingAt.get(i);
    return m ? (m.at === "bottom" ? 0.04 : 0.96) : null;
  });
  const pick = (i, key, fallback) => missingAt.get(i)?.[key] ?? fallback;
  return {
    type: "line",
    data: {
      labels: model.labels,
      datasets: [
        {
          label: "CI low", data: model.ciLow, borderWidth: 0, pointRadius: 0, pointHoverRadius: 0, fill: false,
          spanGaps: false, bfHidden: true,
        },
        {
          label: "95% CI of the median", data: model.ciHigh, borderWidth: 0, pointRadius: 0, pointHoverRadius: 0,
          backgroundColor: BAND_COLOR, borderColor: BAND_COLOR, fill: "-1", spanGaps: false,
        },
        {
          label: "median (ms)", data: model.median, borderColor: MEDIAN_COLOR, backgroundColor: MEDIAN_COLOR,
          borderWidth: 2, spanGaps: false, fill: false, tension: 0,
          pointRadius: model.labels.map((_, i) => (changeAt.has(i) ? 6 : n > 120 ? 1.5 : 3)),
          pointStyle: model.labels.map((_, i) => (changeAt.has(i) ? "rectRot" : "circle")),
          pointBackgroundColor: model.labels.map((_, i) => (changeAt.has(i) ? changeColor(changeAt.get(i).regression.direction) : MEDIAN_COLOR)),
        },
        {
          label: "no value (OOM bottom; error, timeout, crash top)", data: missingData, yAxisID: "status",
          showLine: false, borderWidth: 1.5, pointRadius: 7, pointHoverRadius: 8,
          pointStyle: model.labels.map((_, i) => pick(i, "pointStyle", "circle")),
          borderColor: model.labels.map((_, i) => pick(i, "color", "#64748b")),
          backgroundColor: model.labels.map((_, i) => pick(i, "color", "#64748b")),
          hidden: model.missing.length === 0,
        },
        {
          label: "first bad point of a change", data: model.labels.map((_, i) => (changeAt.has(i) ? model.median[i] : null)),
          showLine: false, pointStyle: "rectRot", pointRadius: 10, pointHoverRadius: 10, borderWidth: 2,
          borderColor: REGRESSION_COLOR, backgroundColor: "rgba(220, 38, 38, 0.12)",
          hidden: model.changes.length === 0,
        },
      ],
    },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      normalized: true,
      interaction: { mode: "index", intersect: false },
      plugins: {
        legend: {
          position: "bottom",
          labels: { boxWidth: 12, boxHeight: 12, usePointStyle: true, filter: (item, data) => !data.datasets[item.datasetIndex].bfHidden && !data.datasets[item.datasetIndex].hidden },
        },
        tooltip: { enabled: false },
        bfChanges: { changes: model.changes },
      },
      scales: {
        x: {
          grid: { display: false },
          title: { display: true, text: "torch version (git), in series order" },
          // Narrow charts drop the git hash from the axis (the tooltip keeps it).
          ticks: {
            autoSkip: true, maxRotation: 60, minRotation: 0,
            callback(value) {
              const label = this.getLabelForValue(value);
              return this.chart.width < 640 ? label.replace(/ \([^)]*\)$/, "") : label;
            },
          },
        },
        y: { beginAtZero: false, grace: "10%", title: { display: true, text: "median latency (ms)" } },
        status: { display: false, min: 0, max: 1 },
      },
    },
    plugins: [changePlugin],
  };
}

// Draws the chart into `canvas`; `tooltip` is an element (position: absolute, inside the
// canvas' positioned parent) that shows the hovered point.
export function trendChart(canvas, tooltip, model) {
  setDefaults();
  const cfg = config(model);
  cfg.options.plugins.tooltip.external = ({ chart, tooltip: tip }) => {
    if (tip.opacity === 0 || !tip.dataPoints?.length) {
      tooltip.hidden = true;
      delete tooltip.dataset.index;
      return;
    }
    const index = tip.dataPoints[0].dataIndex;
    const info = model.tooltips[index];
    if (tooltip.dataset.index !== String(index)) {
      tooltip.dataset.index = String(index);
      const head = document.createElement("strong");
      head.textContent = info.title;
      tooltip.replaceChildren(head, ...info.lines.map((line) => {
        const div = document.createElement("div");
        div.textContent = line;
        return div;
      }));
    }
    tooltip.hidden = false;
    const x = chart.scales.x.getPixelForValue(index);
    const left = Math.max(0, Math.min(x + 12, chart.width - tooltip.offsetWidth - 4));
    tooltip.style.left = `${left}px`;
    tooltip.style.top = `${Math.max(0, chart.chartArea.top)}px`;
  };
  const chart = new window.Chart(canvas, cfg);
  return { chart, destroy() { chart.destroy(); } };
}
