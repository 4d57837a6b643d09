// Bar charts with chart.js (the UMD build, global `Chart`, from vendor/chart.umd.js). The script
// is run on demand (loadCharts()), after the first tables are on screen; when it does not load,
// views say "charts unavailable" instead.
// A missing value (OOM, error, not run...) is never drawn as zero: it stays a gap, marked with a
// dashed, hatched slot and its label ("OOM") at the bar's place.
//
//   const chart = barChart(canvas, {labels, fullLabels, unit: "ms", datasets: [{label, data, gaps}]});
//   chart.update(nextSpec);   // in place (live runs), no animation
//   chart.destroy();

const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"];
const EAGER_PALETTE = ["#9aa5b1", "#6b7785", "#c3cad2", "#4b5563"];

// Calls `onNear` once, when `el` comes within 600 px of the viewport (charts are drawn only
// then, after the tables); returns the observer, for disconnect() when the view goes.
export function whenNearViewport(el, onNear) {
  const observer = new IntersectionObserver((entries) => {
    if (!entries.some((e) => e.isIntersecting)) return;
    observer.disconnect();
    onNear();
  }, { rootMargin: "600px 0px" });
  observer.observe(el);
  return observer;
}

// The options every line chart of the dashboard starts from: sized by its box, drawn without
// animation (live updates in place), a tooltip for all lines at the pointed x, and its title.
export function lineChartOptions(title) {
  return {
    responsive: true,
    maintainAspectRatio: false,
    animation: false,
    interaction: { mode: "index", intersect: false },
    plugins: { title: { display: true, text: title, font: { weight: "600", size: 13 } } },
  };
}

export function chartsAvailable() {
  return typeof window !== "undefined" && typeof window.Chart === "function";
}

let loading = null;
// Resolves to true once window.Chart exists, false when vendor/chart.umd.js cannot be loaded.
export function loadCharts() {
  if (chartsAvailable()) return Promise.resolve(true);
  if (!loading) {
    loading = new Promise((resolve) => {
      const script = document.createElement("script");
      script.src = new URL("vendor/chart.umd.js", document.baseURI).href;
      script.onload = () => resolve(chartsAvailable());
      script.onerror = () => resolve(false);
      document.head.append(script);
    });
  }
  return loading;
}

let defaultsSet = false;
// Fonts and colours of every chart (the bar charts here, the trend chart of trend_chart.js).
export function setDefaults() {
  if (defaultsSet) return;
  defaultsSet = true;
  const C = window.Chart;
  C.defaults.font.family = getComputedStyle(document.body).fontFamily;
  C.defaults.font.size = 12;
  C.defaults.color = "#334155";
  C.defaults.animation = false;
}

// Colours for a series: eager columns in greys, the others from the palette, stable per index.
export function seriesColor(index, isEager) {
  return isEager ? EAGER_PALETTE[index % EAGER_PALETTE.length] : PALETTE[index % PALETTE.length];
}

