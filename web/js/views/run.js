// One run: header with progress, the progress grid of all jobs, and the comparison tables
// (GPU class, dtype and batch selectors, mean/median, leaving flagged results out of geomeans,
// model filter, exports, compare links), then one model's latency and throughput by batch size.
// While the run is active it polls every 2 s and updates in place: what the user selected,
// focused or scrolled stays as it was.
import { h, fill, patch } from "../dom.js";
import { withParams, formatSide, DEFAULT_STAT, statOf } from "../route.js";
import { fmtTime, percent } from "../format.js";
import { badgeClass } from "../status.js";
import { ProgressGrid } from "./progress_grid.js";
import { ReportTableView } from "./report_table.js";
import { BatchScalingView } from "./batch_chart.js";
import { errorState, loadingState, emptyState } from "./states.js";
import { selectControl, statSwitch, copyButton, focusKey, restoreFocus } from "./controls.js";
import { Poller } from "../poll.js";

const POLL_MS = 2000;
const ACTIVE = new Set(["queued", "running"]);

export class RunView {
  constructor(ctx, root) {
    this.ctx = ctx;
    this.root = root;
    this.data = null;    // {run, jobs, jobsError, report, labels}
    this.poller = new Poller(POLL_MS, (current) => this.load(current));
    this.tableViews = new Map();  // "gpu/batch/dtype" -> ReportTableView
  }

  mount(route) {
    this.route = route;
    this.id = route.id;
    this.ctx.setTitle(`Run ${this.id}`);
    this.root.append(loadingState(`Loading run ${this.id}…`));
    this.poller.now();
  }

  update(route) {
    const reportChanged = this.stat(route) !== this.stat(this.route) ||
      this.excludeFlagged(route) !== this.excludeFlagged(this.route);
    this.route = route;
    if (!this.data) return;
    if (reportChanged) this.poller.now(); else this.render();
  }

  reconnected() { this.poller.now(); }

  destroy() {
    this.poller.stop();
    for (const v of this.tableViews.values()) v.destroy();
    this.scaling?.destroy();
  }

  stat(route = this.route) { return statOf(route.params); }
  excludeFlagged(route = this.route) { return route.params.flagged === "exclude"; }

  // Polls on while the run is active, and through errors until it has been shown (the banner
  // tells about an unreachable coordinator).
  async load(current) {
    const stat = this.stat();
    const started = performance.now();
    try {
      const [run, report, jobs, labels] = await Promise.all([
        this.ctx.api.run(this.id),
        this.ctx.api.report(this.id, stat, { excludeFlagged: this.excludeFlagged() }),
        this.ctx.api.jobs(this.id).then((j) => ({ jobs: j }), (e) => ({ error: e })),
        this.ctx.models().catch(() => new Map()),
      ]);
      if (!current()) return false;
      if (jobs.error?.unreachable) throw jobs.error;
      this.data = { run, report, jobs: jobs.jobs ?? null, jobsError: jobs.error ?? null, labels };
      const first = !this.skeleton;
      if (first) performance.mark("bf:run-data");
      this.render();
      if (first) {
        // First render = the frame that paints the header, grid and tables (charts follow).
        requestAnimationFrame(() => setTimeout(() => {
          performance.mark("bf:run-rendered");
          window.__benchfleet = { ...(window.__benchfleet || {}), runRenderMs: performance.now() - started, runRenderedAt: performance.now() };
        }, 0));
      }
      return ACTIVE.has(run.state);
    } catch (e) {
      if (!current()) return false;
      if (!this.data) {
        this.root.replaceChildren(errorState(e, h("p", null, h("a", { href: "#/runs" }, "Back to the runs"))));
        this.ctx.setTitle(e.status === 404 ? "Not found" : `Run ${this.id}`);
      }
      // Live runs keep polling through errors; the banner tells about an unreachable coordinator.
      return !this.data || ACTIVE.has(this.data.run.state) || Boolean(e.unreachable);
    }
  }

