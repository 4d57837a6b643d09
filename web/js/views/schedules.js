// Schedules: recurring matrices the coordinator runs when due (cron, UTC). Name, cron, state,
// next due time, the last run it created, runs and missed due times, a link to its build summary,
// with pause / resume and delete (operator token; delete asks to confirm with a second click).
// Refreshes every 30 s.
import { h, fill } from "../dom.js";
import { fmtTime, fmtUntil } from "../format.js";
import { gridNav, focusedCell, refocusCell } from "../grid_nav.js";
import { Poller } from "../poll.js";
import { errorState, loadingState, emptyState } from "./states.js";

const POLL_MS = 30000;
const CONFIRM_MS = 4000;

export class SchedulesView {
  constructor(ctx, root) {
    this.ctx = ctx;
    this.root = root;
    this.poller = new Poller(POLL_MS, (current) => this.load(current));
    this.shown = false;
    this.busy = 0;  // writes in flight: no refresh redraws the table under them
  }

  mount() {
    this.ctx.setTitle("Schedules");
    this.root.append(h("h1", null, "Schedules"),
      h("p", { class: "meta" }, "Recurring matrices: the coordinator creates each run when due, exactly once. ",
        "Of due times missed (coordinator down), only the latest gets a run; the others are counted as missed, as are those passing while paused."),
      this.body = h("div", null, loadingState()));
    this.poller.now();
  }

  reconnected() { this.poller.now(); }

  destroy() { this.poller.stop(); }

  // While a write is in flight nothing polls; the write loads again when it ends.
  async load(current) {
    if (this.busy) return false;
    try {
      const { schedules } = await this.ctx.api.schedules();
      if (!current()) return false;
      if (!this.busy) this.render(schedules);
    } catch (e) {
      if (!current()) return false;
      if (!this.shown) this.body.replaceChildren(errorState(e));
    }
    return true;
  }

  render(schedules) {
    this.shown = true;
    if (!schedules.length) {
      this.body.replaceChildren(emptyState("No schedules yet.",
        h("p", null, "Add one with the CLI: ", h("code", null, "benchfleet schedule add examples/cpu-compile-demo.yaml --cron '30 2 * * *'"))));
      return;
    }
    const focused = focusedCell("schedule");
    const table = h("table", { class: "schedules", "aria-label": "Schedules" },
      h("thead", null, h("tr", null, ["Schedule", "Cron (UTC)", "State", "Next due", "Last run", "Runs", "Missed", "Actions"]
        .map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", null, schedules.map((s) => this.row(s))));
    fill(this.body, h("p", { class: "meta" }, `${schedules.length} schedule${schedules.length === 1 ? "" : "s"} · ${schedules.filter((s) => s.enabled).length} enabled`),
      h("div", { class: "table-scroll" }, table));
    this.nav = gridNav(table);
    refocusCell(table, this.nav, focused);
  }

  row(s) {
    const m = s.matrix ?? {};
    const size = m.models ? `${m.models.length} models × batch ${(m.batch_sizes ?? []).join("/")} × ${(m.modes ?? []).join(", ")} · ${(m.gpus ?? []).join(", ")} · ${(m.torch_builds ?? []).join(", ")}` : "";
    const message = h("span", { class: "action-error", role: "alert" });
    const toggle = s.enabled ? ["pause", "Pause"] : ["resume", "Resume"];
    const del = h("button", { type: "button", class: "btn", dataset: { action: "delete" } }, "Delete");
    let armed = null;
    del.addEventListener("click", () => {
      if (!armed) {
        del.textContent = "Click again to delete";
        armed = setTimeout(() => { armed = null; del.textContent = "Delete"; }, CONFIRM_MS);
        return;
      }
      clearTimeout(armed);
      armed = null;
      this.act(s, "delete", del, message);
    });
    return h("tr", { dataset: { schedule: s.id, enabled: String(s.enabled) } },
      h("th", { scope: "row" }, h("b", null, s.name), ` #${s.id} · `,
        h("a", { class: "summary-link", href: `#/schedules/${s.id}/summary`, title: `Build summary of ${s.name}: speedup, pass rate, compile time and memory per run` }, "Summary"),
        size ? [h("br"), h("small", null, size)] : null),
      h("td", { class: "mono" }, s.cron),
      h("td", null, h("span", { class: `badge ${s.enabled ? "b-online" : "b-draining"}` }, s.enabled ? "enabled" : "paused")),
      h("td", { title: s.next_due_at ?? "" }, s.next_due_at ? [fmtTime(s.next_due_at), h("br"), h("small", null, fmtUntil(s.next_due_at))] : "— (paused)"),
      h("td", null, s.last_run_id ? [h("a", { href: `#/runs/${s.last_run_id}` }, `run #${s.last_run_id}`), h("br"), h("small", null, `due ${fmtTime(s.last_due_at)}`)] : "none yet"),
      h("td", { class: "num" }, String(s.runs)),
      h("td", { class: "num" }, String(s.missed)),
      h("td", { class: "actions" },
        h("button", { type: "button", class: "btn", dataset: { action: toggle[0] }, on: { click: (e) => this.act(s, toggle[0], e.target, message) } }, toggle[1]),
        " ", del, message));
  }

  async act(s, action, button, message) {
    for (const b of button.parentElement.querySelectorAll("button")) b.disabled = true;
    this.busy++;
    const verb = { pause: "Pausing", resume: "Resuming", delete: "Deleting" }[action];
    try {
      await this.ctx.write(() => (action === "delete" ? this.ctx.api.deleteSchedule(s.id) : this.ctx.api.scheduleAction(s.id, action)),
        `${verb} schedule ${s.id}`);
      message.textContent = "";
    } catch (e) {
      message.textContent = `${verb} failed: ${e.detail || e.message}`;
      for (const b of button.parentElement.querySelectorAll("button")) b.disabled = false;
      this.busy--;
      return;
    }
    this.busy--;
    this.poller.now();
  }
}