const gapPlugin = {
  id: "bfGaps",
  afterDatasetsDraw(chart) {
    const { ctx, chartArea, scales } = chart;
    const y = scales.y;
    if (!y || !chartArea) return;
    const base = Math.min(chartArea.bottom, Math.max(chartArea.top, y.getPixelForValue(0)));
    chart.data.datasets.forEach((ds, i) => {
      if (!ds.gaps || !chart.isDatasetVisible(i)) return;
      const meta = chart.getDatasetMeta(i);
      ds.gaps.forEach((label, j) => {
        if (!label) return;
        const el = meta.data[j];
        if (!el || !Number.isFinite(el.x)) return;
        const pending = label === "not run" || label === "unsupported";  // not failures: grey
        const w = Math.max(4, Math.min(el.width || 12, 28));
        const font = `600 10px ${window.Chart.defaults.font.family || "sans-serif"}`;
        ctx.save();
        ctx.font = font;
        const withText = w >= 8;
        const textW = withText ? ctx.measureText(label).width : 0;
        const height = Math.min(Math.max(textW + 10, 18), (base - chartArea.top) * 0.6);
        const left = el.x - w / 2;
        const top = base - height;
        ctx.beginPath();
        ctx.rect(left, top, w, height);
        ctx.clip();
        ctx.strokeStyle = pending ? "#94a3b8" : "#dc2626";
        ctx.globalAlpha = pending ? 0.25 : 0.3;
        ctx.lineWidth = 1;
        for (let k = -height; k < w + height; k += 5) {
          ctx.moveTo(left + k, base);
          ctx.lineTo(left + k + height, top);
        }
        ctx.stroke();
        ctx.restore();
        ctx.save();
        ctx.setLineDash([3, 2]);
        ctx.strokeStyle = pending ? "#94a3b8" : "#b91c1c";
        ctx.lineWidth = 1;
        ctx.strokeRect(left + 0.5, top + 0.5, w - 1, height - 1);
        if (withText && textW + 8 <= height + 1) {
          ctx.setLineDash([]);
          ctx.translate(el.x, base - 5);
          ctx.rotate(-Math.PI / 2);
          ctx.fillStyle = pending ? "#64748b" : "#7f1d1d";
          ctx.font = font;
          ctx.textBaseline = "middle";
          ctx.fillText(label, 0, 0);
        }
        ctx.restore();
      });
    });
  },
};

function config(spec) {
  const unit = spec.unit || "";
  return {
    type: "bar",
    data: {
      labels: spec.labels,
      datasets: spec.datasets.map((d) => ({
        label: d.label,
        data: d.data,
        gaps: d.gaps,
        backgroundColor: d.color,
        borderColor: d.color,
        borderWidth: 0,
        categoryPercentage: spec.categoryPercentage ?? 0.8,
        barPercentage: spec.barPercentage ?? 0.9,
      })),
    },
    options: {
      responsive: true,
      maintainAspectRatio: false,
      animation: false,
      normalized: true,
      plugins: {
        legend: { display: spec.datasets.length > 1, position: "bottom", labels: { boxWidth: 12, boxHeight: 12 } },
        title: { display: Boolean(spec.title), text: spec.title, font: { weight: "600", size: 13 } },
        tooltip: {
          callbacks: {
            title: (items) => (spec.fullLabels ? spec.fullLabels[items[0].dataIndex] : items[0].label),
            label: (item) => `${item.dataset.label}: ${formatValue(item.raw, unit)}`,
          },
        },
      },
      scales: {
        x: { ticks: { autoSkip: false, maxRotation: 60, minRotation: 0 }, grid: { display: false }, title: { display: Boolean(spec.xTitle), text: spec.xTitle } },
        y: { beginAtZero: true, title: { display: Boolean(spec.yTitle), text: spec.yTitle }, grace: "5%" },
      },
    },
    plugins: [gapPlugin],
  };
}

function formatValue(v, unit) {
  if (v === null || v === undefined) return "-";
  if (unit === "%") return `${v.toFixed(1)} %`;
  if (unit === "ms") return `${v.toFixed(3)} ms`;
  return unit ? `${v} ${unit}` : String(v);
}

export function barChart(canvas, spec) {
  setDefaults();
  let chart = new window.Chart(canvas, config(spec));
  return {
    chart,
    update(next) {
      const cfg = config(next);
      const sameShape = cfg.data.datasets.length === chart.data.datasets.length &&
        cfg.data.labels.length === chart.data.labels.length;
      if (!sameShape) {
        chart.destroy();
        chart = new window.Chart(canvas, cfg);
        this.chart = chart;
        return;
      }
      chart.data.labels = cfg.data.labels;
      cfg.data.datasets.forEach((d, i) => Object.assign(chart.data.datasets[i], d));
      chart.options.plugins.title.text = next.title;
      chart.options.plugins.tooltip.callbacks = cfg.options.plugins.tooltip.callbacks;
      chart.update("none");
    },
    destroy() { chart.destroy(); },
  };
}
