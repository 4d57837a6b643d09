// The runs, newest first: name, state, progress, verdicts, GPU classes, builds, created.
// Refreshes every 5 s while a listed run is active. #/runs?before=ID shows older runs.
import { h, fill } from "../dom.js";
import { fmtTime, fmtAgo, percent } from "../format.js";
import { badgeClass } from "../status.js";
import { gridNav, focusedCell, refocusCell } from "../grid_nav.js";
import { Poller } from "../poll.js";
import { errorState, loadingState, emptyState } from "./states.js";

const PAGE = 50;
const POLL_MS = 5000;

export class RunsView {
  constructor(ctx, root) {
    this.ctx = ctx;
    this.root = root;
    this.poller = new Poller(POLL_MS, (current) => this.load(current));
    this.table = null;
  }

  mount(route) {
    this.route = route;
    this.ctx.setTitle("Runs");
    this.root.append(h("h1", null, "Runs"), this.body = h("div", null, loadingState()));
    this.poller.now();
  }

  update(route) {
    this.route = route;
    this.table = null;
    this.poller.now();
  }

  reconnected() { this.poller.now(); }

  destroy() { this.poller.stop(); }

  // Polls on while a listed run is active, and through errors once a table is shown.
  async load(current) {
    const before = Number(this.route.params.before) || undefined;
    try {
      const page = await this.ctx.api.runs({ limit: PAGE, before });
      if (!current()) return false;
      this.render(page, before);
      return page.runs.some((r) => r.state === "queued" || r.state === "running");
    } catch (e) {
      if (!current()) return false;
      if (!this.table) this.body.replaceChildren(errorState(e));
      return Boolean(e.unreachable || this.table);
    }
  }

  render(page, before) {
    if (!page.runs.length) {
      this.table = null;
      this.body.replaceChildren(emptyState(before ? "No older runs." : "No runs yet.",
        h("p", null, "Submit a matrix with the CLI: ", h("code", null, "benchfleet submit examples/cpu-compile-demo.yaml --wait"))));
      return;
    }
    const focused = focusedCell("run");
    const table = h("table", { class: "runs", "aria-label": "Runs" },
      h("thead", null, h("tr", null, ["Run", "Name", "State", "Progress", "Verdicts", "GPU classes", "Builds", "Created"]
        .map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", null, page.runs.map((run) => this.row(run))));
    const more = [];
    if (before) more.push(h("a", { class: "btn", href: "#/runs" }, "Newest runs"));
    if (page.next_before) more.push(h("a", { class: "btn", href: `#/runs?before=${page.next_before}` }, "Older runs"));
    fill(this.body, h("div", { class: "table-scroll" }, table), more.length ? h("p", { class: "pager" }, more) : null);
    refocusCell(table, gridNav(table), focused);
    this.table = table;
  }

  row(run) {
    const pct = percent(run.finished_jobs, run.job_count);
    const verdicts = Object.entries(run.results).filter(([, n]) => n > 0);
    return h("tr", { dataset: { run: run.id } },
      h("th", { scope: "row" }, h("a", { href: `#/runs/${run.id}` }, `#${run.id}`)),
      h("td", null, h("a", { href: `#/runs/${run.id}` }, run.name)),
      h("td", null, h("span", { class: `badge run-state ${badgeClass(run.state)}` }, run.state)),
      h("td", { class: "progress-cell" },
        h("div", { class: "bar small", role: "progressbar", "aria-valuenow": pct, "aria-valuemin": 0, "aria-valuemax": 100, "aria-label": `Run ${run.id} progress` },
          h("span", { style: `width:${pct}%` })),
        h("span", { class: "count" }, `${run.finished_jobs}/${run.job_count}`)),
      h("td", { class: "verdicts" }, verdicts.length
        ? verdicts.map(([k, n]) => h("span", { class: `badge ${badgeClass(k)}`, title: k }, `${k} ${n}`))
        : "-"),
      h("td", null, run.gpus.join(", ")),
      h("td", null, run.torch_builds.join(", ")),
      h("td", { title: run.created_at }, fmtTime(run.created_at), h("br"), h("small", null, fmtAgo(run.created_at))));
  }
}
