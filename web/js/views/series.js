// Series: one cell of the matrix across runs and torch versions.
//   #/series/7          the trend chart (median, CI band, points without a value marked, where
//                       changes start), the points without a value listed, the series'
//                       regressions, and every point in a table linking to its run and result
//   #/series?model=..   the series matching a filter; a full key (the seven parts a report cell
//                       links with) goes straight to its series
//   #/series?q=resnet18 a nightly  the series whose model, GPU class, build, mode, dtype or
//                       runtime contain every word (GET /api/v1/series filters by exact key parts
//                       only, so the search runs here over every series the key parts give)
import { h, fill } from "../dom.js";
import { withParams } from "../route.js";
import { fmtMs, fmtTime } from "../format.js";
import { badgeClass } from "../status.js";
import { loadCharts } from "../charts.js";
import { trendChart } from "../trend_chart.js";
import {
  SERIES_KEY_PARAMS, bisectRange, isFullKey, pValueText, ratioText, seriesLabel, seriesQuery, shortGit, trendModel,
  missingMarker,
} from "../history.js";
import { gridNav } from "../grid_nav.js";
import { errorState, loadingState, emptyState } from "./states.js";

const LIST_PAGE = 100;
const SEARCH_PAGE = 500;       // the API's largest page
const MAX_SEARCH_PAGES = 20;   // 10,000 series searched at most
const MAX_SEARCH_ROWS = 500;   // matches listed at most
const POINTS_PAGE = 5000;
const MAX_POINT_PAGES = 20;  // 100,000 points: decades of nightly runs

// Letters and digits only, lower case: "microsoft/ResNet-18" -> "microsoftresnet18".
const squash = (s) => String(s ?? "").toLowerCase().replace(/[^a-z0-9]+/g, "");

// Whether series `s` (a series_json) matches the search `query`: every word of it (letters and
// digits only, so "resnet18" finds "torchvision/resnet18" and "microsoft/resnet-18") is in its
// model id, the model's catalog `label`, GPU class, build, mode, dtype, runtime or "batch<n>".
// An empty query matches every series. Pure.
export function seriesMatches(s, query, label = "") {
  const words = String(query ?? "").split(/\s+/).map(squash).filter(Boolean);
  if (!words.length) return true;
  const fields = [s.model, label, s.gpu, s.torch_build, s.mode, s.dtype, s.runtime, `batch${s.batch}`].map(squash);
  return words.every((w) => fields.some((f) => f.includes(w)));
}

export class SeriesView {
  constructor(ctx, root) {
    this.ctx = ctx;
    this.root = root;
    this.seq = 0;
    this.chart = null;
    this.destroyed = false;
  }

  mount(route) {
    this.route = route;
    this.load();
  }

  update(route) {
    this.route = route;
    this.load();
  }

  reconnected() { this.load(); }

  destroy() {
    this.destroyed = true;
    this.chart?.destroy();
  }

  load() {
    if (this.route.id === null) return this.loadList();
    return this.loadSeries(this.route.id);
  }

  // ---- the list (and a report cell's link) -----------------------------------------------------

  async loadList() {
    const seq = ++this.seq;
    const params = this.route.params;
    const q = (params.q ?? "").trim();
    this.ctx.setTitle(q ? `Series matching ${q}` : "Series");
    if (!this.root.firstChild) this.root.append(loadingState("Looking up the series…"));
    try {
      if (q) {
        const [all, labels] = await Promise.all([this.searchable(params), this.ctx.models().catch(() => new Map())]);
        if (this.destroyed || seq !== this.seq) return;
        const matches = all.series.filter((s) => seriesMatches(s, q, labels.get(s.model)?.display_name));
        this.renderList({ series: matches.slice(0, MAX_SEARCH_ROWS), next_after: null }, params, undefined,
          { q, matched: matches.length, searched: all.series.length, truncated: all.truncated });
        return;
      }
      const after = /^\d+$/.test(params.after ?? "") ? Number(params.after) : undefined;
      const page = await this.ctx.api.seriesList(seriesQuery(params, { limit: LIST_PAGE, after }));
      if (this.destroyed || seq !== this.seq) return;
      if (isFullKey(params) && page.series.length === 1 && !after) {
        this.ctx.navigate({ view: "series", id: page.series[0].id }, { replace: true });
        return;
      }
      this.renderList(page, params, after);
    } catch (e) {
      if (this.destroyed || seq !== this.seq) return;
      this.root.replaceChildren(errorState(e));
    }
  }

