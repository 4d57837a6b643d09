// The build summary's pure shaping (web/js/summary_charts.js) and its route, in node without a
// browser: a schedule summary's runs (oldest first) become four charts with a line per column,
// a column missing from a run or a figure without a value a gap (null, with why), never a zero;
// the table's rows newest first with each figure's unit, subline and tooltip.
// Run: node tests/browser/summary_charts_test.mjs
import test from "node:test";
import assert from "node:assert/strict";
import { parseRoute, formatRoute, withParams } from "../../web/js/route.js";
import {
  NOT_IN_RUN, SUMMARY_METRICS, columnLabel, failureText, fmtRate, fmtRatio, runLabel, runTick, runTitle, summaryCell, summaryCharts,
  summaryColumns, summaryRows, utcTime,
} from "../../web/js/summary_charts.js";

const col = (build, mode, figures = {}) => ({
  key: `${build}/python/${mode}`, build, runtime: "python", mode, torch_versions: [build === "stable" ? "2.6.0" : "2.7.0.dev20261130"],
  geomean_speedup: 1.42, speedup_covered: 9, speedup_total: 12,
  passed: 10, attempted: 12, pass_rate: 10 / 12, oom: 1, errors: 0, wrong: 1, unsupported: 0,
  compile_ms_median: 41250.5, memory_ratio_geomean: 1.12,
  ...figures,
});

// Three nights: the nightly's max-autotune column is missing on the second; on the third the
// nightly's default column covered nothing (every compiled cell out of memory).
const summary = {
  schedule: { id: 3, name: "nightly" },
  stat: "mean",
  runs: [
    { run_id: 10, name: "nightly", created_at: "2026-11-28T03:00:00.000Z", state: "done",
      columns: [col("stable", "default", { geomean_speedup: 1.3 }), col("nightly", "default", { geomean_speedup: 1.4 }),
        col("nightly", "max-autotune", { geomean_speedup: 1.6 })] },
    { run_id: 11, name: "nightly", created_at: "2026-11-29T03:00:00.000Z", state: "done",
      columns: [col("stable", "default", { geomean_speedup: 1.31 }), col("nightly", "default", { geomean_speedup: 1.45, pass_rate: 1, passed: 12, oom: 0, wrong: 0 })] },
    { run_id: 12, name: "nightly", created_at: "2026-11-30T03:00:00.000Z", state: "running",
      columns: [col("stable", "default", { geomean_speedup: 1.32, compile_ms_median: 950 }),
        col("nightly", "default", { geomean_speedup: null, speedup_covered: 0, passed: 0, pass_rate: 0, oom: 12, wrong: 0, compile_ms_median: null, memory_ratio_geomean: null }),
        col("nightly", "max-autotune", { geomean_speedup: 1.7, attempted: 0, passed: 0, pass_rate: null, oom: 0, wrong: 0, unsupported: 12 })] },
  ],
};

test("route: #/schedules/ID/summary with its stat and run count", () => {
  for (const hash of ["#/schedules/3/summary", "#/schedules/3/summary?stat=median", "#/schedules/3/summary?stat=median&limit=90"]) {
    assert.equal(formatRoute(parseRoute(hash)), hash, hash);
  }
  assert.deepEqual(parseRoute("#/schedules/3/summary?stat=median"), { view: "schedule_summary", id: 3, params: { stat: "median" } });
  assert.equal(parseRoute("#/schedules/x/summary").view, "notfound");
  assert.equal(parseRoute("#/schedules/3").view, "notfound");
  assert.equal(parseRoute("#/schedules").view, "schedules", "the list keeps its route");
  assert.equal(formatRoute(withParams(parseRoute("#/schedules/3/summary"), { limit: 90, stat: "median" })), "#/schedules/3/summary?stat=median&limit=90",
    "stat before limit, whatever order they were set in");
});

test("columns: every key once, the newest run's first, then ones only older runs have", () => {
  assert.deepEqual(summaryColumns(summary).map((c) => c.key), ["stable/python/default", "nightly/python/default", "nightly/python/max-autotune"]);
  const older = { runs: [summary.runs[0], summary.runs[1]] };
  assert.deepEqual(summaryColumns(older).map((c) => c.key), ["stable/python/default", "nightly/python/default", "nightly/python/max-autotune"],
    "a column dropped by the newest run comes last");
  assert.equal(summaryColumns(summary)[2].label, "nightly · python · max-autotune");
  assert.equal(columnLabel({ build: "stable", runtime: "libtorch", mode: "default" }), "stable · libtorch · default");
  assert.deepEqual(summaryColumns({ schedule: {}, runs: [] }), []);
});

