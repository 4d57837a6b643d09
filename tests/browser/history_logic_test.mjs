// The history views' pure logic (web/js/history.js, the new routes) in node, without a browser:
// a report cell's series, the trend chart's data, bisect ranges, ratio and p-value texts.
// Run: node tests/browser/history_logic_test.mjs
import test from "node:test";
import assert from "node:assert/strict";
import { parseRoute, formatRoute } from "../../web/js/route.js";
import {
  cellSeriesParams, isFullKey, seriesQuery, seriesKeyParams, seriesLabel, versionLabel, shortGit, ratioText, pValueText,
  bisectRange, regressionActions, trendModel, missingMarker,
} from "../../web/js/history.js";
import { fmtUntil } from "../../web/js/format.js";

test("routes: schedules, series (one and filtered), regressions", () => {
  for (const hash of ["#/schedules", "#/series", "#/series/7", "#/regressions", "#/regressions?state=all&direction=all&series=7&before=40",
    "#/series?model=microsoft%2Fresnet-50&gpu=a100&dtype=float32&batch=1&mode=eager&runtime=libtorch&build=stable&after=3"]) {
    assert.equal(formatRoute(parseRoute(hash)), hash, hash);
  }
  assert.deepEqual(parseRoute("#/series/7"), { view: "series", id: 7, params: {} });
  assert.deepEqual(parseRoute("#/series?gpu=a100"), { view: "series", id: null, params: { gpu: "a100" } });
  assert.equal(parseRoute("#/series/x").view, "notfound");
  // Key parts are written in one order whatever order they were given in.
  assert.equal(formatRoute({ view: "series", params: { build: "b", runtime: "r", mode: "m", batch: "4", dtype: "d", gpu: "g", model: "x/y" } }),
    "#/series?model=x%2Fy&gpu=g&dtype=d&batch=4&mode=m&runtime=r&build=b");
});

const table = { gpu: "a100", batch: 4, columns: [] };
const row = { model: "google/vit-base-patch16-224", label: "Image Classification/ViT" };
const latency = { key: "latency/nightly/python/default", kind: "latency_ms", build: "nightly", runtime: "python", mode: "default" };

test("a report cell's series: row model, table GPU/batch/dtype, column build/runtime/mode", () => {
  assert.deepEqual(cellSeriesParams(table, latency, row, { status: "oom" }), {
    model: "google/vit-base-patch16-224", gpu: "a100", dtype: "float32", batch: "4", mode: "default", runtime: "python", build: "nightly",
  });
  assert.equal(cellSeriesParams({ ...table, dtype: "bfloat16" }, latency, row, { status: "ok" }).dtype, "bfloat16");
  assert.equal(cellSeriesParams(table, latency, row, { status: "not_run" }), null, "a cell never run has no series");
  assert.equal(cellSeriesParams(table, { key: "x", kind: "speedup" }, row, { status: "ok" }), null, "a column without build/runtime/mode");
  const params = cellSeriesParams(table, latency, row, { status: "ok" });
  assert.ok(isFullKey(params));
  assert.ok(!isFullKey({ ...params, build: "" }));
  assert.equal(seriesQuery(params, { limit: 10 }),
    "model=google%2Fvit-base-patch16-224&gpu=a100&dtype=float32&batch=4&mode=default&runtime=python&build=nightly&limit=10");
  assert.equal(seriesQuery({ gpu: "t4", q: "ignored" }, { limit: 100, after: 5 }), "gpu=t4&limit=100&after=5");
  const key = { model: "m", batch: 4, mode: "default", dtype: "float32", runtime: "python", gpu: "a100", torch_build: "nightly" };
  assert.deepEqual(seriesKeyParams(key), { model: "m", gpu: "a100", dtype: "float32", batch: "4", mode: "default", runtime: "python", build: "nightly" });
  assert.equal(seriesLabel(key), "m · batch 4 · default · float32 · python · a100 · nightly");
});

test("versions, ratios, p-values", () => {
  assert.equal(shortGit("a8d6afb1234567"), "a8d6afb");
  assert.equal(shortGit(null), null);
  assert.equal(versionLabel("2.6.0.dev20241121", "a8d6afb1234567"), "2.6.0.dev20241121 (a8d6afb)");
  assert.equal(versionLabel(null, null), "unknown version");
  assert.equal(ratioText(1.12), "×1.12 (+12.0%)");
  assert.equal(ratioText(0.9), "×0.90 (−10.0%)");
  assert.equal(ratioText(null), "-");
  assert.equal(pValueText(0.01234), "0.0123");
  assert.equal(pValueText(0.0000321), "3.2e-5");
  assert.equal(pValueText(undefined), "-");
});