  // Every series the route's key parts give (at most MAX_SEARCH_PAGES pages), fetched once per
  // set of key parts: typing in the search box filters them again without asking the API.
  async searchable(params) {
    const key = seriesQuery(params, { limit: SEARCH_PAGE });
    if (this.searchCache?.key !== key) {
      const fetchAll = async () => {
        const series = [];
        let after;
        for (let pages = 0; pages < MAX_SEARCH_PAGES; pages++) {
          const page = await this.ctx.api.seriesList(seriesQuery(params, { limit: SEARCH_PAGE, after }));
          series.push(...page.series);
          after = page.next_after;
          if (!after) return { series, truncated: false };
        }
        return { series, truncated: true };
      };
      const promise = fetchAll();
      this.searchCache = { key, promise };
      promise.catch(() => { if (this.searchCache?.promise === promise) this.searchCache = null; });
    }
    return this.searchCache.promise;
  }

  // The search box, kept across renders of the list so that typing in it keeps its focus.
  searchBox(params) {
    if (!this.search) {
      this.search = h("input", {
        type: "search", name: "q", placeholder: "resnet18 a100 nightly", "aria-label": "Search series",
        autocomplete: "off",
        on: { input: (e) => this.ctx.navigate(withParams(this.route, { q: e.target.value, after: undefined }), { replace: true }) },
      });
      this.searchForm = h("form", { class: "toolbar series-search", role: "search", "aria-label": "Search series", on: { submit: (e) => e.preventDefault() } },
        h("label", { class: "control" }, h("span", { class: "label" }, "Search: model, GPU class, build, mode"), this.search));
    }
    if (document.activeElement !== this.search) this.search.value = params.q ?? "";
    return this.searchForm;
  }

