// Compare two sides, each a (run, torch build): two builds of one run (stable vs nightly) or
// two runs. For every GPU class x batch both sides have, a table per model with A's and B's
// latency per (runtime, mode) and the ratio A/B (above 1: B is faster) with the coordinator's
// verdict (GET /compare: the within-run CIs apart and the change beyond the run-to-run noise, as
// the CLI's compare), an A/A said, and A's cells that found no counterpart. Noise flags show on
// each side and on the ratio; flagged=exclude leaves flagged pairs out of the geomeans. A build a
// run lacks is the coordinator's error, shown as such.
//   #/compare?a=5:stable&b=5:nightly&gpu=a100&batch=1&stat=mean&flagged=exclude
import { h } from "../dom.js";
import { withParams, parseSide, formatSide, statOf, DEFAULT_STAT } from "../route.js";
import { badgeClass } from "../status.js";
import { gridNav } from "../grid_nav.js";
import { errorState, loadingState, emptyState } from "./states.js";
import { selectControl, statSwitch, copyButton, focusKey, restoreFocus } from "./controls.js";
import { cellTooltip, cellMarks, FLAG_LABELS } from "./report_table.js";

const VERDICT_TEXT = {
  same: "≈ no significant change",
  faster: "▲ faster",
  slower: "▼ slower",
  unknown: "",
  unavailable: "",
};

export class CompareView {
  constructor(ctx, root) {
    this.ctx = ctx;
    this.root = root;
    this.cache = new Map();  // "runs" -> the run list, "run/<id>" -> run
    this.seq = 0;
  }

  mount(route) {
    this.ctx.setTitle("Compare");
    this.route = route;
    this.form = h("div", { class: "compare-form" });
    this.body = h("div", { class: "compare-body" });
    this.root.append(h("h1", null, "Compare"), this.form, this.body);
    this.load();
  }

  update(route) {
    this.route = route;
    this.load();
  }

  reconnected() { this.cache.clear(); this.load(); }

  destroy() { this.seq = -1; this.destroyed = true; }

  async get(key, fetcher) {
    if (!this.cache.has(key)) {
      const p = fetcher();
      this.cache.set(key, p);
      p.catch(() => this.cache.delete(key));
    }
    return this.cache.get(key);
  }

  async load() {
    if (this.destroyed) return;
    const seq = ++this.seq;
    const { params } = this.route;
    // What has keyboard focus now, to give it back after the page is redrawn.
    const focus = { nav: document.activeElement?.dataset?.nav, control: focusKey(document.activeElement) };
    const stat = statOf(params);
    const a = parseSide(params.a);
    const b = parseSide(params.b);
    try {
      const runs = await this.get("runs", () => this.ctx.api.runs({ limit: 100 }));
      const [runA, runB] = await Promise.all([a && this.get(`run/${a.run}`, () => this.ctx.api.run(a.run)), b && this.get(`run/${b.run}`, () => this.ctx.api.run(b.run))]);
      if (seq !== this.seq) return;
      if (a && !a.build && runA) a.build = runA.torch_builds[0];
      if (b && !b.build && runB) b.build = runB.torch_builds[0];
      this.renderForm(runs.runs, a, b, runA, runB);
      if (!a || !b) {
        this.body.replaceChildren(emptyState("Pick two sides: two torch builds of one run, or two runs."));
        return;
      }
      if (!this.body.querySelector(".compare-table")) this.body.replaceChildren(loadingState("Loading the comparison…"));
      // Everything drawn is the coordinator's comparison: its tables pair the cells, its verdicts
      // judge them, its geomeans sum them up. A build a run lacks is its error ("run 1 has no
      // torch build \"stabel\"; its builds: stable, unstable"), shown instead of a page.
      const comparison = await this.ctx.api.compare(a, b, stat);
      if (seq !== this.seq) return;
      this.renderBody({ a, b, runA, runB, stat, comparison }, focus);
    } catch (e) {
      if (seq !== this.seq) return;
      this.body.replaceChildren(errorState(e));
    }
  }