const ref = (pointId, version, git, runId) => ({ point_id: pointId, result_id: pointId + 100, run_id: runId, torch_version: version, torch_git: git, recorded_at: "2026-11-20T00:00:00Z", median_ms: 10 });

test("bisect range and actions per state", () => {
  const r = { first_bad: ref(5, "2.6.0.dev20241124", "bbbbbbbbbb", 5), last_good: ref(4, "2.6.0.dev20241123", "aaaaaaaaaa", 4) };
  assert.deepEqual(bisectRange(r), { from: "2.6.0.dev20241123 (aaaaaaa)", to: "2.6.0.dev20241124 (bbbbbbb)", text: "2.6.0.dev20241123 (aaaaaaa) → 2.6.0.dev20241124 (bbbbbbb)" });
  assert.equal(bisectRange({ ...r, last_good: null }).text, "(start of the series) → 2.6.0.dev20241124 (bbbbbbb)");
  assert.deepEqual(regressionActions("open").map(([a]) => a), ["acknowledge", "resolve"]);
  assert.deepEqual(regressionActions("acknowledged").map(([a]) => a), ["resolve", "reopen"]);
  assert.deepEqual(regressionActions("resolved").map(([a]) => a), ["reopen"]);
});

test("trend model: a gap (never zero) and a marker per point without a value, CI band, change starts", () => {
  const point = (id, status, median, version, git) => ({
    id, result_id: id + 100, run_id: id, status, median_ms: median, ci_low_ms: median === null ? null : median - 0.2,
    ci_high_ms: median === null ? null : median + 0.2, torch_version: version, torch_git: git, recorded_at: "2026-11-20T00:00:00Z", flags: [],
  });
  const points = [
    point(1, "ok", 10, "2.6.0.dev1", "1111111aa"), point(2, "ok", 10.1, "2.6.0.dev2", null), point(3, "oom", null, "2.6.0.dev3", null),
    point(4, "error", null, "2.6.0.dev4", null), point(5, "ok", 11.2, "2.6.0.dev5", "5555555bb"), point(6, "ok", 11.3, "2.6.0.dev6", null),
  ];
  const regression = { id: 9, direction: "regression", ratio: 1.12, first_bad: ref(5, "2.6.0.dev5", "5555555bb", 5), last_good: ref(2, "2.6.0.dev2", null, 2) };
  const m = trendModel(points, [regression, { ...regression, id: 10, first_bad: ref(77, "x", null, 77) }]);
  assert.deepEqual(m.labels, ["2.6.0.dev1 (1111111)", "2.6.0.dev2", "2.6.0.dev3", "2.6.0.dev4", "2.6.0.dev5 (5555555)", "2.6.0.dev6"]);
  assert.deepEqual(m.median, [10, 10.1, null, null, 11.2, 11.3]);
  assert.deepEqual(m.ciLow.map((v) => (v === null ? null : Number(v.toFixed(1)))), [9.8, 9.9, null, null, 11, 11.1]);
  assert.deepEqual(m.missing.map((x) => [x.index, x.status, x.at, x.pointStyle]), [[2, "oom", "bottom", "triangle"], [3, "error", "top", "crossRot"]]);
  assert.deepEqual(m.changes.map((c) => [c.index, c.lastGoodIndex, c.regression.id]), [[4, 1, 9]], "a change whose point is not loaded is left out");
  assert.equal(m.tooltips[4].title, "torch 2.6.0.dev5 (5555555)");
  assert.deepEqual(m.tooltips[4].lines, ["median 11.200 ms (95% CI 11.000–11.400)", "run #5 · result #105", "regression starts here: ×1.12 (+12.0%)"]);
  assert.deepEqual(m.tooltips[2].lines, ["no value: OOM", "run #3 · result #103"]);
  assert.equal(missingMarker("crash").pointStyle, "star");
  assert.notEqual(missingMarker("timeout").pointStyle, missingMarker("oom").pointStyle);
  assert.equal(missingMarker("weird").label, "weird");
});

test("time until a due time", () => {
  const now = Date.parse("2026-11-25T10:00:00Z");
  assert.equal(fmtUntil("2026-11-25T10:05:00Z", now), "in 5 min");
  assert.equal(fmtUntil("2026-11-25T13:00:00Z", now), "in 3 h");
  assert.equal(fmtUntil("2026-11-25T09:58:00Z", now), "due 2 min ago");
  assert.equal(fmtUntil(null, now), "never");
});
