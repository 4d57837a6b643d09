// One result: the job it measured, every statistic, a histogram of the samples, the environment
// fingerprint and telemetry, memory, the OOM phase or error, and a command reproducing the cell.
import { h } from "../dom.js";
import { fmtMs, fmtBytes, fmtTime, fmtNumber, fmtCv, fmtTelemetry } from "../format.js";
import { badgeClass } from "../status.js";
import { histogram } from "../analysis.js";
import { barChart, loadCharts } from "../charts.js";
import { reproduceCommand } from "../reproduce.js";
import { errorState, loadingState } from "./states.js";
import { copyButton } from "./controls.js";

export class ResultView {
  constructor(ctx, root) {
    this.ctx = ctx;
    this.root = root;
    this.chart = null;
  }

  mount(route) {
    this.id = route.id;
    this.ctx.setTitle(`Result ${this.id}`);
    this.root.append(loadingState(`Loading result ${this.id}…`));
    this.load();
  }

  reconnected() { if (!this.loaded) this.load(); }

  destroy() {
    this.destroyed = true;
    this.chart?.destroy();
  }

  async load() {
    try {
      const row = await this.ctx.api.result(this.id);
      const [run, labels] = await Promise.all([
        this.ctx.api.run(row.run_id).catch(() => null),
        this.ctx.models().catch(() => new Map()),
      ]);
      if (this.destroyed) return;
      this.loaded = true;
      this.render(row, run, labels);
    } catch (e) {
      if (this.destroyed) return;
      this.root.replaceChildren(errorState(e, h("p", null, h("a", { href: "#/runs" }, "Back to the runs"))));
    }
  }

  render(row, run, labels) {
    const { job, result } = row;
    const label = labels.get(job.model)?.display_name ?? job.model;
    this.ctx.setTitle(`Result ${row.id}: ${label}`);
    const back = `#/runs/${row.run_id}?gpu=${encodeURIComponent(job.gpu)}&batch=${job.batch}`;
    const stats = result.stats;
    const sections = [
      h("nav", { class: "crumbs", "aria-label": "Breadcrumb" },
        h("a", { href: "#/runs" }, "Runs"), " › ", h("a", { href: back }, `Run ${row.run_id}${run ? `: ${run.name}` : ""}`), " › ", `Result ${row.id}`),
      h("header", { class: "run-head" },
        h("div", { class: "title-row" }, h("h1", null, `Result #${row.id}: ${label}`),
          h("span", { class: `badge ${badgeClass(result.status)}`, dataset: { status: result.status } }, result.status)),
        h("p", { class: "meta" }, `${job.model} · batch ${job.batch} · ${job.mode} · ${job.dtype ?? "float32"} · build ${job.torch_build} · ${job.gpu} · ${job.runtime}` +
          ` · repetition ${job.repetition ?? 0} · attempt ${row.attempt}` +
          (row.agent ? ` · agent ${row.agent}${row.slot ? `/${row.slot}` : ""}` : "") + ` · stored ${fmtTime(row.created_at)}`)),
      verdictSection(result),
      accuracySection(result.accuracy, row.flags ?? []),
      h("div", { class: "result-grid" },
        h("section", { class: "panel", "aria-labelledby": "stats-h" }, h("h2", { id: "stats-h" }, "Statistics"),
          stats ? keyValueTable("Statistics", [
            ["mean", `${fmtMs(stats.mean_ms)} ms`], ["median", `${fmtMs(stats.median_ms)} ms`],
            ["p90", `${fmtMs(stats.p90_ms)} ms`], ["p99", `${fmtMs(stats.p99_ms)} ms`],
            ["min", `${fmtMs(stats.min_ms)} ms`], ["max", `${fmtMs(stats.max_ms)} ms`],
            ["stddev", `${fmtMs(stats.stddev_ms)} ms`], ["cv", fmtCv(stats.cv)],
            ["95% CI of the median", `${fmtMs(stats.ci_low_ms)} – ${fmtMs(stats.ci_high_ms)} ms`],
            ["iterations", String(stats.iterations)],
            ["first call", result.first_call_ms === null || result.first_call_ms === undefined ? "-" : `${fmtMs(result.first_call_ms)} ms`],
            ["stop reason", result.stop_reason ?? "-"],
            ["export", result.export_s === null || result.export_s === undefined ? "-" : `${fmtNumber(result.export_s, 2)} s`],
            ["load", result.load_s === null || result.load_s === undefined ? "-" : `${fmtNumber(result.load_s, 3)} s`],
          ], "stats") : h("p", { class: "note" }, `No statistics: the verdict is ${result.status}.`)),
        this.histogramSection(result.samples_ms || []),
      ),
      h("div", { class: "result-grid" },
        memorySection(result.memory),
        h("section", { class: "panel", "aria-labelledby": "env-h" }, h("h2", { id: "env-h" }, "Environment fingerprint"),
          flatTable("Environment fingerprint", result.environment, "environment")),
        h("section", { class: "panel", "aria-labelledby": "tel-h" }, h("h2", { id: "tel-h" }, "Telemetry"),
          telemetryTable(result.telemetry)),
      ),
      this.reproduceSection(row, run),
    ];
    this.root.replaceChildren(...sections.filter(Boolean));
    this.drawHistogram(result.samples_ms || []);
  }