  renderForm(runs, a, b, runA, runB) {
    const pick = (name, side) => this.ctx.navigate(withParams(this.route, { [name]: side ? formatSide(side) : undefined }));
    const side = (name, current, run) => {
      const runSelect = h("select", {
        name: `${name}-run`, "aria-label": `Side ${name.toUpperCase()} run`,
        on: { change: (e) => pick(name, e.target.value ? { run: Number(e.target.value), build: null } : null) },
      },
      h("option", { value: "" }, "run…"),
      runs.map((r) => h("option", { value: r.id, selected: current?.run === r.id }, `#${r.id} ${r.name}`)));
      if (current && !runs.some((r) => r.id === current.run)) {
        runSelect.append(h("option", { value: current.run, selected: true }, `#${current.run}${run ? ` ${run.name}` : ""}`));
      }
      const builds = run?.torch_builds ?? (current?.build ? [current.build] : []);
      const buildSelect = h("select", {
        name: `${name}-build`, "aria-label": `Side ${name.toUpperCase()} torch build`, disabled: !current,
        on: { change: (e) => pick(name, { run: current.run, build: e.target.value }) },
      }, builds.map((bn) => h("option", { value: bn, selected: current?.build === bn }, bn)));
      return h("fieldset", { class: "side" }, h("legend", null, `Side ${name.toUpperCase()}`), runSelect, buildSelect);
    };
    const focused = focusKey(document.activeElement);
    this.form.replaceChildren(h("div", { class: "toolbar" }, side("a", a, runA), side("b", b, runB),
      a && b ? h("a", { class: "btn", href: this.ctx.href(withParams(this.route, { a: formatSide(b), b: formatSide(a) })) }, "Swap A and B") : null));
    restoreFocus(this.form, focused);
  }

