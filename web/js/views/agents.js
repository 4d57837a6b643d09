// The fleet: every agent with its slots (GPU name, class, memory), torch builds, last seen,
// current jobs and whether it is online or draining. Refreshes every 5 s.
import { h } from "../dom.js";
import { fmtAgo, fmtTime, fmtMegabytes } from "../format.js";
import { gridNav, focusedCell, refocusCell } from "../grid_nav.js";
import { Poller } from "../poll.js";
import { errorState, loadingState, emptyState } from "./states.js";

const POLL_MS = 5000;

export class AgentsView {
  constructor(ctx, root) {
    this.ctx = ctx;
    this.root = root;
    this.poller = new Poller(POLL_MS, (current) => this.load(current));
    this.shown = false;
  }

  mount() {
    this.ctx.setTitle("Agents");
    this.root.append(h("h1", null, "Agents"), this.body = h("div", null, loadingState()));
    this.poller.now();
  }

  reconnected() { this.poller.now(); }

  destroy() { this.poller.stop(); }

  async load(current) {
    try {
      const { agents } = await this.ctx.api.agents();
      if (!current()) return false;
      this.render(agents);
    } catch (e) {
      if (!current()) return false;
      if (!this.shown) this.body.replaceChildren(errorState(e));
    }
    return true;
  }

  render(agents) {
    this.shown = true;
    if (!agents.length) {
      this.body.replaceChildren(emptyState("No agent has enrolled yet.",
        h("p", null, "Start one on a GPU host: ", h("code", null, "BENCHFLEET_ENROLLMENT_TOKEN=… benchfleet-agent --coordinator URL"))));
      return;
    }
    const focused = focusedCell("agent");
    const table = h("table", { class: "agents", "aria-label": "Agents" },
      h("thead", null, h("tr", null, ["Agent", "State", "Slots", "Torch builds", "Last seen", "Current jobs"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", null, agents.map((a) => this.row(a))));
    this.body.replaceChildren(h("p", { class: "meta" }, `${agents.length} agents · ${agents.filter((a) => a.online).length} online`),
      h("div", { class: "table-scroll" }, table));
    refocusCell(table, gridNav(table), focused);
  }

  row(a) {
    const slots = h("ul", { class: "plain" }, a.slots.map((s) => h("li", { dataset: { slot: s.id } },
      h("b", null, s.id), ` · ${s.gpu_class}`,
      s.gpu ? ` · ${s.gpu.name} · ${fmtMegabytes(s.gpu.memory_mb)}` : " · CPU",
      s.memory_limit_mb ? ` · capped ${fmtMegabytes(s.memory_limit_mb)}` : "")));
    const builds = h("ul", { class: "plain" }, a.torch_builds.map((b) => h("li", null,
      h("b", null, b.name), b.version ? ` ${b.version}` : "",
      h("small", null, ` (${b.runtimes.map((r) => `${r.runtime}: ${r.modes.join(", ")}`).join("; ")})`))));
    const jobs = a.leases.length
      ? h("ul", { class: "plain" }, a.leases.map((l) => h("li", null, `${l.slot}: `,
        h("a", { href: `#/runs/${l.run_id}?gpu=${encodeURIComponent(l.job.gpu)}&batch=${l.job.batch}` }, `run ${l.run_id} job ${l.job_id}`),
        ` ${l.job.model} b${l.job.batch} ${l.job.mode} ${l.job.torch_build} ${l.job.runtime} (${l.status})`)))
      : "idle";
    return h("tr", { dataset: { agent: a.name } },
      h("th", { scope: "row" }, a.name, h("br"), h("small", null, `${a.hostname}${a.version ? ` · agent ${a.version}` : ""}`)),
      h("td", null,
        h("span", { class: `badge ${a.online ? "b-online" : "b-offline"}` }, a.online ? "online" : "offline"),
        a.draining ? [" ", h("span", { class: "badge b-draining" }, "draining")] : null),
      h("td", null, slots),
      h("td", null, builds),
      h("td", { title: fmtTime(a.last_seen_at), dataset: { lastSeen: a.last_seen_at } }, fmtAgo(a.last_seen_at), h("br"), h("small", null, fmtTime(a.last_seen_at))),
      h("td", { class: "jobs" }, jobs));
  }
}
