// The batch-scaling section's pure logic (web/js/scaling.js, and the chart spec of
// web/js/views/batch_chart.js) in node, without a browser: which GPU class/dtype pairs have a
// section, which one and which model it shows, the report's batch tables shaped into a series per
// latency column with latency, throughput and statuses (an OOM at the largest batch a gap, never
// a zero). Run: node tests/browser/batch_scaling_logic_test.mjs
import test from "node:test";
import assert from "node:assert/strict";
import {
  batchScaling, fmtThroughput, gapSummary, pickGroup, pickModel, scalingGaps, scalingGroups, scalingModels, throughputPerSecond,
} from "../../web/js/scaling.js";
import { scalingChartSpec } from "../../web/js/views/batch_chart.js";

const MODES = ["eager", "default"];
const column = (kind, mode, build = "stable") => ({
  key: `${kind === "latency_ms" ? "latency" : kind}/${build}/libtorch/${mode}`, kind, build, runtime: "libtorch", mode,
  header: `${build} - ${mode}${kind === "speedup" ? " speedup" : ""}`,
});
const ok = (ms, extra = {}) => ({ status: "ok", text: ms.toFixed(3), value: ms, ci_low_ms: ms * 0.98, ci_high_ms: ms * 1.02, detail: "", result_ids: [Math.round(ms * 100)], ...extra });
const bad = (status, text, detail = "") => ({ status, text, value: null, ci_low_ms: null, ci_high_ms: null, detail, result_ids: status === "not_run" ? [] : [7] });
const speedup = () => ({ status: "ok", text: "1.25x", value: 1.25, detail: "", result_ids: [] });

// A report table: `cells[model][mode]` is a latency cell; a speedup column sits between.
function table({ gpu = "a100", batch, dtype = "float32", models, cells, modes = MODES }) {
  const columns = [...modes.map((m) => column("latency_ms", m)), column("speedup", "default")];
  return {
    gpu, gpu_label: gpu.toUpperCase(), batch, dtype, title: `${gpu.toUpperCase()} (batch size: ${batch})`, columns,
    rows: models.map(([model, label]) => ({ model, label, cells: [...modes.map((m) => cells[model][m]), speedup()] })),
  };
}

const VIT = ["google/vit-base-patch16-224", "Image Classification/ViT"];
const DETR = ["facebook/detr-resnet-50", "Object Detection/DETR"];
// Batches listed out of order on purpose (the report lists batch, then dtype; the logic sorts).
const TABLES = [
  table({ batch: 4, models: [VIT, DETR], cells: { [VIT[0]]: { eager: ok(20), default: ok(16) }, [DETR[0]]: { eager: ok(80), default: ok(64) } } }),
  table({ batch: 1, models: [VIT, DETR], cells: { [VIT[0]]: { eager: ok(10), default: ok(8) }, [DETR[0]]: { eager: ok(40), default: ok(32) } } }),
  table({
    batch: 16, models: [VIT, DETR],
    cells: {
      [VIT[0]]: { eager: ok(64, { throughput_per_s: 250.5 }), default: bad("oom", "OOM", "phase=measure bytes=3221225472: CUDA out of memory") },
      [DETR[0]]: { eager: bad("not_run", "-"), default: bad("error", "error", "RuntimeError: boom") },
    },
  }),
  // T4 ran a single batch size: no section for it.
  table({ gpu: "t4", batch: 1, models: [VIT], cells: { [VIT[0]]: { eager: ok(30), default: ok(25) } } }),
];

test("scaling groups: GPU class/dtype pairs with two or more batch sizes, batches ascending", () => {
  assert.deepEqual(scalingGroups(TABLES), [{ gpu: "a100", gpuLabel: "A100", dtype: "float32", batches: [1, 4, 16] }]);
  assert.deepEqual(scalingGroups(TABLES.filter((t) => t.batch === 1)), [], "a single batch size each: no section");
  const bf16 = TABLES.slice(0, 2).map((t) => ({ ...t, dtype: "bfloat16" }));
  assert.deepEqual(scalingGroups([...TABLES, ...bf16]).map((g) => `${g.gpu}/${g.dtype}:${g.batches.join(",")}`),
    ["a100/float32:1,4,16", "a100/bfloat16:1,4"], "one group per dtype");
  const noDtype = TABLES.map((t) => Object.fromEntries(Object.entries(t).filter(([key]) => key !== "dtype")));
  assert.equal(scalingGroups(noDtype)[0].dtype, "float32", "a table without dtype is float32");
});

