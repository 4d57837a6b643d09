// An address the dashboard does not know.
import { h } from "../dom.js";
import { errorState } from "./states.js";

export class NotFoundView {
  constructor(ctx, root) { this.ctx = ctx; this.root = root; }
  mount(route) {
    this.ctx.setTitle("Not found");
    this.root.append(errorState(`There is no page at #${route.path}.`, h("a", { href: "#/runs" }, "Go to the runs")));
  }
}
