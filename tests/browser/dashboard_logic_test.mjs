// The dashboard's pure modules (web/js) in node, without a browser: routes and permalinks,
// histogram bins, the reproduce command, status
// descriptions, the views' polling lifecycle. Run: node tests/browser/dashboard_logic_test.mjs
import test from "node:test";
import assert from "node:assert/strict";
import { parseRoute, formatRoute, withParams, parseSide, formatSide } from "../../web/js/route.js";
import { histogram, improvementPercent } from "../../web/js/analysis.js";
import { reproduceCommand } from "../../web/js/reproduce.js";
import { describeDetail, gridState, badgeClass } from "../../web/js/status.js";
import { fmtBytes, shortLabel, fmtAgo } from "../../web/js/format.js";
import { Poller } from "../../web/js/poll.js";
import { fmtDuration, fmtCount, fmtFigure, fmtMiB, fmtCv, fmtThroughput, fmtTelemetry } from "../../web/js/format.js";
import { hiddenColumns, passRateParts, cellThroughput, cellTooltip } from "../../web/js/views/report_table.js";
import { seriesMatches } from "../../web/js/views/series.js";
import { chartSpecs } from "../../web/js/views/table_charts.js";

test("routes: every view parses and formats back to the same hash", () => {
  const cases = [
    "#/runs",
    "#/runs?before=40",
    "#/runs/5",
    "#/runs/5?gpu=a100&batch=4&stat=median&q=vit&status=oom",
    "#/compare?a=5:stable&b=6:nightly&gpu=t4&batch=all&stat=median",
    "#/results/12",
    "#/agents",
  ];
  for (const hash of cases) assert.equal(formatRoute(parseRoute(hash)), hash, hash);
});

test("routes: defaults, unknown paths, empty values", () => {
  assert.deepEqual(parseRoute(""), { view: "runs", id: null, params: {} });
  assert.deepEqual(parseRoute("#/"), { view: "runs", id: null, params: {} });
  assert.equal(parseRoute("#/nope").view, "notfound");
  assert.deepEqual(parseRoute("#/runs/7?gpu=&stat=median").params, { stat: "median" });
  assert.equal(parseRoute("#/runs/7").id, 7);
});

test("routes: params are written in a fixed order and encoded", () => {
  const route = { view: "run", id: 3, params: { stat: "median", batch: "4", gpu: "a100", q: "image cls/vit" } };
  assert.equal(formatRoute(route), "#/runs/3?gpu=a100&batch=4&stat=median&q=image%20cls%2Fvit");
  assert.equal(parseRoute(formatRoute(route)).params.q, "image cls/vit");
  const changed = withParams(route, { batch: "all", q: undefined, status: "oom" });
  assert.equal(formatRoute(changed), "#/runs/3?gpu=a100&batch=all&stat=median&status=oom");
  assert.deepEqual(route.params.q, "image cls/vit", "withParams does not mutate");
});

test("compare sides", () => {
  assert.deepEqual(parseSide("5:stable"), { run: 5, build: "stable" });
  assert.deepEqual(parseSide("5"), { run: 5, build: null });
  assert.equal(parseSide("x:stable"), null);
  assert.equal(formatSide({ run: 5, build: "nightly-2.6" }), "5:nightly-2.6");
});

test("histogram: bins cover every sample", () => {
  const samples = Array.from({ length: 100 }, (_, i) => 10 + (i % 10) * 0.1);
  const { edges, counts } = histogram(samples);
  assert.equal(counts.length, 10);
  assert.equal(edges.length, 11);
  assert.equal(counts.reduce((a, b) => a + b, 0), 100);
  assert.equal(edges[0], 10);
  assert.ok(Math.abs(edges[10] - 10.9) < 1e-9);
  assert.deepEqual(histogram([3, 3, 3]), { edges: [3, 3], counts: [3] });
  assert.deepEqual(histogram([]), { edges: [], counts: [] });
  assert.equal(histogram(Array.from({ length: 10000 }, (_, i) => i)).counts.length, 40);
});

test("improvement over eager", () => {
  assert.ok(Math.abs(improvementPercent(1.25) - 20) < 1e-9);
  assert.ok(Math.abs(improvementPercent(0.5) + 100) < 1e-9);
  assert.equal(improvementPercent(null), null);
});

