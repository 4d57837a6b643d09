// Pure logic of the history views: the series of a report cell, the trend chart's
// data (median, CI band, points without a value, where regressions start), the range to bisect,
// ratio and p-value texts, and which actions a regression offers. No DOM: tested in node.

// The route and API parameters naming a series, in the order they are written.
export const SERIES_KEY_PARAMS = ["model", "gpu", "dtype", "batch", "mode", "runtime", "build"];

// Point statuses without a value, marked on the trend chart: OOM at the bottom, failures at the top.
export const MISSING_MARKERS = {
  oom: { label: "OOM", pointStyle: "triangle", color: "#7e22ce", at: "bottom" },
  error: { label: "error", pointStyle: "crossRot", color: "#dc2626", at: "top" },
  timeout: { label: "timeout", pointStyle: "rect", color: "#ea580c", at: "top" },
  crash: { label: "crash", pointStyle: "star", color: "#7f1d1d", at: "top" },
};
const OTHER_MARKER = { pointStyle: "circle", color: "#64748b", at: "top" };

export function missingMarker(status) {
  return MISSING_MARKERS[status] ?? { ...OTHER_MARKER, label: String(status) };
}

// The series of a report table cell: {model, gpu, dtype, batch, mode, runtime, build}, or null
// when the column does not name a (build, runtime, mode) or the cell was never run.
export function cellSeriesParams(table, col, row, cell) {
  if (!col.build || !col.runtime || !col.mode) return null;
  if (cell && cell.status === "not_run") return null;
  return {
    model: row.model,
    gpu: table.gpu,
    dtype: table.dtype ?? "float32",
    batch: String(table.batch),
    mode: col.mode,
    runtime: col.runtime,
    build: col.build,
  };
}

// Whether route params name exactly one series (all seven key parts).
export function isFullKey(params) {
  return SERIES_KEY_PARAMS.every((k) => params[k] !== undefined && params[k] !== null && params[k] !== "");
}

// The query of GET /api/v1/series for route params: the key parts given, limit and cursor.
export function seriesQuery(params, { limit = 100, after } = {}) {
  const q = new URLSearchParams();
  for (const k of SERIES_KEY_PARAMS) if (params[k] !== undefined && params[k] !== null && params[k] !== "") q.set(k, String(params[k]));
  q.set("limit", String(limit));
  if (after !== undefined && after !== null) q.set("after", String(after));
  return q.toString();
}

// The route params of a series_json's key (series_json and regression_json.series alike).
export function seriesKeyParams(key) {
  return {
    model: key.model, gpu: key.gpu, dtype: key.dtype, batch: String(key.batch),
    mode: key.mode, runtime: key.runtime, build: key.torch_build,
  };
}

// "microsoft/resnet-50 · batch 1 · default · float32 · libtorch · a100 · stable"
export function seriesLabel(key) {
  return `${key.model} · batch ${key.batch} · ${key.mode} · ${key.dtype} · ${key.runtime} · ${key.gpu} · ${key.torch_build}`;
}

// A git hash as shown: its first 7 characters.
export function shortGit(git) {
  return git ? String(git).slice(0, 7) : null;
}

// "2.6.0.dev20241121 (a8d6afb)"; "unknown version" when the result recorded none.
export function versionLabel(version, git) {
  const v = version || "unknown version";
  const g = shortGit(git);
  return g ? `${v} (${g})` : v;
}

// "×1.12 (+12.0%)": after / before, with the change in percent.
export function ratioText(ratio) {
  if (ratio === null || ratio === undefined || !Number.isFinite(ratio)) return "-";
  const pct = (ratio - 1) * 100;
  return `×${ratio.toFixed(2)} (${pct >= 0 ? "+" : "−"}${Math.abs(pct).toFixed(1)}%)`;
}

// p-values: four decimals, or scientific notation below 0.0001.
export function pValueText(p) {
  if (p === null || p === undefined || !Number.isFinite(p)) return "-";
  if (p === 0) return "0";
  return p < 1e-4 ? p.toExponential(1) : p.toFixed(4);
}

// The range to bisect of a regression_json: the last good point's torch version (and git) to the
// first bad one's. {from, to, text}; `from` is null when the change starts the series.
export function bisectRange(regression) {
  const to = versionLabel(regression.first_bad?.torch_version, regression.first_bad?.torch_git);
  const from = regression.last_good ? versionLabel(regression.last_good.torch_version, regression.last_good.torch_git) : null;
  return { from, to, text: `${from ?? "(start of the series)"} → ${to}` };
}

// What can be done with a regression in `state`: [[action, button text], ...].
export function regressionActions(state) {
  if (state === "open") return [["acknowledge", "Acknowledge"], ["resolve", "Resolve"]];
  if (state === "acknowledged") return [["resolve", "Resolve"], ["reopen", "Reopen"]];
  if (state === "resolved") return [["reopen", "Reopen"]];
  return [];
}

// The trend chart's data for points in series order and the series' regressions:
//   labels        the torch version of each point (with its short git hash)
//   median        median_ms of ok points, null elsewhere (a gap, never a zero)
//   ciLow/ciHigh  the 95% CI of the median of ok points (the band)
//   missing       [{index, status, label, at, pointStyle, color}] for points without a value
//   changes       [{index, lastGoodIndex, regression}] where a loaded point starts a change
//   tooltips      per point: {title, lines}
export function trendModel(points, regressions = []) {
  const indexOf = new Map(points.map((p, i) => [p.id, i]));
  const labels = points.map((p) => versionLabel(p.torch_version, p.torch_git));
  const okValue = (p, key) => (p.status === "ok" && Number.isFinite(p[key]) ? p[key] : null);
  const median = points.map((p) => okValue(p, "median_ms"));
  const ciLow = points.map((p) => okValue(p, "ci_low_ms"));
  const ciHigh = points.map((p) => okValue(p, "ci_high_ms"));
  const missing = [];
  points.forEach((p, index) => {
    if (median[index] !== null) return;
    const marker = missingMarker(p.status);
    missing.push({ index, status: p.status, label: marker.label, at: marker.at, pointStyle: marker.pointStyle, color: marker.color });
  });
  const changes = [];
  for (const r of regressions) {
    const index = indexOf.get(r.first_bad?.point_id);
    if (index === undefined) continue;
    const lastGoodIndex = r.last_good ? indexOf.get(r.last_good.point_id) ?? null : null;
    changes.push({ index, lastGoodIndex, regression: r });
  }
  const tooltips = points.map((p, i) => {
    const lines = [];
    if (median[i] !== null) {
      let line = `median ${median[i].toFixed(3)} ms`;
      if (ciLow[i] !== null && ciHigh[i] !== null) line += ` (95% CI ${ciLow[i].toFixed(3)}–${ciHigh[i].toFixed(3)})`;
      lines.push(line);
    } else {
      lines.push(`no value: ${missingMarker(p.status).label}`);
    }
    lines.push(`run #${p.run_id} · result #${p.result_id}`);
    for (const c of changes.filter((x) => x.index === i)) {
      lines.push(`${c.regression.direction} starts here: ${ratioText(c.regression.ratio)}`);
    }
    if (p.flags?.length) lines.push(`flagged: ${p.flags.join(", ")}`);
    return { title: `torch ${labels[i]}`, lines };
  });
  return { labels, median, ciLow, ciHigh, missing, changes, tooltips };
}
