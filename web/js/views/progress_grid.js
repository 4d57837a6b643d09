// The progress grid of a run: one square per job, a row per model and a column per
// (GPU class, batch, dtype, build, runtime, mode, repetition) in matrix order, coloured by job status
// and, once done, by verdict. Updated in place from fresh job lists, so focus, scroll and the
// status filter survive live polling.
//
//   const grid = new ProgressGrid({ onToggleStatus: (state) => ..., resultHref: (id) => "#/results/" + id });
//   container.append(grid.el);
//   grid.render(jobs, run.matrix, labels, { status: "oom", q: "vit" });
import { h, patch } from "../dom.js";
import { GRID_STATES, gridState, badgeClass } from "../status.js";
import { gridNav } from "../grid_nav.js";

export class ProgressGrid {
  constructor({ onToggleStatus, resultHref }) {
    this.onToggleStatus = onToggleStatus;
    this.resultHref = resultHref;
    this.legend = h("div", { class: "legend", role: "group", "aria-label": "Filter the grid by status" });
    this.detail = h("p", { class: "cell-detail", "aria-live": "polite" }, "Focus or point at a square for its job.");
    this.table = h("table", { class: "progress-grid", "aria-label": "Jobs of the run by model and matrix cell" });
    this.scroller = h("div", { class: "table-scroll" }, this.table);
    this.caption = h("p", { class: "note grid-caption" });
    this.el = h("div", { class: "progress" }, this.legend, this.caption, this.scroller, this.detail);
    this.signature = "";
    this.cells = new Map();  // job id -> td
    this.nav = gridNav(this.table, { onFocus: (cell) => this.showDetail(cell) });
    this.table.addEventListener("mouseover", (e) => {
      const cell = e.target.closest("td");
      if (cell) this.showDetail(cell);
    });
  }

  render(jobs, matrix, labels, { status, q }) {
    const layout = gridLayout(jobs, matrix);
    const signature = `${layout.columns.map((c) => c.key).join("|")}#${layout.models.join("|")}`;
    if (signature !== this.signature) {
      this.build(layout, labels);
      this.signature = signature;
    }
    const counts = new Map();
    for (const job of jobs) {
      const state = gridState(job);
      counts.set(state, (counts.get(state) || 0) + 1);
      const td = this.cells.get(job.id);
      if (!td) continue;
      const sq = td.firstChild;
      patch(td, { className: `${td.dataset.group ? "gstart " : ""}${status && status !== state ? "dim" : ""}`.trim() });
      td.dataset.state = state;
      td.dataset.title = describeJob(job, labels);
      td.title = td.dataset.title;
      patch(sq, { className: `sq ${badgeClass(state)}` });
      const href = job.result ? this.resultHref(job.result.id) : null;
      if (href && sq.getAttribute("href") !== href) sq.setAttribute("href", href);
      if (!href && sq.hasAttribute("href")) sq.removeAttribute("href");
    }
    const needle = (q || "").toLowerCase();
    for (const row of this.table.tBodies[0]?.rows ?? []) {
      row.hidden = Boolean(needle) && !row.dataset.search.includes(needle);
    }
    this.renderLegend(counts, status);
    this.nav.refresh();
    const focused = document.activeElement?.closest?.("td");
    if (focused && this.table.contains(focused)) this.showDetail(focused);
  }

  build(layout, labels) {
    this.cells.clear();
    const gpuRow = h("tr", null, h("th", { scope: "col", class: "corner", rowspan: 2 }, "Model"));
    const batchRow = h("tr");
    for (const g of groups(layout.columns, (c) => c.gpu)) {
      gpuRow.append(h("th", { scope: "colgroup", colspan: g.count, class: "gstart" }, g.value));
    }
    for (const g of groups(layout.columns, (c) => `${c.gpu}/${c.batch}`)) {
      batchRow.append(h("th", { scope: "colgroup", colspan: g.count, class: "gstart" }, `b${g.first.batch}`));
    }
    const body = h("tbody");
    for (const model of layout.models) {
      const label = labels.get(model)?.display_name ?? model;
      const tr = h("tr", { dataset: { model, search: `${label} ${model}`.toLowerCase() } },
        h("th", { scope: "row" }, label));
      layout.columns.forEach((col, i) => {
        const job = layout.byCell.get(`${model}#${col.key}`);
        const groupStart = i === 0 || layout.columns[i - 1].gpu !== col.gpu || layout.columns[i - 1].batch !== col.batch;
        const td = h("td", { dataset: groupStart ? { group: "1" } : {} }, h("a", { class: "sq", tabindex: -1 }));
        if (job) {
          td.dataset.job = job.id;
          this.cells.set(job.id, td);
        } else {
          td.dataset.state = "none";
        }
        tr.append(td);
      });
      body.append(tr);
    }
    this.table.replaceChildren(h("thead", null, gpuRow, batchRow), body);
    const first = layout.columns.filter((c) => c.gpu === layout.columns[0]?.gpu && c.batch === layout.columns[0]?.batch);
    const multi = (axis) => new Set(layout.columns.map((c) => c[axis])).size > 1;
    const name = (c) => [multi("dtype") && c.dtype, multi("build") && c.build, multi("runtime") && c.runtime, c.mode, multi("repetition") && `rep ${c.repetition}`].filter(Boolean).join(" ");
    patch(this.caption, { text: `Each square is a job; within each batch, left to right: ${first.map(name).join(", ")}. Done squares link to their result.` });
  }