test("charts: one per metric, a label per run oldest first, a line per column", () => {
  const charts = summaryCharts(summary);
  assert.deepEqual(charts.map((c) => c.metric), ["speedup", "pass_rate", "compile", "memory"]);
  assert.deepEqual(charts.map((c) => c.axis), ["speedup vs eager (×)", "pass rate (%)", "compile time (s)", "memory ratio (×)"]);
  for (const c of charts) {
    assert.deepEqual(c.labels, ["2026-11-28 #10", "2026-11-29 #11", "2026-11-30 #12"]);
    assert.deepEqual(c.runIds, [10, 11, 12]);
    assert.deepEqual(c.datasets.map((d) => d.label), ["stable · python · default", "nightly · python · default", "nightly · python · max-autotune"]);
    assert.deepEqual(c.datasets.map((d) => d.index), [0, 1, 2]);
  }
  assert.equal(charts[0].fullLabels[2], "run #12 nightly · 2026-11-30 03:00 UTC · running");
  const [speedup, pass, compile, memory] = charts;
  assert.deepEqual(speedup.datasets.map((d) => d.data), [[1.3, 1.31, 1.32], [1.4, 1.45, null], [1.6, null, 1.7]]);
  assert.deepEqual(speedup.datasets.map((d) => d.texts), [["1.30×", "1.31×", "1.32×"], ["1.40×", "1.45×", "-"], ["1.60×", "-", "1.70×"]]);
  assert.deepEqual(pass.datasets[1].data, [(10 / 12) * 100, 100, 0], "pass rate in percent; 0% is a value, not a gap");
  assert.deepEqual(pass.datasets[2].data, [(10 / 12) * 100, null, null]);
  assert.deepEqual(compile.datasets[0].data, [41.2505, 41.2505, 0.95], "compile time in seconds");
  assert.deepEqual(compile.datasets[0].texts, ["41.25 s", "41.25 s", "950.0 ms"]);
  assert.deepEqual(memory.datasets[1].data, [1.12, 1.12, null]);
});

test("charts: a gap says why (column not in the run, nothing covered, nothing attempted), never a zero", () => {
  const [speedup, pass, compile, memory] = summaryCharts(summary);
  assert.deepEqual(speedup.datasets[2].why, [null, NOT_IN_RUN, null], "max-autotune was not in run 11");
  assert.deepEqual(pass.datasets[2].why, [null, NOT_IN_RUN, "nothing attempted"], "run 12's max-autotune was all unsupported");
  assert.deepEqual(speedup.datasets[1].why, [null, null, "no speedup among 12 models"]);
  assert.equal(compile.datasets[1].why[2], "no compile time recorded");
  assert.equal(memory.datasets[1].why[2], "no memory ratio");
  for (const c of summaryCharts(summary)) {
    for (const d of c.datasets) {
      d.data.forEach((v, i) => assert.equal(v === null, d.why[i] !== null, `${c.metric} ${d.key} run ${i}: a value or a reason`));
    }
  }
  const zero = summaryCharts({ runs: [{ run_id: 1, created_at: "2026-11-30T03:00:00Z", columns: [col("stable", "default", { geomean_speedup: 0 })] }] });
  assert.deepEqual(zero[0].datasets[0].data, [0], "a real zero stays a zero");
  assert.deepEqual(summaryCharts({ schedule: { id: 1, name: "x" }, runs: [] }).map((c) => c.datasets), [[], [], [], []], "no runs: empty charts");
});

test("table rows: newest run first, a cell per column (null when the column is not in the run)", () => {
  const rows = summaryRows(summary);
  assert.deepEqual(rows.map((r) => [r.runId, r.state, r.createdAt]), [[12, "running", "2026-11-30T03:00:00.000Z"], [11, "done", "2026-11-29T03:00:00.000Z"], [10, "done", "2026-11-28T03:00:00.000Z"]]);
  assert.deepEqual(rows.map((r) => r.cells.map((c) => c?.key ?? null)), [
    ["stable/python/default", "nightly/python/default", "nightly/python/max-autotune"],
    ["stable/python/default", "nightly/python/default", null],
    ["stable/python/default", "nightly/python/default", "nightly/python/max-autotune"],
  ]);
  const texts = (cell) => SUMMARY_METRICS.map((m) => cell[m.id].text);
  assert.deepEqual(texts(rows[2].cells[0]), ["1.30×", "83.3%", "41.25 s", "1.12×"], "each figure with its unit");
  assert.deepEqual(texts(rows[0].cells[1]), ["-", "0.0%", "-", "-"], "nothing covered: no figure, 0% passed");
  assert.deepEqual(texts(rows[0].cells[2]), ["1.70×", "-", "41.25 s", "1.12×"]);
});

