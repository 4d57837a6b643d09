// Batch scaling: how one model's latency and throughput move with the batch size, read from the
// run report's tables (one per GPU class x batch x dtype). Pure: no DOM, tested in node.
//
//   const groups = scalingGroups(report.tables);        // GPU class/dtype with >= 2 batch sizes
//   const group = pickGroup(groups, { gpu, dtype });     // the run view's filters, if eligible
//   const models = scalingModels(report.tables, group);
//   const s = batchScaling(report.tables, group, pickModel(models, { model, q }).model);
//   s.series[0].points[2]  // {batch: 16, status: "oom", text: "OOM", latencyMs: null, ...}
// A point without a value (OOM, error, not run...) keeps its status and text: a gap, never a 0.

const dtypeOf = (table) => table.dtype ?? "float32";

// The GPU class/dtype pairs of `tables` with at least two batch sizes, in report order:
// [{gpu, gpuLabel, dtype, batches (ascending)}].
export function scalingGroups(tables) {
  const groups = new Map();
  for (const t of tables) {
    const key = `${t.gpu}/${dtypeOf(t)}`;
    if (!groups.has(key)) groups.set(key, { gpu: t.gpu, gpuLabel: t.gpu_label ?? t.gpu, dtype: dtypeOf(t), batches: [] });
    const g = groups.get(key);
    if (!g.batches.includes(t.batch)) g.batches.push(t.batch);
  }
  return [...groups.values()]
    .map((g) => ({ ...g, batches: [...g.batches].sort((a, b) => a - b) }))
    .filter((g) => g.batches.length >= 2);
}

// "a100/float32": the value of a group's selector option.
export function groupKey(group) { return `${group.gpu}/${group.dtype}`; }

// The group the run view's filters name; else one of its GPU class; else the first. Null when
// there is none.
export function pickGroup(groups, { gpu, dtype } = {}) {
  return groups.find((g) => g.gpu === gpu && g.dtype === dtype) ??
    groups.find((g) => g.gpu === gpu) ?? groups[0] ?? null;
}

function tablesOf(tables, group) {
  return tables.filter((t) => t.gpu === group.gpu && dtypeOf(t) === group.dtype)
    .sort((a, b) => a.batch - b.batch);
}

// The models of a group's tables, in the order the tables list them: [{model, label}].
export function scalingModels(tables, group) {
  const seen = new Map();
  for (const t of tablesOf(tables, group)) {
    for (const r of t.rows) if (!seen.has(r.model)) seen.set(r.model, { model: r.model, label: r.label });
  }
  return [...seen.values()];
}

// The model asked for when it is there; else the first matching the model filter `q` (as the
// tables filter: label or id, any case); else the first. Null without models.
export function pickModel(models, { model, q } = {}) {
  const asked = models.find((m) => m.model === model);
  if (asked) return asked;
  const needle = (q ?? "").toLowerCase();
  return (needle && models.find((m) => `${m.label} ${m.model}`.toLowerCase().includes(needle))) || models[0] || null;
}

// Samples a second at `batch` samples per call of `latencyMs`; null without a latency.
export function throughputPerSecond(batch, latencyMs) {
  return Number.isFinite(latencyMs) && latencyMs > 0 ? (batch * 1000) / latencyMs : null;
}

// What a point without a value is called on the chart: the cell's own text ("OOM",
// "OOM (implied)", "error"...), "not run" for a cell not run (yet).
export function gapLabel(status, text) {
  if (status === "not_run") return "not run";
  return text || status;
}

// One model across a group's batch sizes: {gpu, gpuLabel, dtype, model, label, batches,
// series: [{key, build, runtime, mode, label, points: [{batch, status, text, latencyMs,
// throughputPerS, ciLowMs, ciHighMs, detail, resultId}]}]}, a series per latency column
// (build, runtime, mode) of any of the tables, in the order of their columns. A latency comes
// from an ok cell only; the throughput is the cell's `throughput_per_s` when the report has it,
// else batch x 1000 / latency. A column or model a table lacks is a "not_run" point.
export function batchScaling(tables, group, model) {
  const ofGroup = tablesOf(tables, group);
  const columns = new Map();
  for (const t of ofGroup) {
    for (const c of t.columns) {
      if (c.kind !== "latency_ms" || columns.has(c.key)) continue;
      columns.set(c.key, { key: c.key, build: c.build, runtime: c.runtime, mode: c.mode, label: [c.build, c.runtime, c.mode].join(" · ") });
    }
  }
  const label = ofGroup.flatMap((t) => t.rows).find((r) => r.model === model)?.label ?? model;
  const series = [...columns.values()].map((col) => ({
    ...col,
    points: ofGroup.map((t) => pointOf(t, col.key, model)),
  }));
  return { gpu: group.gpu, gpuLabel: group.gpuLabel, dtype: group.dtype, model, label, batches: ofGroup.map((t) => t.batch), series };
}

function pointOf(table, columnKey, model) {
  const c = table.columns.findIndex((col) => col.key === columnKey);
  const row = table.rows.find((r) => r.model === model);
  const cell = c >= 0 && row ? row.cells[c] : null;
  const batch = table.batch;
  if (!cell) {
    return { batch, status: "not_run", text: "not run", latencyMs: null, throughputPerS: null, ciLowMs: null, ciHighMs: null, detail: "", resultId: null };
  }
  const ok = cell.status === "ok" && Number.isFinite(cell.value);
  const status = cell.status === "ok" && !ok ? "invalid" : cell.status;
  const latencyMs = ok ? cell.value : null;
  const reported = cell.throughput_per_s;
  return {
    batch,
    status,
    text: ok ? cell.text : gapLabel(status, cell.text),
    latencyMs,
    throughputPerS: ok ? (Number.isFinite(reported) ? reported : throughputPerSecond(batch, latencyMs)) : null,
    ciLowMs: ok && Number.isFinite(cell.ci_low_ms) ? cell.ci_low_ms : null,
    ciHighMs: ok && Number.isFinite(cell.ci_high_ms) ? cell.ci_high_ms : null,
    detail: cell.detail ?? "",
    resultId: cell.result_ids?.[0] ?? null,
  };
}

// The points without a value, in series order: [{series, batch, status, text, detail}].
export function scalingGaps(scaling) {
  return scaling.series.flatMap((s) => s.points.filter((p) => p.latencyMs === null)
    .map((p) => ({ series: s.label, key: s.key, batch: p.batch, status: p.status, text: p.text, detail: p.detail })));
}

// "OOM at 16; error at 32": a series' gaps, for its legend entry ("" when it has none).
export function gapSummary(series) {
  return series.points.filter((p) => p.latencyMs === null).map((p) => `${p.text} at ${p.batch}`).join("; ");
}

// Samples a second as shown: whole from 100 on, else one decimal from 10 on, else two.
export function fmtThroughput(v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return "-";
  if (v >= 100) return v.toFixed(0);
  if (v >= 10) return v.toFixed(1);
  return v.toFixed(2);
}