  renderLegend(counts, active) {
    const items = GRID_STATES.filter((s) => counts.get(s) || s === active);
    const key = items.map((s) => `${s}:${counts.get(s) || 0}`).join(",") + `/${active || ""}`;
    if (this.legend.dataset.key === key) return;
    this.legend.dataset.key = key;
    const focused = document.activeElement?.dataset?.state;
    this.legend.replaceChildren(...items.map((s) => {
      const button = h("button", {
        type: "button", class: "legend-item", "aria-pressed": String(s === active), dataset: { state: s },
        title: s === active ? "Show every status" : `Show only ${s}`,
        on: { click: () => this.onToggleStatus(s === active ? null : s) },
      }, h("span", { class: `sq ${badgeClass(s)}`, "aria-hidden": "true" }), ` ${s.replace("_", " ")} `, h("b", null, String(counts.get(s) || 0)));
      return button;
    }));
    if (focused) this.legend.querySelector(`[data-state="${focused}"]`)?.focus();
  }

  showDetail(td) {
    const text = td.dataset.title || "";
    if (text) patch(this.detail, { text });
  }
}

// Rows (models), columns (everything else, matrix order) and the job of each cell.
export function gridLayout(jobs, matrix) {
  const order = (axis, value) => {
    const list = matrix[axis] || [];
    const i = list.indexOf(value);
    return i < 0 ? list.length : i;
  };
  const columns = new Map();
  const byCell = new Map();
  const models = new Set(matrix.models || []);
  for (const job of jobs) {
    const s = job.spec;
    const dtype = s.dtype ?? "float32";
    const key = `${s.gpu}/${s.batch}/${dtype}/${s.torch_build}/${s.runtime}/${s.mode}/${s.repetition ?? 0}`;
    if (!columns.has(key)) {
      columns.set(key, {
        key, gpu: s.gpu, batch: s.batch, dtype, build: s.torch_build, runtime: s.runtime, mode: s.mode, repetition: s.repetition ?? 0,
        rank: [order("gpus", s.gpu), order("batch_sizes", s.batch), order("dtypes", dtype), order("torch_builds", s.torch_build),
          order("runtimes", s.runtime), order("modes", s.mode), s.repetition ?? 0],
      });
    }
    models.add(s.model);
    byCell.set(`${s.model}#${key}`, job);
  }
  const sorted = [...columns.values()].sort((a, b) => {
    for (let i = 0; i < a.rank.length; i++) if (a.rank[i] !== b.rank[i]) return a.rank[i] - b.rank[i];
    return 0;
  });
  return { columns: sorted, models: [...models], byCell };
}

function groups(columns, keyOf) {
  const out = [];
  for (const c of columns) {
    const value = keyOf(c);
    if (out.length && out[out.length - 1].value === value) out[out.length - 1].count++;
    else out.push({ value, count: 1, first: c });
  }
  return out;
}

function describeJob(job, labels) {
  const s = job.spec;
  const label = labels.get(s.model)?.display_name ?? s.model;
  const rep = s.repetition ? ` rep ${s.repetition}` : "";
  let state = job.status;
  if (job.result) state += ` (${job.result.status}, result #${job.result.id})`;
  if (job.agent) state += ` on ${job.agent}${job.slot ? `/${job.slot}` : ""}`;
  if (job.attempt > 1) state += `, attempt ${job.attempt}`;
  const dtype = s.dtype && s.dtype !== "float32" ? ` · ${s.dtype}` : "";
  return `${label} · ${s.gpu} · batch ${s.batch}${dtype} · ${s.torch_build} · ${s.runtime} · ${s.mode}${rep}: ${state}`;
}