  histogramSection(samples) {
    const body = samples.length === 0
      ? h("p", { class: "note" }, "No samples.")
      : h("div", { class: "chart-wrap" }, this.canvas = h("canvas", { role: "img", "aria-label": `Histogram of ${samples.length} samples` }));
    return h("section", { class: "panel histogram", "aria-labelledby": "hist-h" },
      h("h2", { id: "hist-h" }, `Samples (${samples.length})`), body,
      samples.length ? h("details", null, h("summary", null, "All samples (ms)"),
        h("p", { class: "samples mono" }, samples.map((v) => v.toFixed(3)).join(" "))) : null);
  }

  async drawHistogram(samples) {
    if (!this.canvas || !samples.length) return;
    if (!(await loadCharts())) {
      this.canvas.parentElement.replaceWith(h("p", { class: "note charts-unavailable" },
        "Charts unavailable: vendor/chart.umd.js did not load. Every sample is listed below."));
      return;
    }
    if (this.destroyed || !this.canvas.isConnected) return;
    const { edges, counts } = histogram(samples);
    const labels = counts.map((_, i) => `${edges[i].toFixed(3)}–${edges[i + 1].toFixed(3)}`);
    this.chart = barChart(this.canvas, {
      title: `Histogram of ${samples.length} samples (${counts.length} bins)`,
      labels, unit: "", xTitle: "latency (ms)", yTitle: "iterations",
      categoryPercentage: 1, barPercentage: 0.95,
      datasets: [{ label: "iterations", data: counts, color: "#4e79a7" }],
    });
    this.canvas.dataset.bins = String(counts.length);
    this.canvas.dataset.total = String(counts.reduce((a, b) => a + b, 0));
  }

  reproduceSection(row, run) {
    if (!run) return null;
    const command = reproduceCommand(row.job, run.matrix, { url: location.origin, runId: row.run_id, resultId: row.id });
    return h("section", { class: "panel", "aria-labelledby": "repro-h" },
      h("h2", { id: "repro-h" }, "Reproduce this cell"),
      h("p", { class: "note" }, "A one-cell matrix with the run's measurement settings, submitted with the CLI (needs the operator token: BENCHFLEET_OPERATOR_TOKEN or BENCHFLEET_OPERATOR_TOKEN_FILE)."),
      h("pre", { class: "command", tabindex: 0 }, h("code", null, command)),
      copyButton("Copy command", () => command, { "data-copy": "command" }));
  }
}

function verdictSection(result) {
  const items = [];
  if (result.oom) {
    const b = result.oom.bytes_requested;
    items.push(h("p", { class: "oom-info" }, `Out of memory in phase ${result.oom.phase}` +
      (b === null || b === undefined ? " (bytes requested unknown)" : `; ${b} bytes (${fmtBytes(b)}) requested`)));
  }
  if (result.signal !== null && result.signal !== undefined) items.push(h("p", null, `Signal ${result.signal}`));
  if (result.error) items.push(h("pre", { class: "error-text" }, result.error));
  if (!items.length) return null;
  return h("section", { class: "panel verdict", "aria-labelledby": "verdict-h" }, h("h2", { id: "verdict-h" }, "Verdict"), ...items);
}

