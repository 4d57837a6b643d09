// Changes the detector confirmed, newest first: the series, before/after medians, ratio, p-value,
// the range to bisect (last good -> first bad torch version), when detected and the state, with
// acknowledge / resolve / reopen buttons (operator token) and an optional note sent with them.
// An action updates its row in place.
//   #/regressions?state=open|acknowledged|resolved|all&direction=regression|improvement|all&series=7&before=ID
import { h, fill } from "../dom.js";
import { withParams } from "../route.js";
import { fmtMs, fmtTime, fmtAgo } from "../format.js";
import { badgeClass } from "../status.js";
import { bisectRange, pValueText, ratioText, regressionActions, seriesLabel } from "../history.js";
import { gridNav } from "../grid_nav.js";
import { errorState, loadingState, emptyState } from "./states.js";
import { selectControl, focusKey, restoreFocus } from "./controls.js";

const PAGE = 100;
const STATES = ["open", "acknowledged", "resolved", "all"];
const DIRECTIONS = ["regression", "improvement", "all"];
const ACTION_VERB = { acknowledge: "Acknowledging", resolve: "Resolving", reopen: "Reopening" };

export class RegressionsView {
  constructor(ctx, root) {
    this.ctx = ctx;
    this.root = root;
    this.seq = 0;
    this.destroyed = false;
  }

  mount(route) {
    this.route = route;
    this.ctx.setTitle("Regressions");
    this.toolbar = h("div", { class: "toolbar", role: "toolbar", "aria-label": "Regression filters" });
    this.body = h("div", null, loadingState());
    this.root.append(h("h1", null, "Regressions"),
      h("p", { class: "meta" }, "Changes the detector confirmed on a series (a persistent shift of the median, tested on the raw samples). ",
        "The range to bisect runs from the last good torch version to the first bad one."),
      this.toolbar, this.body);
    this.load();
  }

  update(route) {
    this.route = route;
    this.load();
  }

  reconnected() { this.load(); }

  destroy() { this.destroyed = true; }

  filter() {
    const p = this.route.params;
    return {
      state: STATES.includes(p.state) ? p.state : "open",
      direction: DIRECTIONS.includes(p.direction) ? p.direction : "regression",
      series: /^\d+$/.test(p.series ?? "") ? Number(p.series) : undefined,
      before: /^\d+$/.test(p.before ?? "") ? Number(p.before) : undefined,
    };
  }

  async load() {
    const seq = ++this.seq;
    const filter = this.filter();
    this.renderToolbar(filter);
    try {
      const page = await this.ctx.api.regressions({ ...filter, limit: PAGE });
      if (this.destroyed || seq !== this.seq) return;
      this.render(page, filter);
    } catch (e) {
      if (this.destroyed || seq !== this.seq) return;
      this.body.replaceChildren(errorState(e));
    }
  }

  renderToolbar(filter) {
    const focused = focusKey(document.activeElement);
    const go = (changes) => this.ctx.navigate(withParams(this.route, { ...changes, before: undefined }));
    fill(this.toolbar,
      selectControl("State", "state", STATES.map((s) => [s, s]), filter.state, (v) => go({ state: v === "open" ? undefined : v })),
      selectControl("Direction", "direction", DIRECTIONS.map((d) => [d, d === "regression" ? "regressions (slower)" : d === "improvement" ? "improvements (faster)" : "all"]),
        filter.direction, (v) => go({ direction: v === "regression" ? undefined : v })),
      filter.series ? h("span", { class: "group" }, `Series ${filter.series} only · `,
        h("a", { href: this.ctx.href(withParams(this.route, { series: undefined, before: undefined })) }, "all series")) : null);
    restoreFocus(this.toolbar, focused);
  }

