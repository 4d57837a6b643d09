// Hash routes: every view state lives in the URL fragment, so a copied link restores the view
// and back/forward walk through selections. Pure: no DOM, tested in node.
//
//   #/runs                         runs, newest first (?before=ID pages to older ones)
//   #/runs/5?gpu=a100&dtype=bfloat16&batch=4&stat=median&flagged=exclude&q=vit&status=oom
//                                  one run: progress grid, tables, charts (batch=all: every batch)
//   #/compare?a=5:stable&b=5:nightly&gpu=a100&batch=1&stat=mean
//                                  two sides (run:build) side by side, ratio per cell
//   #/results/12                   one result
//   #/agents                       the fleet
//   #/models                       the registered models, each with its source
//   #/schedules                    recurring matrices
//   #/schedules/3/summary?stat=median&limit=90
//                                  one schedule's build summary: per run, per build · runtime ·
//                                  compiled mode, speedup, pass rate, compile time, memory ratio
//   #/series/7                     one series: trend chart, points, its regressions
//   #/series?model=m&gpu=a100&dtype=float32&batch=1&mode=eager&runtime=libtorch&build=stable
//                                  series matching a filter; a full key goes to its series
//   #/series?q=resnet18%20nightly  series whose model, GPU class, build, mode... contain each word
//   #/regressions?state=all&direction=all&series=7&before=ID
//                                  changes the detector confirmed
//
// parseRoute("#/runs/5?stat=median") -> {view: "run", id: 5, params: {stat: "median"}}
// formatRoute({view: "run", id: 5, params: {stat: "median"}}) -> "#/runs/5?stat=median"

const VIEWS = [
  { view: "runs", pattern: /^\/(?:runs\/?)?$/, path: () => "/runs" },
  { view: "run", pattern: /^\/runs\/(\d+)$/, path: (id) => `/runs/${id}` },
  { view: "compare", pattern: /^\/compare$/, path: () => "/compare" },
  { view: "result", pattern: /^\/results\/(\d+)$/, path: (id) => `/results/${id}` },
  { view: "agents", pattern: /^\/agents$/, path: () => "/agents" },
  { view: "models", pattern: /^\/models$/, path: () => "/models" },
  { view: "schedules", pattern: /^\/schedules$/, path: () => "/schedules" },
  { view: "schedule_summary", pattern: /^\/schedules\/(\d+)\/summary$/, path: (id) => `/schedules/${id}/summary` },
  { view: "series", pattern: /^\/series(?:\/(\d+))?$/, path: (id) => (id === null ? "/series" : `/series/${id}`) },
  { view: "regressions", pattern: /^\/regressions$/, path: () => "/regressions" },
];

// Query keys in the order they are written, so equal states give equal URLs.
const PARAM_ORDER = ["a", "b", "model", "gpu", "dtype", "batch", "mode", "runtime", "build", "stat", "flagged", "q",
  "status", "state", "direction", "series", "before", "after", "limit"];

export function parseRoute(hash) {
  const raw = (hash || "").replace(/^#/, "") || "/runs";
  const qpos = raw.indexOf("?");
  const path = qpos < 0 ? raw : raw.slice(0, qpos);
  const params = {};
  if (qpos >= 0) {
    for (const [k, v] of new URLSearchParams(raw.slice(qpos + 1))) {
      if (v !== "") params[k] = v;
    }
  }
  for (const entry of VIEWS) {
    const m = entry.pattern.exec(path);
    if (m) return { view: entry.view, id: m[1] === undefined ? null : Number(m[1]), params };
  }
  return { view: "notfound", id: null, params, path };
}

export function formatRoute({ view, id = null, params = {} }) {
  const entry = VIEWS.find((v) => v.view === view);
  if (!entry) throw new Error(`unknown view ${view}`);
  const keys = Object.keys(params)
    .filter((k) => params[k] !== undefined && params[k] !== null && params[k] !== "")
    .sort((x, y) => rank(x) - rank(y) || x.localeCompare(y));
  const query = keys.map((k) => `${encodeURIComponent(k)}=${encodeComponent(String(params[k]))}`).join("&");
  return `#${entry.path(id)}${query ? `?${query}` : ""}`;
}

// A route with some params changed (undefined or null removes a key).
export function withParams(route, changes) {
  const params = { ...route.params };
  for (const [k, v] of Object.entries(changes)) {
    if (v === undefined || v === null || v === "") delete params[k];
    else params[k] = String(v);
  }
  return { ...route, params };
}

// A compare side "5:stable" -> {run: 5, build: "stable"}; build may be absent ("5").
export function parseSide(text) {
  const m = /^(\d+)(?::(.+))?$/.exec(text || "");
  return m ? { run: Number(m[1]), build: m[2] ?? null } : null;
}
export function formatSide({ run, build }) {
  return build ? `${run}:${build}` : String(run);
}

function rank(key) {
  const i = PARAM_ORDER.indexOf(key);
  return i < 0 ? PARAM_ORDER.length : i;
}
// Keeps ":" and "," readable in the address bar.
function encodeComponent(s) {
  return encodeURIComponent(s).replace(/%3A/gi, ":").replace(/%2C/gi, ",");
}

// The statistic every view shows unless the route names the other: the median, as the
// coordinator's reports, exports and comparisons (rules/report.h kDefaultStat). A route carries
// `stat` only when it is not this one.
export const DEFAULT_STAT = "median";
export function statOf(params) { return params.stat === "mean" || params.stat === "median" ? params.stat : DEFAULT_STAT; }