test("reproduce command: a one-cell matrix the CLI reads", () => {
  const job = { model: "google/vit-base-patch16-224", batch: 4, mode: "default", torch_build: "stable", gpu: "a100", runtime: "libtorch", repetition: 0 };
  const matrix = { measurement: { warmup: 10, min_iterations: 300, max_iterations: 300, min_duration_s: 0.5, max_duration_s: 120, target_ci_rel_width: 0.02 }, memory_limit_mb: 450, timeout_s: 600 };
  const text = reproduceCommand(job, matrix, { url: "http://127.0.0.1:8080", runId: 5, resultId: 12 });
  assert.equal(text, [
    "cat > benchfleet-run5-result12.yaml <<'EOF'",
    'name: "reproduce run 5 result 12"',
    'models: ["google/vit-base-patch16-224"]',
    "batch_sizes: [4]",
    'modes: ["default"]',
    'torch_builds: ["stable"]',
    'gpus: ["a100"]',
    'runtimes: ["libtorch"]',
    "measurement:",
    "  warmup: 10",
    "  min_iterations: 300",
    "  max_iterations: 300",
    "  min_duration_s: 0.5",
    "  max_duration_s: 120",
    "  target_ci_rel_width: 0.02",
    "memory_limit_mb: 450",
    "timeout_s: 600",
    "EOF",
    "BENCHFLEET_URL=http://127.0.0.1:8080 benchfleet submit benchfleet-run5-result12.yaml --wait",
  ].join("\n"));
});

test("status descriptions: OOM phase and bytes, job states", () => {
  assert.equal(describeDetail("oom", "phase=warmup bytes=2147483648: CUDA out of memory", fmtBytes),
    "out of memory in phase warmup, 2147483648 bytes (2.00 GiB) requested: CUDA out of memory");
  assert.equal(describeDetail("oom", "phase=load", fmtBytes), "out of memory in phase load");
  assert.equal(describeDetail("error", "boom", fmtBytes), "boom");
  assert.equal(describeDetail("not_run", "", fmtBytes), "not run (yet)");
  assert.equal(gridState({ status: "done", result: { id: 1, status: "oom" } }), "oom");
  assert.equal(gridState({ status: "running", result: null }), "running");
  assert.equal(badgeClass("oom_implied"), "b-oom_implied");
});

test("formatting", () => {
  assert.equal(fmtBytes(1536), "1.50 KiB");
  assert.equal(fmtBytes(12), "12 B");
  assert.equal(shortLabel("Image Classification/ViT"), "ViT");
  assert.equal(fmtAgo(new Date(1000).toISOString(), 66000), "1 min ago");
});

const tick = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

test("polling: again while the load asks, never after stop", async () => {
  let loads = 0;
  let more = true;
  const poller = new Poller(5, async () => { loads++; return more; });
  await poller.now();
  await tick(40);
  assert.ok(loads >= 3, `polled ${loads} times`);
  more = false;
  await tick(20);
  const settled = loads;
  await tick(30);
  assert.equal(loads, settled, "a load that asks for no more ends the polling");
  more = true;
  await poller.now();
  poller.stop();
  const stopped = loads;
  await tick(30);
  assert.equal(loads, stopped, "nothing after stop()");
  await poller.now();
  assert.equal(loads, stopped, "now() after stop() loads nothing");
});

test("polling: a newer load supersedes an older one's answer", async () => {
  const answers = [];
  let release;
  const slow = new Promise((resolve) => { release = resolve; });
  let call = 0;
  const poller = new Poller(1000, async (current) => {
    const mine = ++call;
    if (mine === 1) await slow;
    answers.push([mine, current()]);
    return false;
  });
  const first = poller.now();
  await poller.now();
  release();
  await first;
  assert.deepEqual(answers, [[2, true], [1, false]]);
  poller.stop();
});

test("durations: ms under a second, then s, min, h; four significant digits", () => {
  assert.equal(fmtDuration(0.4123), "0.412 ms");
  assert.equal(fmtDuration(9.3251), "9.325 ms");
  assert.equal(fmtDuration(74.352), "74.35 ms");
  assert.equal(fmtDuration(743.52), "743.5 ms");
  assert.equal(fmtDuration(999.96), "1.000 s", "rounding carries into the next unit");
  assert.equal(fmtDuration(74352.01753499996), "74.35 s", "a compile time");
  assert.equal(fmtDuration(599990), "10.00 min");
  assert.equal(fmtDuration(3599000), "59.98 min");
  assert.equal(fmtDuration(7200000), "2.000 h");
  assert.equal(fmtDuration(0), "0.000 ms");
  for (const v of [null, undefined, NaN, Infinity, "12"]) assert.equal(fmtDuration(v), "-", String(v));
});