test("scaling groups: the run view's filters pick the group when it is eligible", () => {
  const groups = [
    { gpu: "a100", dtype: "float32", batches: [1, 4] },
    { gpu: "a100", dtype: "bfloat16", batches: [1, 4] },
    { gpu: "h100", dtype: "float32", batches: [1, 8] },
  ];
  assert.equal(pickGroup(groups, { gpu: "a100", dtype: "bfloat16" }), groups[1]);
  assert.equal(pickGroup(groups, { gpu: "h100", dtype: "bfloat16" }), groups[2], "the GPU class when its dtype has one batch");
  assert.equal(pickGroup(groups, { gpu: "t4", dtype: "float32" }), groups[0], "the first when the filtered GPU has one batch");
  assert.equal(pickGroup(groups, {}), groups[0]);
  assert.equal(pickGroup([], { gpu: "a100" }), null);
});

test("scaling models: the group's models in table order; the asked one, else the filter's, else the first", () => {
  const group = scalingGroups(TABLES)[0];
  const models = scalingModels(TABLES, group);
  assert.deepEqual(models, [{ model: VIT[0], label: VIT[1] }, { model: DETR[0], label: DETR[1] }]);
  assert.equal(pickModel(models, {}).model, VIT[0], "the first by default");
  assert.equal(pickModel(models, { model: DETR[0] }).model, DETR[0], "the one asked for");
  assert.equal(pickModel(models, { model: "gone/model", q: "detr" }).model, DETR[0], "an unknown model: the filter's first match");
  assert.equal(pickModel(models, { q: "object detection" }).model, DETR[0], "the filter matches labels too");
  assert.equal(pickModel(models, { q: "nothing matches" }).model, VIT[0]);
  assert.equal(pickModel([], {}), null);
});

test("batch scaling: a series per latency column across batches, latency, throughput and statuses", () => {
  const group = scalingGroups(TABLES)[0];
  const s = batchScaling(TABLES, group, VIT[0]);
  assert.equal(s.label, "Image Classification/ViT");
  assert.deepEqual(s.batches, [1, 4, 16]);
  assert.deepEqual(s.series.map((x) => x.key), ["latency/stable/libtorch/eager", "latency/stable/libtorch/default"], "latency columns only, speedup left out");
  assert.deepEqual(s.series.map((x) => x.label), ["stable · libtorch · eager", "stable · libtorch · default"]);
  const [eager, compiled] = s.series;
  assert.deepEqual(eager.points.map((p) => p.latencyMs), [10, 20, 64]);
  // batch x 1000 / latency, but the report's own throughput_per_s when it has one (batch 16).
  assert.deepEqual(eager.points.map((p) => p.throughputPerS), [100, 200, 250.5]);
  assert.deepEqual(eager.points.map((p) => p.status), ["ok", "ok", "ok"]);
  assert.deepEqual(eager.points.map((p) => [p.ciLowMs, p.ciHighMs]), [[9.8, 10.2], [19.6, 20.4], [62.72, 65.28]]);
  assert.deepEqual(compiled.points.map((p) => p.latencyMs), [8, 16, null], "the OOM at 16 has no latency (not 0)");
  assert.deepEqual(compiled.points.map((p) => p.throughputPerS), [125, 250, null], "nor a throughput");
  assert.deepEqual(compiled.points.map((p) => p.status), ["ok", "ok", "oom"]);
  assert.equal(compiled.points[2].text, "OOM");
  assert.equal(compiled.points[2].detail, "phase=measure bytes=3221225472: CUDA out of memory");
  assert.equal(compiled.points[2].resultId, 7);
  assert.equal(gapSummary(compiled), "OOM at 16");
  assert.equal(gapSummary(eager), "");
});