  renderBody({ a, b, runA, runB, stat, comparison }, focus) {
    const { params } = this.route;
    // The tables both sides have, by GPU class, batch and dtype.
    const both = comparison.tables;
    const nameA = `A: run ${a.run} · ${a.build}`;
    const nameB = `B: run ${b.run} · ${b.build}`;
    this.ctx.setTitle(`Compare ${formatSide(a)} vs ${formatSide(b)}`);
    // The torch each side's compared results recorded.
    const torchOf = (versions) => (versions.length ? ` (torch ${versions.join(", ")})` : "");
    const intro = h("p", { class: "meta" },
      h("a", { href: `#/runs/${a.run}` }, `A = run ${a.run} “${runA.name}”`), `, build ${a.build}${torchOf(comparison.torch_a)}; `,
      h("a", { href: `#/runs/${b.run}` }, `B = run ${b.run} “${runB.name}”`), `, build ${b.build}${torchOf(comparison.torch_b)}. `,
      `Ratio = A ${stat} latency / B ${stat} latency: above 1.00x B is faster. A change is significant when the 95% CIs of the ${stat} are apart and it is beyond the run-to-run noise: the spread of the cell's repetitions (fresh processes) where both sides have two or more, else the device's stated floor; otherwise “no significant change”. ⚑ marks a pair with a noisy side, ⏱ one stopped at its budget.`);
    const aa = comparison.aa ? h("p", { class: "aa-note", role: "note" }, `ℹ ${comparison.aa_text}.`) : null;
    // The comparison as a whole (the coordinator's verdict over the cells judged by repetitions).
    const o = comparison.overall;
    const overall = o
      ? h("p", { class: `overall v-${o.verdict}`, role: "note", title: o.why },
        `Overall (${o.cells} cells judged by repetitions): A/B ${o.ratio.toFixed(2)}x, 95% interval ${o.ratio_ci_low.toFixed(2)}–${o.ratio_ci_high.toFixed(2)}: `,
        VERDICT_TEXT[o.verdict] ? h("span", { class: `marker m-${o.verdict}` }, VERDICT_TEXT[o.verdict]) : o.verdict)
      : null;
    const coverage = h("div", { class: "compare-coverage" },
      overall,
      h("p", { class: "meta" }, `Compared ${comparison.compared} of A's ${comparison.expected} measured cells.`),
      comparison.uncompared.length
        ? h("details", null, h("summary", null, `${comparison.uncompared.length} of A's cells not compared`),
          h("ul", null, comparison.uncompared.map((u) => h("li", null, `${u.table} · ${u.label} · ${u.column}: ${u.why}`))))
        : null);
    if (!both.length) {
      this.body.replaceChildren(intro, coverage, emptyState(`Runs ${a.run} and ${b.run} have no GPU class × batch size in common.`));
      return;
    }
    const gpus = [...new Set(both.map((t) => t.gpu))];
    const gpu = gpus.includes(params.gpu) ? params.gpu : gpus[0];
    const ofGpu = both.filter((t) => t.gpu === gpu);
    const batches = [...new Set(ofGpu.map((t) => t.batch))];
    const batch = params.batch === "all" ? "all" : batches.includes(Number(params.batch)) ? Number(params.batch) : batches[0];
    const go = (changes) => this.ctx.navigate(withParams(this.route, changes));
    const toolbar = h("div", { class: "toolbar", role: "toolbar", "aria-label": "Compare options" },
      selectControl("GPU class", "gpu", gpus.map((g) => [g, both.find((t) => t.gpu === g).gpu_label]), gpu, (v) => go({ gpu: v, batch: undefined })),
      selectControl("Batch", "batch", [...batches.map((x) => [String(x), String(x)]), ["all", "all"]], String(batch), (v) => go({ batch: v })),
      statSwitch(stat, (v) => go({ stat: v === DEFAULT_STAT ? undefined : v })),
      h("label", { class: "control check", title: "Geomeans leave out pairs either side of which is flagged as noisy (high CV, clock drop, throttling, CI target missed)" },
        h("input", { type: "checkbox", name: "flagged", checked: params.flagged === "exclude", on: { change: (e) => go({ flagged: e.target.checked ? "exclude" : undefined }) } }),
        h("span", null, "Exclude flagged from geomeans")),
      copyButton("Copy link", () => location.href));
    const tables = (batch === "all" ? ofGpu : ofGpu.filter((t) => t.batch === batch))
      .map((t) => this.table(t, a, b, nameA, nameB, stat, params.flagged === "exclude", comparison));
    this.body.replaceChildren(intro, aa, toolbar, coverage, ...tables);
    if (focus.nav) this.body.querySelector(`[data-nav="${focus.nav}"]`)?.focus();
    restoreFocus(this.body, focus.control);
  }