test("counts, figures, sizes, CV and throughput carry their units", () => {
  assert.equal(fmtCount(74352.4), "74,352");
  assert.equal(fmtFigure(1), "1");
  assert.equal(fmtFigure(0.123456789), "0.1235");
  assert.equal(fmtFigure(12345.678), "12,346");
  assert.equal(fmtFigure(null), "-");
  assert.equal(fmtMiB(850), "850 MiB");
  assert.equal(fmtMiB(850.25), "850 MiB");
  assert.equal(fmtMiB(12.5), "12.50 MiB");
  assert.equal(fmtMiB(1536), "1.50 GiB");
  assert.equal(fmtCv(0.01234), "1.23%");
  assert.equal(fmtCv(0.1234), "12.3%");
  assert.equal(fmtThroughput(1234.5), "1,235 samples/s");
  assert.equal(fmtThroughput(12.345), "12.3 samples/s");
  assert.equal(fmtThroughput(0.5123), "0.512 samples/s");
  assert.equal(fmtThroughput(null), "-");
});

test("telemetry: the unit follows the key, before/after aside; never a raw float", () => {
  const cases = [
    ["compile_ms", 74352.01753499996, "74.35 s"],
    ["host_ms_per_iteration", 3.0123456, "3.012 ms"],
    ["walk_b4_first_ms", 812.345, "812.3 ms"],
    ["export_s", 12.5, "12.50 s"],
    ["load_s", 0.75, "750.0 ms"],
    ["peak_rss_bytes", 3221225472, "3.00 GiB"],
    ["memory_mb", 1536, "1.50 GiB"],
    ["before_sm_clock_mhz", 1410, "1,410 MHz"],
    ["sm_clock_mhz_after", 1395, "1,395 MHz"],
    ["after_temperature_c", 61, "61 °C"],
    ["after_power_w", 312.46, "312.5 W"],
    ["power_w_after", 75, "75.00 W"],
    ["after_throttle_reasons", 0, "0 (none)"],
    ["after_throttle_reasons", 4, "0x4"],
    ["samples_per_s", 333.33, "333 samples/s"],
    ["graphs", 1, "1"],
    ["something", 0.3333333333, "0.3333"],
    ["inductor_cache", "cold", "cold"],
    ["artifact_cached", true, "true"],
    ["missing", null, "null"],
  ];
  for (const [k, v, want] of cases) assert.equal(fmtTelemetry(k, v), want, k);
});

const col = (key, kind, header = key) => ({ key, kind, header });
const c = (status, extra = {}) => ({ status, text: status, result_ids: [], ...extra });

test("hiddenColumns: a finished table leaves out the columns empty for every model", () => {
  const table = {
    batch: 1,
    columns: [col("latency/s/eager", "latency_ms"), col("latency/u/default", "latency_ms"), col("latency/u/max", "latency_ms"),
      col("speedup/u/default", "speedup"), col("compile/u/default", "compile_ms")],
    rows: [
      { model: "m1", cells: [c("ok"), c("unsupported"), c("not_run"), c("unavailable"), c("unavailable")] },
      { model: "m2", cells: [c("oom"), c("unsupported"), c("not_run"), c("unavailable"), c("ok")] },
    ],
  };
  assert.deepEqual(hiddenColumns(table), [2, 3], "not run and unavailable everywhere; unsupported says something");
  assert.deepEqual(hiddenColumns(table, { final: false }), [], "a live run keeps every column: they fill as jobs end");
  const nothing = { ...table, rows: table.rows.map((r) => ({ ...r, cells: r.cells.map(() => c("not_run")) })) };
  assert.deepEqual(hiddenColumns(nothing), [], "nothing ran: the table keeps its shape");
  assert.deepEqual(hiddenColumns({ ...table, rows: [] }), [], "no rows: nothing to judge");
});