  renderList(page, params, after, search = null) {
    const given = SERIES_KEY_PARAMS.filter((k) => params[k]);
    const matching = given.map((k) => `${k} ${params[k]}`).join(", ");
    let text;
    if (search) {
      text = `${search.matched} of ${search.searched}${search.truncated ? "+" : ""} series${given.length ? ` with ${matching}` : ""} match “${search.q}”.` +
        (search.matched > MAX_SEARCH_ROWS ? ` Showing the first ${MAX_SEARCH_ROWS}.` : "");
    } else {
      text = given.length ? `Matching ${matching}.`
        : "Every series: one cell of a matrix (model, batch, mode, dtype, runtime, GPU class, build) across runs and torch versions.";
    }
    const meta = h("p", { class: "meta" }, text);
    const form = this.filterForm(params);
    if (!page.series.length) {
      this.fillList(params, form, meta, emptyState(isFullKey(params) && !search
        ? "This cell has no series yet: its results are not stored, or were unsupported or invalid."
        : "No series match.", h("p", null, h("a", { href: "#/series" }, "All series"))));
      return;
    }
    const table = h("table", { class: "series-list", "aria-label": "Series" },
      h("thead", null, h("tr", null, ["Model", "Batch", "Mode", "Dtype", "Runtime", "GPU class", "Build", "Points", "Last median (ms)", "Last torch version", "Last status", "Unresolved regressions"]
        .map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", null, page.series.map((s) => h("tr", { dataset: { series: s.id } },
        h("th", { scope: "row" }, h("a", { href: `#/series/${s.id}` }, s.model)),
        h("td", { class: "num" }, String(s.batch)), h("td", null, s.mode), h("td", null, s.dtype), h("td", null, s.runtime),
        h("td", null, s.gpu), h("td", null, s.torch_build), h("td", { class: "num" }, String(s.point_count)),
        h("td", { class: "num" }, fmtMs(s.last_median_ms)), h("td", null, s.last_torch_version ?? "-"),
        h("td", null, s.last_status ? h("span", { class: `badge ${badgeClass(s.last_status)}` }, s.last_status) : "-"),
        h("td", { class: "num" }, s.open_regressions ? h("a", { href: `#/regressions?state=all&series=${s.id}` }, String(s.open_regressions)) : "0")))));
    const more = [];
    if (after) more.push(h("a", { class: "btn", href: this.ctx.href(withParams(this.route, { after: undefined })) }, "First page"));
    if (page.next_after) more.push(h("a", { class: "btn", href: this.ctx.href(withParams(this.route, { after: page.next_after })) }, "Next page"));
    this.fillList(params, form, meta, h("div", { class: "table-scroll" }, table), more.length ? h("p", { class: "pager" }, more) : null);
    gridNav(table);
  }

  // The list page: its heading and search box stay in place (typing keeps focus), the rest is
  // replaced by `parts`.
  fillList(params, ...parts) {
    const search = this.searchBox(params);
    if (this.listBody?.parentElement !== this.root || search.parentElement !== this.root) {
      this.listBody = h("div", { class: "series-list-body" });
      fill(this.root, h("h1", null, "Series"), search, this.listBody);
    }
    fill(this.listBody, ...parts);
  }

  // A field per key part; "Filter" goes to the list of the series matching the fields filled.
  filterForm(params) {
    const fields = SERIES_KEY_PARAMS.map((k) => h("label", { class: "control" }, h("span", { class: "label" }, k === "gpu" ? "GPU class" : k),
      h("input", { name: k, value: params[k] ?? "", class: k === "batch" ? "narrow" : null, inputmode: k === "batch" ? "numeric" : null })));
    return h("form", {
      class: "toolbar series-filter", role: "search", "aria-label": "Filter series",
      on: {
        submit: (e) => {
          e.preventDefault();
          const next = { q: this.route.params.q };  // the search stays
          for (const k of SERIES_KEY_PARAMS) next[k] = e.target.elements[k].value.trim() || undefined;
          this.ctx.navigate({ view: "series", params: next });
        },
      },
    }, fields, h("button", { type: "submit", class: "btn" }, "Filter"));
  }

  // ---- one series ------------------------------------------------------------------------------

  async loadSeries(id) {
    const seq = ++this.seq;
    this.ctx.setTitle(`Series ${id}`);
    if (!this.root.firstChild) this.root.append(loadingState(`Loading series ${id}…`));
    try {
      const first = await this.ctx.api.series(id, { limit: POINTS_PAGE });
      const points = [...first.points];
      let next = first.next_after_point;
      for (let pages = 1; next && pages < MAX_POINT_PAGES; pages++) {
        const more = await this.ctx.api.series(id, { limit: POINTS_PAGE, afterPoint: next });
        points.push(...more.points);
        next = more.next_after_point;
      }
      if (this.destroyed || seq !== this.seq) return;
      this.renderSeries(first, points, Boolean(next));
    } catch (e) {
      if (this.destroyed || seq !== this.seq) return;
      this.root.replaceChildren(errorState(e, h("p", null, h("a", { href: "#/series" }, "All series"))));
      if (e.status === 404) this.ctx.setTitle("Not found");
    }
  }

  renderSeries(series, points, truncated) {
    this.chart?.destroy();
    this.chart = null;
    const regressions = series.regressions ?? [];
    const model = trendModel(points, regressions);
    this.ctx.setTitle(`${series.model} b${series.batch} ${series.mode} · series ${series.id}`);
    const open = series.open_regressions ?? 0;  // open or acknowledged
    const canvas = h("canvas", { role: "img", "aria-label": `${seriesLabel(series)}: median latency (ms) per torch version, with its 95% CI` });
    const tooltip = h("div", { class: "trend-tooltip", role: "status", hidden: true });
    const figure = h("figure", { class: "chart-box trend", dataset: { points: points.length } },
      h("div", { class: "chart-wrap trend-wrap" }, canvas, tooltip),
      h("figcaption", null, "Median latency per point in series order (torch version, then time recorded); the band is the 95% CI of the median. ",
        "Points without a value are marked, never drawn as zero: OOM at the bottom, error, timeout and crash at the top. ",
        "A dashed line marks where a confirmed change starts; its first bad point is highlighted."));
    fill(this.root,
      h("nav", { class: "crumbs", "aria-label": "Breadcrumb" }, h("a", { href: "#/series" }, "Series"), " › ", `Series ${series.id}`),
      h("header", { class: "run-head" },
        h("h1", null, series.model),
        h("p", { class: "meta series-key" }, seriesLabel(series)),
        h("p", { class: "meta" }, `${truncated ? `${points.length} of ${series.point_count}` : points.length} points` +
          (series.last_point_at ? ` · last ${fmtTime(series.last_point_at)}` : "") +
          (series.last_torch_version ? ` · last torch ${series.last_torch_version}` : "") +
          (series.last_median_ms !== null && series.last_median_ms !== undefined ? ` · last median ${fmtMs(series.last_median_ms)} ms` : ""),
        open ? [" · ", h("a", { href: `#/regressions?state=all&series=${series.id}` }, `${open} unresolved regression${open > 1 ? "s" : ""}`)] : null)),
      h("section", { class: "panel", "aria-labelledby": "trend-heading" },
        h("h2", { id: "trend-heading" }, "Trend"),
        points.length ? figure : emptyState("No points yet."),
        truncated ? h("p", { class: "note" }, `Showing the first ${points.length} points.`) : null,
        this.missingList(points, model)),
      this.regressionsPanel(series, regressions, model),
      h("section", { class: "panel", "aria-labelledby": "points-heading" },
        h("h2", { id: "points-heading" }, "Points"),
        this.pointsTable(points, model)));
    if (!points.length) return;
    loadCharts().then((available) => {
      if (this.destroyed || !canvas.isConnected) return;
      if (!available) {
        figure.replaceWith(h("p", { class: "note charts-unavailable" },
          "Charts unavailable: vendor/chart.umd.js did not load (npm ci, then rebuild to copy chart.js). The table below has every point."));
        return;
      }
      this.chart = trendChart(canvas, tooltip, model);
      figure.dataset.drawn = "1";
    });
  }

  // The points without a value, in words: "OOM: 2.6.0.dev20241123 (run #7)".
  missingList(points, model) {
    if (!model.missing.length) return null;
    return h("div", { class: "missing-points" },
      h("p", { class: "note" }, `${model.missing.length} point${model.missing.length > 1 ? "s" : ""} without a value:`),
      h("ul", { class: "plain" }, model.missing.map((m) => {
        const p = points[m.index];
        return h("li", { dataset: { point: p.id, status: p.status } },
          h("span", { class: `badge ${badgeClass(p.status)}` }, missingMarker(p.status).label), " ",
          `${model.labels[m.index]} · `, h("a", { href: `#/runs/${p.run_id}` }, `run #${p.run_id}`), " · ",
          h("a", { href: `#/results/${p.result_id}` }, `result #${p.result_id}`));
      })));
  }

  regressionsPanel(series, regressions) {
    const body = regressions.length
      ? h("ul", { class: "plain series-regressions" }, regressions.map((r) => {
        const range = bisectRange(r);
        return h("li", { dataset: { regression: r.id, state: r.state } },
          h("span", { class: `badge ${r.direction === "regression" ? "b-error" : "b-ok"}` }, r.direction), " ",
          h("span", { class: `badge ${badgeClass(`reg_${r.state}`)}` }, r.state), " ",
          `${fmtMs(r.before_median_ms)} → ${fmtMs(r.after_median_ms)} ms, ${ratioText(r.ratio)}, p ${pValueText(r.p_value)} · bisect ${range.text} · detected ${fmtTime(r.detected_at)}`);
      }))
      : h("p", { class: "note" }, "No change confirmed on this series.");
    return h("section", { class: "panel", "aria-labelledby": "series-regressions-heading" },
      h("h2", { id: "series-regressions-heading" }, "Changes"),
      body,
      regressions.length ? h("p", null, h("a", { href: `#/regressions?series=${series.id}&state=all&direction=all` }, "Manage on the regressions page")) : null);
  }

  pointsTable(points, model) {
    if (!points.length) return emptyState("No points yet.");
    const firstBad = new Set(model.changes.map((c) => c.index));
    const table = h("table", { class: "points", "aria-label": "Points" },
      h("thead", null, h("tr", null, ["#", "Torch version", "Git", "Run", "Result", "Status", "Median (ms)", "95% CI (ms)", "Recorded", "Flags"]
        .map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", null, points.map((p, i) => h("tr", { class: firstBad.has(i) ? "first-bad" : null, dataset: { point: p.id, status: p.status } },
        h("th", { scope: "row" }, String(i + 1)),
        h("td", null, p.torch_version ?? "-"),
        h("td", { class: "mono", title: p.torch_git ?? "" }, shortGit(p.torch_git) ?? "-"),
        h("td", null, h("a", { href: `#/runs/${p.run_id}` }, `#${p.run_id}`)),
        h("td", null, h("a", { href: `#/results/${p.result_id}` }, `#${p.result_id}`)),
        h("td", null, h("span", { class: `badge ${badgeClass(p.status)}` }, p.status)),
        h("td", { class: "num" }, fmtMs(p.median_ms)),
        h("td", { class: "num" }, p.ci_low_ms !== null && p.ci_high_ms !== null && p.ci_low_ms !== undefined ? `${fmtMs(p.ci_low_ms)}–${fmtMs(p.ci_high_ms)}` : "-"),
        h("td", null, fmtTime(p.recorded_at)),
        h("td", null, p.flags?.length ? p.flags.join(", ") : "")))));
    gridNav(table);
    return h("div", { class: "table-scroll" }, table);
  }
}
