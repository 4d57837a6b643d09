// A schedule's builds over time (GET /api/v1/schedules/{id}/summary): per run of the schedule,
// per compiled column (build · runtime · mode), the geomean speedup against eager, the pass rate,
// the median compile time and the geomean memory ratio, shaped for the summary page's four line
// charts (one line per column, runs oldest first, time left to right) and its table (newest run
// first). Pure: no DOM, tested in node.
//
//   const columns = summaryColumns(summary);      // [{key, build, runtime, mode, label, eager}]
//   const charts = summaryCharts(summary);        // per metric: labels, and per column its points
//   charts[0].datasets[1].data[3]                 // null: a gap, never a zero; .why[3] says why
//   const rows = summaryRows(summary);            // newest run first, a cell per column
// A figure a run does not have (its column not in that run, nothing covered, nothing attempted)
// is null in the charts and "-" in the table, with the reason alongside.

import { fmtDuration } from "./format.js";

const finite = (v) => typeof v === "number" && Number.isFinite(v);

// "1.42×"
export function fmtRatio(v) {
  return finite(v) ? `${v.toFixed(2)}×` : "-";
}

// A fraction as a percentage: 0.8333 -> "83.3%".
export function fmtRate(v) {
  return finite(v) ? `${(v * 100).toFixed(1)}%` : "-";
}

const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

// Why the attempted cells of a column did not pass: "1 OOM · 2 errors · 1 wrong"; "" when all did.
export function failureText(col) {
  const parts = [];
  if (col.oom) parts.push(`${col.oom} OOM`);
  if (col.errors) parts.push(plural(col.errors, "error"));
  if (col.wrong) parts.push(`${col.wrong} wrong`);
  return parts.join(" · ");
}

// The four figures of a column, in the order the page shows them. `chart(v)`: the value drawn
// (pass rate in percent, compile time in seconds); `text(col)`: the table's figure with its unit;
// `missing(col)`: why the figure is null.
export const SUMMARY_METRICS = [
  {
    id: "speedup", field: "geomean_speedup", title: "Geomean speedup vs eager", axis: "speedup vs eager (×)", unit: "×",
    caption: "Geomean over the models of eager latency / compiled latency; higher is better.",
    chart: (v) => v,
    text: (col) => fmtRatio(col.geomean_speedup),
    missing: (col) => (col.speedup_total ? `no speedup among ${col.speedup_total} models` : "no model with a speedup"),
  },
  {
    id: "pass_rate", field: "pass_rate", title: "Pass rate", axis: "pass rate (%)", unit: "%",
    caption: "Compiled cells ok and accurate, of those that ran; higher is better.",
    chart: (v) => v * 100,
    text: (col) => fmtRate(col.pass_rate),
    missing: () => "nothing attempted",
  },
  {
    id: "compile", field: "compile_ms_median", title: "Median compile time", axis: "compile time (s)", unit: "s",
    caption: "Median compile time of the compiled results; lower is better.",
    chart: (v) => v / 1000,
    text: (col) => fmtDuration(col.compile_ms_median),
    missing: () => "no compile time recorded",
  },
  {
    id: "memory", field: "memory_ratio_geomean", title: "Geomean memory ratio", axis: "memory ratio (×)", unit: "×",
    caption: "Geomean over the models of eager peak memory / compiled peak memory; higher is better.",
    chart: (v) => v,
    text: (col) => fmtRatio(col.memory_ratio_geomean),
    missing: () => "no memory ratio",
  },
];

export const NOT_IN_RUN = "not in this run";

// "stable · python · default"
export function columnLabel(col) {
  return [col.build, col.runtime, col.mode].join(" · ");
}

// Every column of the summary's runs, once: those of the newest run in its order, then columns
// only older runs have (a build dropped from the matrix), newest first.
export function summaryColumns(summary) {
  const seen = new Map();
  for (const run of [...(summary.runs ?? [])].reverse()) {
    for (const c of run.columns ?? []) {
      if (!seen.has(c.key)) {
        seen.set(c.key, { key: c.key, build: c.build, runtime: c.runtime, mode: c.mode, label: columnLabel(c), eager: c.mode === "eager" });
      }
    }
  }
  return [...seen.values()];
}

// The date part of an API time as written (UTC): "2026-11-30T03:00:00.000Z" -> "2026-11-30".
function utcDate(iso) {
  return /^\d{4}-\d{2}-\d{2}/.exec(iso ?? "")?.[0] ?? "";
}
// "2026-11-30 03:00 UTC"
export function utcTime(iso) {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2})/.exec(iso ?? "");
  return m ? `${m[1]} ${m[2]} UTC` : iso ?? "";
}