test("chartSpecs: the columns the table leaves out are left out of its figures too", () => {
  const lat = (build, mode) => ({ key: `latency/${build}/libtorch/${mode}`, kind: "latency_ms", header: `${build} ${mode}`, build, runtime: "libtorch", mode });
  const other = (kind, prefix, build) => ({ key: `${prefix}/${build}/libtorch/default`, kind, header: `${build} default ${prefix}`, build, runtime: "libtorch", mode: "default" });
  const table = {
    title: "a100 · batch 1", gpu: "a100", batch: 1,
    columns: [lat("stable", "eager"), lat("stable", "default"), lat("unstable", "eager"), lat("unstable", "default"),
      other("speedup", "speedup", "stable"), other("speedup", "speedup", "unstable"),
      other("compile_ms", "compile", "stable"), other("compile_ms", "compile", "unstable")],
    rows: ["m1", "m2"].map((model, i) => ({
      model, label: `Task/${model}`,
      cells: [c("ok", { value: 4 + i }), c("ok", { value: 3 + i }), c("ok", { value: 5 + i }), c("unsupported"),
        c("ok", { value: 1.3 }), c("unavailable"), c("ok", { value: 70000 }), c("unavailable")],
    })),
  };
  const hidden = hiddenColumns(table);
  assert.deepEqual(hidden.map((i) => table.columns[i].key), ["speedup/unstable/libtorch/default", "compile/unstable/libtorch/default"],
    "the fixture: the unstable build's speedup and compile columns are empty; its unsupported latency column says something");
  const all = chartSpecs(table, table.rows, "mean");
  assert.deepEqual(all.improvement.datasets.map((d) => d.label), ["stable default", "unstable default"], "without hidden: every column");
  assert.deepEqual(all.compile.datasets[1].gaps, ["unavailable", "unavailable"], "drawn as a row of gaps");
  const specs = chartSpecs(table, table.rows, "mean", { hidden });
  assert.deepEqual(specs.latency.datasets.map((d) => d.label), ["stable eager", "stable default", "unstable eager", "unstable default"],
    "latency: every column the table shows (the unsupported one with its gaps)");
  assert.deepEqual(specs.latency.datasets[3].gaps, ["unsupported", "unsupported"]);
  assert.deepEqual(specs.improvement.datasets.map((d) => d.label), ["stable default"], "improvement: the hidden speedup column left out");
  assert.deepEqual(specs.compile.datasets.map((d) => d.label), ["stable default compile"], "compile: the hidden compile column left out");
  assert.deepEqual(specs.latency.datasets.map((d) => d.color), all.latency.datasets.map((d) => d.color), "colours unchanged");
  assert.equal(specs.compile.datasets[0].color, all.compile.datasets[0].color, "a kept series keeps its colour");
  const onlyStable = { ...table, columns: table.columns.slice(0, 6), rows: table.rows.map((r) => ({ ...r, cells: r.cells.slice(0, 6) })) };
  assert.equal(chartSpecs(onlyStable, onlyStable.rows, "mean", { hidden: [4, 5] }).improvement, null, "every speedup column hidden: no improvement figure");
});