  render(page, filter) {
    if (!page.regressions.length) {
      const what = filter.state === "all" ? "" : `${filter.state} `;
      this.body.replaceChildren(emptyState(filter.before ? "No older changes." : `No ${what}${filter.direction === "all" ? "changes" : `${filter.direction}s`}.`,
        h("p", null, "The detector looks at every new point of a series; see ", h("a", { href: "#/schedules" }, "schedules"), " for nightly runs.")));
      return;
    }
    const table = h("table", { class: "regressions", "aria-label": "Regressions" },
      h("thead", null, h("tr", null, ["Series", "Before (ms)", "After (ms)", "Ratio", "p-value", "Range to bisect (last good → first bad)", "Detected", "State", "Actions"]
        .map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", null, page.regressions.map((r) => this.row(r))));
    const more = [];
    if (filter.before) more.push(h("a", { class: "btn", href: this.ctx.href(withParams(this.route, { before: undefined })) }, "Newest"));
    if (page.next_before) more.push(h("a", { class: "btn", href: this.ctx.href(withParams(this.route, { before: page.next_before })) }, "Older"));
    fill(this.body, h("div", { class: "table-scroll" }, table), more.length ? h("p", { class: "pager" }, more) : null);
    this.nav = gridNav(table);
  }

  row(r) {
    const range = bisectRange(r);
    const tr = h("tr", { dataset: { regression: r.id, state: r.state, direction: r.direction } });
    const status = h("td", { class: "state-cell" });
    const actions = h("td", { class: "actions" });
    const paint = (reg, message) => {
      tr.dataset.state = reg.state;
      fill(status, h("span", { class: `badge ${badgeClass(`reg_${reg.state}`)}` }, reg.state),
        reg.note ? h("small", { class: "note-text", title: reg.note }, h("br"), reg.note) : null,
        reg.acknowledged_at && reg.state === "acknowledged" ? h("small", null, h("br"), `since ${fmtTime(reg.acknowledged_at)}`) : null,
        reg.resolved_at && reg.state === "resolved" ? h("small", null, h("br"), `since ${fmtTime(reg.resolved_at)}`) : null);
      const note = h("input", { type: "text", name: "note", class: "note-input", placeholder: "note (optional)", "aria-label": `Note for regression ${reg.id}`, maxlength: 500 });
      fill(actions, note, h("br"), ...regressionActions(reg.state).map(([action, text]) => h("button", {
        type: "button", class: "btn", dataset: { action },
        on: { click: (e) => this.act(reg, action, e.target, tr, paint, note.value.trim()) },
      }, text)), message ? h("span", { class: "action-error", role: "alert" }, message) : null);
      this.nav?.refresh();
    };
    paint(r);
    const series = r.series;
    tr.append(
      h("th", { scope: "row" }, h("a", { href: `#/series/${r.series_id}` }, series.model),
        h("br"), h("small", null, seriesLabel(series).split(" · ").slice(1).join(" · ")),
        r.direction === "improvement" ? [h("br"), h("span", { class: "badge b-improvement" }, "improvement")] : null),
      h("td", { class: "num" }, fmtMs(r.before_median_ms)),
      h("td", { class: "num" }, fmtMs(r.after_median_ms)),
      h("td", { class: `num ratio ${r.direction === "regression" ? "slower" : "faster"}` }, ratioText(r.ratio)),
      h("td", { class: "num", title: `largest p-value of the ${r.confirm_runs} confirming run(s) against ${r.baseline_runs} baseline run(s)` }, pValueText(r.p_value)),
      h("td", { class: "bisect", dataset: { from: range.from ?? "", to: range.to } },
        r.last_good ? h("a", { href: `#/runs/${r.last_good.run_id}` }, range.from) : range.from ?? "(start of the series)",
        " → ",
        h("a", { href: `#/runs/${r.first_bad.run_id}` }, range.to)),
      h("td", { title: r.detected_at }, fmtTime(r.detected_at), h("br"), h("small", null, fmtAgo(r.detected_at))),
      status,
      actions);
    return tr;
  }

  async act(reg, action, button, tr, paint, note) {
    for (const b of button.parentElement.querySelectorAll("button")) b.disabled = true;
    try {
      const next = await this.ctx.write(() => this.ctx.api.regressionAction(reg.id, action, note || undefined), `${ACTION_VERB[action]} regression ${reg.id}`);
      if (this.destroyed) return;
      paint(next);
      tr.querySelector("button[data-action]")?.focus();
    } catch (e) {
      if (this.destroyed) return;
      paint(reg, `${ACTION_VERB[action]} failed: ${e.detail || e.message}`);
    }
  }
}