// The x label of a run: its UTC date and id, "2026-11-30 #12" (two runs a day stay apart).
export function runLabel(run) {
  const date = utcDate(run.created_at);
  return date ? `${date} #${run.run_id}` : `#${run.run_id}`;
}

// An axis tick of runLabel(): the year left out ("11-30 #12"); on a narrow chart the date only.
export function runTick(label, narrow = false) {
  const m = /^\d{4}-(\d{2}-\d{2})( #\d+)$/.exec(label);
  if (!m) return label;
  return narrow ? m[1] : `${m[1]}${m[2]}`;
}

// The tooltip title of a run: "run #12 nightly · 2026-11-30 03:00 UTC · done".
export function runTitle(run) {
  return [`run #${run.run_id}${run.name ? ` ${run.name}` : ""}`, utcTime(run.created_at), run.state].filter(Boolean).join(" · ");
}

// Per metric of SUMMARY_METRICS: {metric, title, axis, unit, labels, fullLabels, runIds,
// datasets: [{key, label, eager, index, data, why, texts}]}: data[i] is the value drawn for run i
// (null: a gap), why[i] the reason it is null, texts[i] the figure with its unit.
export function summaryCharts(summary) {
  const runs = summary.runs ?? [];
  const columns = summaryColumns(summary);
  const byRun = runs.map((run) => new Map((run.columns ?? []).map((c) => [c.key, c])));
  const labels = runs.map(runLabel);
  const fullLabels = runs.map(runTitle);
  const runIds = runs.map((r) => r.run_id);
  return SUMMARY_METRICS.map((metric) => ({
    metric: metric.id, title: metric.title, axis: metric.axis, unit: metric.unit, caption: metric.caption,
    labels, fullLabels, runIds,
    datasets: columns.map((col, index) => {
      const data = [];
      const why = [];
      const texts = [];
      for (const cols of byRun) {
        const c = cols.get(col.key);
        const v = c ? c[metric.field] : null;
        if (c && finite(v)) {
          data.push(metric.chart(v));
          why.push(null);
          texts.push(metric.text(c));
        } else {
          data.push(null);
          why.push(c ? metric.missing(c) : NOT_IN_RUN);
          texts.push("-");
        }
      }
      return { key: col.key, label: col.label, eager: col.eager, index, data, why, texts };
    }),
  }));
}

// A table cell of a column in a run: per metric {value, text, sub, title} (the figure with its
// unit, a subline, a tooltip ending with the torch versions); null when the column is not in the run.
export function summaryCell(col) {
  if (!col) return null;
  const torch = (col.torch_versions ?? []).join(", ");
  const failures = failureText(col);
  const about = {
    speedup: `geomean of ${col.speedup_covered} of ${col.speedup_total} models' speedups (wrong and nondeterministic ones left out)`,
    pass_rate: [`${col.passed} of ${col.attempted} attempted cells passed (ok and accurate)`, failures,
      col.unsupported ? `${col.unsupported} unsupported, not counted` : ""].filter(Boolean).join(" · "),
    compile: "median compile time of its compiled results",
    memory: "geomean of eager peak / compiled peak memory",
  };
  const sub = {
    speedup: torch ? `torch ${torch}` : "",
    pass_rate: col.attempted ? `${col.passed}/${col.attempted}${failures ? ` · ${failures}` : ""}` : "",
    compile: "",
    memory: "",
  };
  const cell = { key: col.key, torch };
  for (const m of SUMMARY_METRICS) {
    const value = finite(col[m.field]) ? col[m.field] : null;
    cell[m.id] = {
      value, text: m.text(col), sub: sub[m.id],
      title: `${value === null ? m.missing(col) : about[m.id]} · ${torch ? `torch ${torch}` : "no torch version recorded"}`,
    };
  }
  return cell;
}

// The table's rows, newest run first: {runId, name, createdAt, state, cells} with a cell per
// column of summaryColumns(summary) (null: the column is not in that run).
export function summaryRows(summary, columns = summaryColumns(summary)) {
  return [...(summary.runs ?? [])].reverse().map((run) => {
    const byKey = new Map((run.columns ?? []).map((c) => [c.key, c]));
    return {
      runId: run.run_id, name: run.name, createdAt: run.created_at, state: run.state,
      cells: columns.map((c) => summaryCell(byKey.get(c.key))),
    };
  });
}