test("passRateParts: OOM, errors, wrong, unjudged and unsupported apart, from the report or counted from the column", () => {
  const key = "latency/stable/libtorch/default";
  const table = {
    columns: [col("latency/stable/libtorch/eager", "latency_ms"), col(key, "latency_ms")],
    rows: [
      ["ok", "pass"], ["ok", "pass"], ["oom"], ["oom_implied"], ["error"], ["timeout"], ["ok", "wrong"], ["ok", "unchecked"], ["not_run"],
      ["unsupported"],
    ].map(([status, accuracy], i) => ({ model: `m${i}`, cells: [c("ok"), c(status, accuracy ? { accuracy } : {})] })),
  };
  const old = { column: key, passed: 2, attempted: 8, text: "Pass rate stable (torch 2.5.1) - default: 2/8 (25%)" };
  const derived = passRateParts(old, table);
  assert.equal(derived.base, old.text);
  assert.deepEqual(derived.reasons.map((r) => r.text), ["2 OOM", "2 errors", "1 wrong", "1 not judged", "1 unsupported"],
    "the report's rule: an unsupported cell is counted apart, not as an error (it was not attempted)");
  assert.deepEqual(derived.reasons.map((r) => r.kind), ["oom", "error", "wrong", "unjudged", "unsupported"]);
  const attempted = derived.reasons.filter((r) => r.kind !== "unsupported").reduce((n, r) => n + r.n, old.passed);
  assert.equal(attempted, old.attempted, "passed and the failure reasons add up to the attempted cells");
  const served = { ...old, oom: 1, errors: 0, wrong: 1, unjudged: 0, text: `${old.text}: 1 OOM, 1 wrong` };
  const parts = passRateParts(served, table);
  assert.equal(parts.base, old.text, "the report's reasons are not repeated");
  assert.deepEqual(parts.reasons.map((r) => r.text), ["1 OOM", "1 wrong"], "the report's counts win over the cells");
  const none = passRateParts({ column: key, passed: 0, attempted: 0, oom: 0, errors: 0, wrong: 0, unjudged: 0, text: "Pass rate x (a) - default: 0/0 (-)" }, table);
  assert.deepEqual(none, { base: "Pass rate x (a) - default: 0/0 (-)", reasons: [] });
  const unsupported = passRateParts({ column: key, passed: 0, attempted: 0, oom: 0, errors: 0, wrong: 0, unjudged: 0, unsupported: 8,
    text: "Pass rate bookworm - default: 0/0 (-): 8 unsupported" }, table);
  assert.deepEqual(unsupported, { base: "Pass rate bookworm - default: 0/0 (-)", reasons: [{ kind: "unsupported", n: 8, text: "8 unsupported" }] },
    "nothing attempted: the rate is '-' and the cells are named unsupported");
  const mixed = passRateParts({ column: key, passed: 2, attempted: 3, oom: 0, errors: 0, wrong: 0, unjudged: 1, unsupported: 1,
    text: "Pass rate stable - max-autotune: 2/3 (66%): 1 not judged, 1 unsupported" }, table);
  assert.equal(mixed.base, "Pass rate stable - max-autotune: 2/3 (66%)");
  assert.deepEqual(mixed.reasons.map((r) => r.text), ["1 not judged", "1 unsupported"], "in the report's order");
  const before = passRateParts({ ...served, unsupported: undefined }, table);
  assert.deepEqual(before.reasons.map((r) => r.text), ["1 OOM", "1 wrong"], "a report before the unsupported count: none named");
});

test("cellThroughput and the latency tooltip: samples/s from the report, else batch x 1000 / ms", () => {
  assert.equal(cellThroughput(c("ok", { value: 4, value_ms: 4, throughput_per_s: 999 }), 8), 999);
  assert.equal(cellThroughput(c("ok", { value: 4, value_ms: 4 }), 8), 2000);
  assert.equal(cellThroughput(c("ok", { value: 4 }), undefined), null);
  assert.equal(cellThroughput(c("oom"), 8), null);
  const tip = cellTooltip(c("ok", { text: "3.000", value: 3, value_ms: 3, ci_low_ms: null, ci_high_ms: null, throughput_per_s: 333.33, compile_ms: 74352.01753499996, compile_cache: "cold" }),
    { kind: "latency_ms" }, "mean");
  assert.equal(tip, "mean latency 3.000 ms (333 samples/s); compile 74.35 s");
});

test("routes: the series search is a route param like the key parts", () => {
  const hash = "#/series?model=torchvision%2Fresnet18&gpu=a100&q=resnet18%20nightly";
  assert.equal(formatRoute(parseRoute(hash)), hash);
  assert.equal(parseRoute(hash).params.q, "resnet18 nightly");
});

test("seriesMatches: every word in the model id, label, GPU class, build, mode, dtype or runtime", () => {
  const s = { model: "torchvision/resnet18", gpu: "a100", torch_build: "nightly", mode: "default", dtype: "float32", runtime: "libtorch", batch: 4 };
  const hf = { ...s, model: "microsoft/resnet-18" };
  for (const q of ["resnet18", "RESNET18", "resnet-18", "vision/resnet18", "resnet18 a100", "resnet18 nightly default", "a100  ", "batch4", "float32 libtorch"]) {
    assert.equal(seriesMatches(s, q), true, q);
  }
  assert.equal(seriesMatches(hf, "resnet18"), true, "a substring of the id, punctuation aside");
  assert.equal(seriesMatches(s, ""), true, "no query: everything");
  assert.equal(seriesMatches(s, "resnet50"), false);
  assert.equal(seriesMatches(s, "resnet18 h100"), false, "every word must match");
  assert.equal(seriesMatches(s, "stable"), false);
  assert.equal(seriesMatches({ ...s, model: "x/y" }, "classification", "Image Classification/ResNet-18"), true, "the catalog label");
});