  table(tA, a, b, nameA, nameB, stat, excludeFlagged, comparison) {
    const cmp = tA;
    const title = tA.title;
    // Torch versions differ by design (the intro names them); anything else that changes speed
    // makes the ratios a comparison of more than the builds: the coordinator's finding per table.
    const differences = (comparison.table_warnings ?? [])
      .filter((w) => w.gpu === tA.gpu && w.batch === tA.batch && w.dtype === (tA.dtype ?? "float32"))
      .map((w) => w.text);
    const warning = differences.length
      ? h("p", { class: "fingerprint-warning", role: "note" }, `⚠ A and B differ in what changes speed, not only in their torch: ${differences.join("; ")}`)
      : null;
    if (!cmp.columns.length) {
      return h("article", { class: "compare-table" }, h("h3", null, title),
        emptyState(`No (runtime, mode) measured by both ${a.build} and ${b.build} here.`));
    }
    // Each column's geomean of A/B as the coordinator computed it, over every pair or the unflagged.
    const geomeanText = (c) => {
      const value = excludeFlagged ? c.geomean_unflagged : c.geomean;
      const covered = excludeFlagged ? c.geomean_unflagged_covered : c.geomean_covered;
      const excluded = excludeFlagged && c.flagged ? `; ${c.flagged} flagged excluded` : "";
      return `Geomean B vs A ${c.mode}: ${value === null ? "-" : `${value.toFixed(2)}x`} (${covered}/${cmp.rows.length}${excluded})`;
    };
    const latencyCol = { kind: "latency_ms" };
    const side = (cell, key) => {
      if (!cell) return h("td", { class: "status", dataset: { nav: key, status: "missing" } }, h("span", { class: "badge b-not_run" }, "-"));
      if (cell.status === "ok") {
        const id = cell.result_ids[0];
        return h("td", { class: "num", title: cellTooltip(cell, latencyCol, stat), dataset: { nav: key, status: "ok", flags: (cell.flags ?? []).join(",") } },
          id ? h("a", { href: `#/results/${id}`, tabindex: -1 }, cell.text) : cell.text, cellMarks(cell));
      }
      return h("td", { class: "status", title: cellTooltip(cell, latencyCol, stat), dataset: { nav: key, status: cell.status } },
        h("span", { class: `badge ${badgeClass(cell.status)}` }, cell.text));
    };
    const table = h("table", { class: "report compare", "aria-label": `${title}: ${nameA} vs ${nameB}` },
      h("thead", null,
        h("tr", null, h("th", { scope: "col", rowspan: 2, class: "model-col" }, "Task/Model"),
          cmp.columns.map((c) => h("th", { scope: "colgroup", colspan: 3, class: "gstart" }, c.text))),
        h("tr", null, cmp.columns.map(() => [
          h("th", { scope: "col", class: "gstart" }, `${nameA} (ms)`),
          h("th", { scope: "col" }, `${nameB} (ms)`),
          h("th", { scope: "col" }, "A/B")]))),
      h("tbody", null, cmp.rows.map((row, r) => h("tr", { dataset: { model: row.model } },
        h("th", { scope: "row", dataset: { nav: `${tA.gpu}/${tA.batch}/${r}/h` } }, row.label),
        row.cells.map((c, i) => {
          const key = `${tA.gpu}/${tA.batch}/${r}/${i}`;
          const flagged = c.flags.length ? `; flagged: ${c.flags.map((f) => FLAG_LABELS[f] ?? f).join("; ")}` : "";
          const text = c.ratio === null ? "-" : `${c.ratio.toFixed(2)}x`;
          const ratioTitle = c.ratio === null ? "no ratio: a side has no value"
            : `A ${c.a.text} ms / B ${c.b.text} ms = ${c.ratio.toFixed(4)}; 95% CIs of the ${stat} A [${fmtCi(c.a)}] B [${fmtCi(c.b)}]${c.why ? `; ${c.why}` : ""}${flagged}`;
          return [
            side(c.a, `${key}/a`),
            side(c.b, `${key}/b`),
            h("td", { class: `ratio v-${c.verdict}`, title: ratioTitle, dataset: { nav: `${key}/r`, verdict: c.verdict, flags: c.flags.join(",") } },
              h("span", { class: "ratio-value" }, text),
              c.flags.length ? cellMarks({ flags: c.flags }) : null,
              VERDICT_TEXT[c.verdict] ? h("span", { class: `marker m-${c.verdict}` }, VERDICT_TEXT[c.verdict]) : null),
          ];
        })))));
    gridNav(table);
    return h("article", { class: "compare-table", dataset: { gpu: tA.gpu, batch: tA.batch } },
      h("h3", null, title),
      warning,
      h("div", { class: "table-scroll" }, table),
      h("ul", { class: "geomeans" }, cmp.columns.map((c) => h("li", null, geomeanText(c)))));
  }
}

function fmtCi(cell) {
  return cell.ci_low_ms === null || cell.ci_low_ms === undefined ? "-" : `${cell.ci_low_ms.toFixed(3)}, ${cell.ci_high_ms.toFixed(3)} ms`;
}