// The accuracy verdict of a compiled result (docs/design.md §11) and the noise flags the
// coordinator set (common/noise_flags.h).
function accuracySection(accuracy, flags) {
  if (!accuracy && !flags.length) return null;
  const rows = [];
  if (accuracy) {
    rows.push(["verdict", accuracy.verdict]);
    if (accuracy.verdict !== "unchecked" && accuracy.verdict !== "eager_nondeterministic") {
      rows.push(["compiled error (relative L2 vs float64)", accuracy.compiled_error.toExponential(3)]);
      rows.push(["eager error (same dtype)", accuracy.eager_error.toExponential(3)]);
      rows.push(["tolerance", accuracy.tolerance.toExponential(3)]);
      if (accuracy.cosine !== undefined && accuracy.cosine !== null) rows.push(["cosine similarity", accuracy.cosine.toFixed(6)]);
      if (accuracy.output) rows.push(["output", accuracy.output]);
    }
    if (accuracy.detail) rows.push(["detail", accuracy.detail]);
  }
  if (flags.length) rows.push(["noise flags", flags.join(", ")]);
  return h("section", { class: "panel accuracy", "aria-labelledby": "acc-h" },
    h("h2", { id: "acc-h" }, "Accuracy and noise",
      accuracy ? h("span", { class: `badge acc b-${accuracy.verdict}`, dataset: { accuracy: accuracy.verdict } }, accuracy.verdict) : null),
    keyValueTable("Accuracy and noise", rows, "accuracy"));
}

// How each kind of memory cap reads on the page (MemoryInfo.cap in the OpenAPI document).
const CAP_MEANING = {
  "cgroup-v1": "RAM the job's processes may add after start-up (the agent's memory cgroup, v1)",
  "cgroup-v2": "RAM the job's processes may add after start-up (the agent's memory cgroup, v2)",
  "address-space": "address space the job may add after start-up (RLIMIT_AS: no memory cgroup on this agent)",
  "cuda-allocator": "the CUDA caching allocator's share of the card",
};

function memorySection(memory) {
  if (!memory) return null;
  const rows = [["peak allocated", memory.peak_allocated_bytes], ["peak reserved", memory.peak_reserved_bytes], ["peak RSS", memory.peak_rss_bytes],
    ["peak beyond start-up", memory.peak_growth_bytes]]
    .filter(([, v]) => v !== null && v !== undefined)
    .map(([k, v]) => [k, `${fmtBytes(v)} (${v} bytes)`]);
  if (memory.cap) rows.push(["cap", `${fmtBytes(memory.cap_bytes)}: ${CAP_MEANING[memory.cap] || memory.cap}`]);
  if (!rows.length) return null;
  return h("section", { class: "panel", "aria-labelledby": "mem-h" }, h("h2", { id: "mem-h" }, "Memory"), keyValueTable("Memory", rows, "memory"));
}

function flatTable(caption, map, name) {
  const entries = Object.entries(map || {});
  if (!entries.length) return h("p", { class: "note" }, "Nothing recorded.");
  return keyValueTable(caption, entries.map(([k, v]) => [k, v === null ? "null" : String(v)]), name);
}

// Telemetry with units ("74.35 s", "1,410 MHz"), the value as recorded in each cell's tooltip.
function telemetryTable(map) {
  const entries = Object.entries(map || {});
  if (!entries.length) return h("p", { class: "note" }, "Nothing recorded.");
  return keyValueTable("Telemetry", entries.map(([k, v]) => [k, fmtTelemetry(k, v), v === null ? "null" : String(v)]), "telemetry");
}

// Rows [key, value shown, tooltip?].
function keyValueTable(caption, rows, name) {
  return h("div", { class: "table-scroll" }, h("table", { class: "kv", dataset: { table: name }, "aria-label": caption },
    h("tbody", null, rows.map(([k, v, title]) => h("tr", null, h("th", { scope: "row" }, k),
      h("td", { class: "mono", title: title !== undefined && title !== v ? title : null }, v))))));
}
