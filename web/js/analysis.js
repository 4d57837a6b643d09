// Pure computations behind the compare view and the charts: side-by-side tables of two
// (run, build) sides with the ratio per cell and the coordinator's verdict on it, the
// histogram of a result's samples, and the improvement over eager. Tested in node.

// A comparison's verdicts are the coordinator's (GET /compare, rules/change_rule.h: the within-run
// CIs apart and the change beyond the run-to-run noise), so the CLI, the exports and this view
// read one rule. judgedCells indexes its cells for compareTables.
//   judgedCells(comparison).get(judgedKey({gpu, batch, dtype}, model, runtime, mode)) -> {verdict, why, ...}
export function judgedKey(table, model, runtime, mode) {
  return [table.gpu, table.batch, table.dtype ?? "float32", model, runtime, mode].join("\u0000");
}
export function judgedCells(comparison) {
  return new Map((comparison?.cells ?? []).map((c) => [judgedKey(c, c.model, c.runtime, c.mode), c]));
}

// Every torch version the results of `build` recorded in a report (its columns'
// torch_versions, over runtimes and tables), exact and in version order: ["2.5.1", "2.6.0+debian"].
export function buildTorchVersions(report, build) {
  const seen = new Set();
  for (const table of report.tables) {
    for (const col of table.columns) if (col.build === build) for (const v of col.torch_versions ?? []) seen.add(v);
  }
  return [...seen].sort((x, y) => x.localeCompare(y, "en", { numeric: true }));
}

// Latency columns of `table` for one torch build, keyed "runtime/mode".
function latencyColumns(table, build) {
  const out = new Map();
  table.columns.forEach((col, index) => {
    if (col.kind === "latency_ms" && col.build === build) out.set(`${col.runtime}/${col.mode}`, { col, index });
  });
  return out;
}

// Compares side B against side A for one GPU class x batch table of each.
// `ratio` is A's latency / B's latency: above 1, B is faster (like the report's speedups).
// A cell pair is `flagged` when either side carries a noise flag; with excludeFlagged, the
// geomeans leave such pairs out and say how many (as the report's geomeans do).
// Each pair's verdict (and why) is the coordinator's, from `judged` (judgedCells): "unknown" for a
// pair it did not judge.
//   compareTables({table: tA, build: "stable"}, {table: tB, build: "nightly"}, {excludeFlagged: true, judged})
//   -> {columns: [{key, runtime, mode}], rows: [{model, label, cells: [{a, b, ratio, text, verdict, why, flags}]}],
//       geomeans: [{key, value, covered, total, excluded, text}]}
export function compareTables(sideA, sideB, { excludeFlagged = false, judged = new Map() } = {}) {
  const colsA = latencyColumns(sideA.table, sideA.build);
  const colsB = latencyColumns(sideB.table, sideB.build);
  const keys = [...colsA.keys()].filter((k) => colsB.has(k));
  const columns = keys.map((key) => {
    const { col } = colsA.get(key);
    return { key, runtime: col.runtime, mode: col.mode };
  });

  const rowsB = new Map(sideB.table.rows.map((r) => [r.model, r]));
  const models = sideA.table.rows.map((r) => r.model);
  for (const r of sideB.table.rows) if (!models.includes(r.model)) models.push(r.model);
  const rowsA = new Map(sideA.table.rows.map((r) => [r.model, r]));

  const rows = models.map((model) => {
    const ra = rowsA.get(model);
    const rb = rowsB.get(model);
    const cells = keys.map((key) => {
      const a = ra ? ra.cells[colsA.get(key).index] : null;
      const b = rb ? rb.cells[colsB.get(key).index] : null;
      const { runtime, mode } = colsA.get(key).col;
      return compareCells(a, b, judged.get(judgedKey(sideA.table, model, runtime, mode)));
    });
    return { model, label: (ra || rb).label, cells };
  });

  const geomeans = keys.map((key, i) => {
    const pairs = rows.map((r) => r.cells[i]).filter((c) => c.ratio !== null);
    const kept = excludeFlagged ? pairs.filter((c) => !c.flags.length) : pairs;
    const excluded = pairs.length - kept.length;
    const value = kept.length ? Math.exp(kept.reduce((s, c) => s + Math.log(c.ratio), 0) / kept.length) : null;
    const coverage = `${kept.length}/${rows.length}${excluded ? `; ${excluded} flagged excluded` : ""}`;
    const text = `Geomean B vs A ${columns[i].mode}: ${value === null ? "-" : `${value.toFixed(2)}x`} (${coverage})`;
    return { key, value, covered: kept.length, total: rows.length, excluded, text };
  });
  return { columns, rows, geomeans };
}

// `flags`: the union of both sides' noise flags, sorted (a ratio of a noisy side is noisy);
// `judged`: the coordinator's cell for the pair, whose verdict it takes.
export function compareCells(a, b, judged) {
  const usable = (c) => c && c.status === "ok" && Number.isFinite(c.value) && c.value > 0;
  if (!usable(a) || !usable(b)) {
    return { a, b, ratio: null, text: "-", verdict: "unavailable", flags: [] };
  }
  const ratio = a.value / b.value;
  const flags = [...new Set([...(a.flags ?? []), ...(b.flags ?? [])])].sort();
  return { a, b, ratio, text: `${ratio.toFixed(2)}x`, verdict: judged?.verdict ?? "unknown", why: judged?.why ?? "", flags };
}

// Equal-width histogram of `samples` (ms): k = clamp(ceil(sqrt(n)), 5, 40) bins over [min, max].
//   -> {edges: [k + 1 numbers], counts: [k numbers]}
export function histogram(samples, maxBins = 40) {
  const n = samples.length;
  if (n === 0) return { edges: [], counts: [] };
  let min = Infinity;
  let max = -Infinity;
  for (const v of samples) { if (v < min) min = v; if (v > max) max = v; }
  if (min === max) return { edges: [min, max], counts: [n] };
  const k = Math.max(5, Math.min(maxBins, Math.ceil(Math.sqrt(n))));
  const width = (max - min) / k;
  const counts = new Array(k).fill(0);
  for (const v of samples) counts[Math.min(k - 1, Math.floor((v - min) / width))]++;
  const edges = Array.from({ length: k + 1 }, (_, i) => min + i * width);
  return { edges, counts };
}

// Percentage of eager's time a compiled mode saves: speedup 1.25x -> 20%.
export function improvementPercent(speedup) {
  return Number.isFinite(speedup) && speedup > 0 ? (1 - 1 / speedup) * 100 : null;
}