  // ---- rendering ------------------------------------------------------------------------------

  render() {
    if (!this.skeleton) this.buildSkeleton();
    const { run } = this.data;
    this.ctx.setTitle(`Run ${run.id}: ${run.name}`);
    this.renderHeader(run);
    this.renderGrid();
    if (!this.gridMarked) {
      performance.mark("bf:run-grid");  // first render only: the render-time test reads it
      this.gridMarked = true;
    }
    this.renderTables();
    this.renderScaling();
  }

  buildSkeleton() {
    const s = {};
    s.title = h("h1", { class: "run-title" });
    s.state = h("span", { class: "badge" });
    s.meta = h("p", { class: "meta" });
    s.bar = h("div", { class: "bar", role: "progressbar", "aria-valuemin": 0, "aria-valuemax": 100, "aria-label": "Finished jobs" }, h("span"));
    s.counts = h("p", { class: "counts" });
    s.gridBody = h("div");
    s.toolbar = h("div", { class: "toolbar", role: "toolbar", "aria-label": "Table options" });
    s.tables = h("div", { class: "tables" });
    s.capNote = h("p", { class: "note memory-cap", hidden: true });
    this.grid = new ProgressGrid({
      onToggleStatus: (status) => this.ctx.navigate(withParams(this.route, { status })),
      resultHref: (id) => `#/results/${id}`,
    });
    this.scaling = new BatchScalingView({ onSelect: (changes) => this.ctx.navigate(withParams(this.route, changes)) });
    this.root.replaceChildren(
      h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: "#/runs" }, "Runs"), " › ", `Run ${this.id}`),
      h("header", { class: "run-head" }, h("div", { class: "title-row" }, s.title, s.state), s.meta, s.bar, s.counts),
      h("section", { class: "panel", "aria-labelledby": "grid-heading" },
        h("h2", { id: "grid-heading" }, "Progress"), s.gridBody),
      h("section", { class: "panel", "aria-labelledby": "tables-heading" },
        h("h2", { id: "tables-heading" }, "Comparison tables"), s.toolbar, s.tables, s.capNote),
      this.scaling.el);
    this.skeleton = s;
  }

  renderHeader(run) {
    const s = this.skeleton;
    patch(s.title, { text: run.name });
    patch(s.state, { text: run.state, className: `badge run-state ${badgeClass(run.state)}` });
    const runtimes = run.matrix.runtimes?.join(", ") ?? "libtorch";
    patch(s.meta, {
      text: `Run ${run.id} · created ${fmtTime(run.created_at)}` +
        (run.finished_at ? ` · finished ${fmtTime(run.finished_at)}` : "") +
        ` · GPU classes ${run.gpus.join(", ")} · builds ${run.torch_builds.join(", ")} · ${runtimes}` +
        ` · ${run.matrix.models.length} models × batch ${run.matrix.batch_sizes.join("/")} × ${run.matrix.modes.join(", ")}`,
    });
    const pct = percent(run.finished_jobs, run.job_count);
    s.bar.setAttribute("aria-valuenow", String(pct));
    s.bar.firstChild.style.width = `${pct}%`;
    const jobs = Object.entries(run.jobs).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`).join(", ");
    const verdicts = Object.entries(run.results).filter(([, n]) => n > 0).map(([k, n]) => `${k} ${n}`).join(", ");
    patch(s.counts, {
      text: `${run.finished_jobs}/${run.job_count} jobs finished (${pct}%) · jobs: ${jobs || "none"} · verdicts: ${verdicts || "none yet"}` +
        (ACTIVE.has(run.state) ? " · live (updates every 2 s)" : ""),
    });
  }

  renderGrid() {
    const { jobs, jobsError, run, labels } = this.data;
    const body = this.skeleton.gridBody;
    if (!jobs) {
      if (!body.querySelector(".state")) {
        body.replaceChildren(errorState(`The progress grid needs GET /api/v1/runs/${run.id}/jobs: ${jobsError?.detail ?? "unavailable"}`));
      }
      return;
    }
    if (!body.contains(this.grid.el)) body.replaceChildren(this.grid.el);
    this.grid.render(jobs, run.matrix, labels, { status: this.route.params.status, q: this.route.params.q });
  }

  // The tables the selectors pick: one GPU class, one dtype, one batch or all of them.
  selection() {
    const tables = this.data.report.tables;
    const gpus = [...new Set(tables.map((t) => t.gpu))];
    const gpu = gpus.includes(this.route.params.gpu) ? this.route.params.gpu : gpus[0];
    const ofGpu = tables.filter((t) => t.gpu === gpu);
    const dtypes = [...new Set(ofGpu.map((t) => t.dtype ?? "float32"))];
    const dtype = dtypes.includes(this.route.params.dtype) ? this.route.params.dtype : dtypes[0];
    const ofDtype = ofGpu.filter((t) => (t.dtype ?? "float32") === dtype);
    const batches = ofDtype.map((t) => t.batch);
    const wanted = this.route.params.batch;
    const batch = wanted === "all" ? "all" : batches.includes(Number(wanted)) ? Number(wanted) : batches[0];
    const shown = batch === "all" ? ofDtype : ofDtype.filter((t) => t.batch === batch);
    return { gpus, gpu, dtypes, dtype, batches, batch, shown, labelOf: (g) => tables.find((t) => t.gpu === g)?.gpu_label ?? g };
  }

  renderTables() {
    const { report, run } = this.data;
    const s = this.skeleton;
    if (!report.tables.length) {
      s.toolbar.replaceChildren();
      s.tables.replaceChildren(emptyState("This run has no tables."));
      return;
    }
    const sel = this.selection();
    this.renderToolbar(sel, run);
    s.capNote.hidden = report.memory_cap_mb === null || report.memory_cap_mb === undefined;
    s.capNote.textContent = s.capNote.hidden ? "" : `Memory cap: ${report.memory_cap_mb} MB per job beyond its start-up ` +
      "(torch loaded), held as RAM by a memory cgroup where the agent could make one, else as address space; " +
      "peak memory is the job's peak RSS, start-up included. Each result names how its cap was held.";
    const keyOf = (t) => `${t.gpu}/${t.batch}/${t.dtype ?? "float32"}`;
    const keep = new Set(sel.shown.map(keyOf));
    for (const [key, view] of this.tableViews) {
      if (!keep.has(key)) { view.destroy(); view.el.remove(); this.tableViews.delete(key); }
    }
    sel.shown.forEach((table, i) => {
      const key = keyOf(table);
      let view = this.tableViews.get(key);
      if (!view) {
        view = new ReportTableView({
          resultHref: (id) => `#/results/${id}`,
          seriesHref: (params) => this.ctx.href({ view: "series", params }),
          eagerCharts: i === 0,
        });
        this.tableViews.set(key, view);
      }
      if (s.tables.children[i] !== view.el) s.tables.insertBefore(view.el, s.tables.children[i] ?? null);
      view.render(table, { q: this.route.params.q ?? "", stat: this.stat(), final: !ACTIVE.has(run.state) });
    });
  }

  // One model across the batch sizes of the GPU class and dtype the selectors pick (when that
  // pair has two or more; else another that has).
  renderScaling() {
    const { report } = this.data;
    const sel = report.tables.length ? this.selection() : {};
    this.scaling.render(report, { gpu: sel.gpu, dtype: sel.dtype, model: this.route.params.model, q: this.route.params.q ?? "", stat: this.stat() });
  }

  renderToolbar(sel, run) {
    const s = this.skeleton;
    const stat = this.stat();
    const excludeFlagged = this.excludeFlagged();
    const key = JSON.stringify([sel.gpus, sel.gpu, sel.dtypes, sel.dtype, sel.batches, sel.batch, stat, excludeFlagged, run.torch_builds]);
    if (s.toolbar.dataset.key === key) {
      const input = s.toolbar.querySelector("input[type=search]");
      if (input && document.activeElement !== input) input.value = this.route.params.q ?? "";
      return;
    }
    s.toolbar.dataset.key = key;
    const go = (changes) => this.ctx.navigate(withParams(this.route, changes));
    const focused = focusKey(document.activeElement);
    const filter = h("input", {
      type: "search", name: "q", placeholder: "Filter models", "aria-label": "Filter models",
      value: this.route.params.q ?? "",
      on: { input: (e) => this.ctx.navigate(withParams(this.route, { q: e.target.value }), { replace: true }) },
    });
    const exports = ["md", "csv", "json"].map((format) => h("a", {
      class: "btn", href: this.ctx.api.reportUrl(run.id, format, stat, { excludeFlagged }), download: `run-${run.id}-${stat}.${format}`,
      dataset: { export: format },
      on: {
        click: (e) => {
          if (!this.ctx.api.token) return;  // a plain download
          e.preventDefault();
          const flagged = excludeFlagged ? "&exclude_flagged=true" : "";
          this.ctx.api.download(`runs/${run.id}/report?format=${format}&stat=${stat}${flagged}`, `run-${run.id}-${stat}.${format}`).catch(() => {});
        },
      },
    }, { md: "Markdown", csv: "CSV", json: "JSON" }[format]));
    const builds = run.torch_builds;
    const compareParams = { gpu: sel.gpu, batch: sel.batch === "all" ? undefined : sel.batch, stat: stat === DEFAULT_STAT ? undefined : stat };
    const compareBuilds = builds.length >= 2
      ? h("a", {
        class: "btn", dataset: { compare: "builds" },
        href: this.ctx.href({ view: "compare", params: { a: formatSide({ run: run.id, build: builds[0] }), b: formatSide({ run: run.id, build: builds[1] }), ...compareParams } }),
      }, `Compare ${builds[0]} vs ${builds[1]}`)
      : null;
    const otherRun = h("input", { type: "number", min: 1, name: "other", "aria-label": "Other run id", placeholder: "run id", class: "narrow" });
    const compareRuns = h("form", {
      class: "inline-form",
      on: {
        submit: (e) => {
          e.preventDefault();
          const other = Number(otherRun.value);
          if (!other) return;
          this.ctx.navigate({ view: "compare", params: { a: formatSide({ run: run.id, build: builds[0] }), b: formatSide({ run: other, build: builds[0] }), ...compareParams } });
        },
      },
    }, h("label", null, "Compare with run ", otherRun), h("button", { type: "submit", class: "btn" }, "Go"));

    fill(s.toolbar,
      selectControl("GPU class", "gpu", sel.gpus.map((g) => [g, sel.labelOf(g)]), sel.gpu, (v) => go({ gpu: v, batch: undefined })),
      sel.dtypes.length > 1 ? selectControl("Dtype", "dtype", sel.dtypes.map((d) => [d, d]), sel.dtype, (v) => go({ dtype: v })) : null,
      selectControl("Batch", "batch", [...sel.batches.map((b) => [String(b), String(b)]), ["all", "all"]], String(sel.batch), (v) => go({ batch: v })),
      statSwitch(stat, (v) => go({ stat: v === DEFAULT_STAT ? undefined : v })),
      h("label", { class: "control check", title: "Geomeans leave out results flagged as noisy (high CV, clock drop, throttling, CI target missed)" },
        h("input", { type: "checkbox", name: "flagged", checked: excludeFlagged, on: { change: (e) => go({ flagged: e.target.checked ? "exclude" : undefined }) } }),
        h("span", null, "Exclude flagged from geomeans")),
      filter,
      h("span", { class: "group", role: "group", "aria-label": "Export" }, h("span", { class: "label" }, "Export"), exports),
      copyButton("Copy link", () => location.href),
      compareBuilds,
      compareRuns);
    restoreFocus(s.toolbar, focused);
  }
}
