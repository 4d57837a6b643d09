// The registered models (GET /api/v1/models?all=true): each model's id, report label, where it
// comes from (a Hugging Face checkpoint or hub id, a torchvision or timm name, a Python factory,
// an exported program), its version and digest. Retired models and older versions are listed
// after the current ones, marked.
import { h } from "../dom.js";
import { errorState, loadingState, emptyState } from "./states.js";

// Where a definition builds its model from, in a few words.
export function sourceText(d) {
  const where = d.artifact ? `artifact ${d.artifact.slice(0, 19)}…` : d.path ? d.path : d.hub_id ? `hub ${d.hub_id}` : "";
  switch (d.source) {
    case "huggingface": return d.config ? `${d.architecture} from its config (random weights)` : `checkpoint: ${where}`;
    case "torchvision": return `torchvision.models ${d.architecture}${where ? ` + weights ${where}` : ""}`;
    case "timm": return `timm ${d.architecture}${where ? ` + weights ${where}` : ""}`;
    case "python": return `${d.factory}${where ? ` (${where})` : ""}`;
    case "exported": return `torch.export program: ${where}`;
    default: return d.source;
  }
}

export class ModelsView {
  constructor(ctx, root) {
    this.ctx = ctx;
    this.root = root;
  }

  async mount() {
    this.ctx.setTitle("Models");
    this.root.append(h("h1", null, "Models"), this.body = h("div", null, loadingState()));
    try {
      const { models } = await this.ctx.api.models();
      this.render(models);
    } catch (e) {
      this.body.replaceChildren(errorState(e));
    }
  }

  destroy() {}

  render(models) {
    if (!models.length) {
      this.body.replaceChildren(emptyState("No model is registered.",
        h("p", null, "Register one: ", h("code", null, "benchfleet models add model.yaml"))));
      return;
    }
    const ordered = [...models.filter((m) => m.current && !m.retired), ...models.filter((m) => !m.current || m.retired)];
    const table = h("table", { class: "models", "aria-label": "Models" },
      h("thead", null, h("tr", null, ["Model", "Task/Model", "Source", "Built from", "Version", "Digest"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", null, ordered.map((m) => h("tr", { dataset: { model: m.key } },
        h("th", { scope: "row" }, h("code", null, m.key)),
        h("td", null, m.display_name),
        h("td", { class: "source" }, m.source),
        h("td", null, sourceText(m.definition)),
        h("td", null, String(m.version), m.retired ? [" ", h("span", { class: "badge b-offline" }, "retired")] : !m.current ? " (older)" : ""),
        h("td", null, h("small", null, h("code", { title: m.digest }, m.digest.slice(0, 19))))))));
    this.body.replaceChildren(h("p", { class: "meta" }, `${models.filter((m) => m.current && !m.retired).length} models`),
      h("div", { class: "table-scroll" }, table));
  }
}