test("batch scaling: another model, not run and failed points, columns or rows a table lacks", () => {
  const group = scalingGroups(TABLES)[0];
  const s = batchScaling(TABLES, group, DETR[0]);
  assert.deepEqual(s.series.map((x) => x.points.map((p) => p.latencyMs)), [[40, 80, null], [32, 64, null]]);
  assert.deepEqual(s.series.map((x) => x.points.map((p) => p.text)), [["40.000", "80.000", "not run"], ["32.000", "64.000", "error"]]);
  assert.deepEqual(scalingGaps(s).map((g) => [g.series, g.batch, g.status, g.text]),
    [["stable · libtorch · eager", 16, "not_run", "not run"], ["stable · libtorch · default", 16, "error", "error"]]);
  // Batch 4 without the default column and without DETR's row: not_run points, never skipped.
  const partial = [TABLES[1], { ...table({ batch: 4, models: [VIT], modes: ["eager"], cells: { [VIT[0]]: { eager: ok(20) } } }) }];
  const p = batchScaling(partial, scalingGroups(partial)[0], VIT[0]);
  assert.deepEqual(p.series.map((x) => x.points.map((pt) => pt.status)), [["ok", "ok"], ["ok", "not_run"]]);
  const q = batchScaling(partial, scalingGroups(partial)[0], DETR[0]);
  assert.deepEqual(q.series.map((x) => x.points.map((pt) => pt.status)), [["ok", "not_run"], ["ok", "not_run"]]);
  // An ok cell without a value is not drawn as a number.
  const broken = [TABLES[1], table({ batch: 2, models: [VIT], cells: { [VIT[0]]: { eager: { ...ok(1), value: null }, default: ok(9) } } })];
  const b = batchScaling(broken, scalingGroups(broken)[0], VIT[0]);
  assert.deepEqual(b.series[0].points.map((pt) => [pt.batch, pt.latencyMs, pt.status]), [[1, 10, "ok"], [2, null, "invalid"]]);
});

test("throughput: samples a second, and how it is shown", () => {
  assert.equal(throughputPerSecond(16, 64), 250);
  assert.equal(throughputPerSecond(1, 0.5), 2000);
  assert.equal(throughputPerSecond(4, null), null);
  assert.equal(throughputPerSecond(4, 0), null);
  assert.deepEqual([2000, 250.4, 81.25, 3.14159, null].map(fmtThroughput), ["2000", "250", "81.3", "3.14", "-"]);
});

test("chart spec: a latency and a throughput line per series, the OOM a labelled marker, never a zero", () => {
  const s = batchScaling(TABLES, scalingGroups(TABLES)[0], VIT[0]);
  const spec = scalingChartSpec(s, "median");
  assert.equal(spec.title, "Image Classification/ViT · A100 · float32: median latency and throughput by batch size");
  assert.deepEqual(spec.labels, ["1", "4", "16"]);
  assert.deepEqual(spec.datasets.map((d) => [d.kind, d.label]), [
    ["latency", "stable · libtorch · eager · latency"],
    ["throughput", "stable · libtorch · eager · throughput"],
    ["latency", "stable · libtorch · default · latency (no value: OOM at 16)"],
    ["throughput", "stable · libtorch · default · throughput"],
    ["gap", "stable · libtorch · default: no value"],
  ]);
  assert.deepEqual(spec.datasets[2].data, [8, 16, null]);
  assert.deepEqual(spec.datasets[3].data, [125, 250, null]);
  assert.deepEqual(spec.datasets[4].texts, [null, null, "OOM"]);
  assert.deepEqual(spec.datasets[4].data.map((y) => y !== null), [false, false, true], "a marker at batch 16 only");
  assert.equal(spec.datasets[0].color, spec.datasets[1].color, "a series' two lines share a colour");
  assert.notEqual(spec.datasets[0].color, spec.datasets[2].color);
});