test("a cell's sublines and tooltips: torch versions, coverage, why cells did not pass", () => {
  const cell = summaryCell(col("nightly", "default"));
  assert.equal(cell.torch, "2.7.0.dev20261130");
  assert.equal(cell.speedup.sub, "torch 2.7.0.dev20261130");
  assert.equal(cell.speedup.title, "geomean of 9 of 12 models' speedups (wrong and nondeterministic ones left out) · torch 2.7.0.dev20261130");
  assert.equal(cell.pass_rate.sub, "10/12 · 1 OOM · 1 wrong");
  assert.equal(cell.pass_rate.title, "10 of 12 attempted cells passed (ok and accurate) · 1 OOM · 1 wrong · torch 2.7.0.dev20261130");
  assert.equal(cell.compile.title, "median compile time of its compiled results · torch 2.7.0.dev20261130");
  assert.equal(cell.memory.title, "geomean of eager peak / compiled peak memory · torch 2.7.0.dev20261130");
  assert.deepEqual([cell.speedup.value, cell.pass_rate.value, cell.compile.value, cell.memory.value], [1.42, 10 / 12, 41250.5, 1.12]);
  const none = summaryCell(col("stable", "default", { torch_versions: ["2.6.0", "2.6.1"], attempted: 0, passed: 0, pass_rate: null, oom: 0, wrong: 0, unsupported: 3,
    geomean_speedup: null, speedup_covered: 0, speedup_total: 0, compile_ms_median: null, memory_ratio_geomean: null }));
  assert.equal(none.speedup.sub, "torch 2.6.0, 2.6.1", "several torch versions");
  assert.deepEqual(SUMMARY_METRICS.map((m) => none[m.id].value), [null, null, null, null]);
  assert.equal(none.speedup.title, "no model with a speedup · torch 2.6.0, 2.6.1");
  assert.equal(none.pass_rate.title, "nothing attempted · torch 2.6.0, 2.6.1");
  assert.equal(none.pass_rate.sub, "", "no n/m when nothing was attempted");
  assert.equal(summaryCell(col("stable", "default", { torch_versions: [] })).compile.title, "median compile time of its compiled results · no torch version recorded");
  assert.equal(summaryCell(undefined), null);
});

test("formatting: ratios, rates, failure reasons, run labels", () => {
  assert.equal(fmtRatio(1.4249), "1.42×");
  assert.equal(fmtRatio(0.7), "0.70×");
  assert.equal(fmtRatio(null), "-");
  assert.equal(fmtRate(0.8333), "83.3%");
  assert.equal(fmtRate(1), "100.0%");
  assert.equal(fmtRate(undefined), "-");
  assert.equal(failureText({ oom: 2, errors: 1, wrong: 0 }), "2 OOM · 1 error");
  assert.equal(failureText({ oom: 0, errors: 3, wrong: 2 }), "3 errors · 2 wrong");
  assert.equal(failureText({ oom: 0, errors: 0, wrong: 0 }), "");
  assert.equal(runLabel({ run_id: 7, created_at: "2026-11-30T23:59:59.000Z" }), "2026-11-30 #7", "the UTC date, as the API writes it");
  assert.equal(runLabel({ run_id: 7, created_at: null }), "#7");
  assert.equal(runTitle({ run_id: 7, name: "", created_at: "2026-11-30T02:30:00Z", state: "done" }), "run #7 · 2026-11-30 02:30 UTC · done");
  assert.equal(utcTime("2026-11-30T02:30:00Z"), "2026-11-30 02:30 UTC");
  assert.equal(runTick("2026-11-30 #12"), "11-30 #12");
  assert.equal(runTick("2026-11-30 #12", true), "11-30", "narrow: the date only");
  assert.equal(runTick("#12", true), "#12", "no date: the id");
});
