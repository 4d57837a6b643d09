// What each status looks like: the badge class and label of report cells and progress-grid
// squares (docs/design.md §5: every verdict distinct, none a speed of 0). Pure.

// The statuses and their labels are the programs' own (common/rules/statuses.json, served at
// /rules/statuses.json).
import STATUSES from "../rules/statuses.json" with { type: "json" };

// Report latency cells: ok, a result verdict, "failed" or "not_run"; speedup cells: ok or
// "unavailable". The text shown is always the report's own `text`.
export const CELL_STATUS_LABELS = STATUSES.labels;

// A CSS-safe class for a status: "b-oom_implied".
export function badgeClass(status) {
  return `b-${String(status).replace(/[^a-z_]/gi, "")}`;
}

// Progress-grid state of a job: the verdict once done, else the job status; verdicts first, then
// the jobs ended without one, then the active ones, the furthest along first.
export const GRID_STATES = [
  ...STATUSES.results,
  ...STATUSES.jobs.ended.filter((s) => s !== "done"),
  ...[...STATUSES.jobs.active].reverse(),
];
export function gridState(job) {
  if (job.status === "done" && job.result) return job.result.status;
  if (job.status === "done") return "ok";
  return job.status;
}

// The report's tooltip text, made readable: "phase=warmup bytes=123: msg" (an oom) becomes
// "out of memory in phase warmup, 123 bytes (123 B) requested: msg".
export function describeDetail(status, detail, fmtBytes) {
  if (!detail) return CELL_STATUS_LABELS[status] ?? status;
  const m = /^phase=(\w+)(?: bytes=(\d+))?(?:: ([\s\S]*))?$/.exec(detail);
  if (m && (status === "oom" || status === "oom_implied")) {
    let s = `out of memory in phase ${m[1]}`;
    if (m[2]) s += `, ${m[2]} bytes (${fmtBytes(Number(m[2]))}) requested`;
    if (m[3]) s += `: ${m[3]}`;
    return s;
  }
  return detail;
}
