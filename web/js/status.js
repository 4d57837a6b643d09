// What each status looks like: the badge class and label of report cells and progress-grid
// squares (docs/design.md §5: every verdict distinct, none a speed of 0). Pure.

// Report latency cells: ok, a result verdict, "failed" or "not_run"; speedup cells: ok or
// "unavailable". The text shown is always the report's own `text`.
export const CELL_STATUS_LABELS = {
  ok: "measured",
  oom: "out of memory",
  oom_implied: "out of memory (implied by a smaller batch)",
  error: "error",
  timeout: "timeout",
  crash: "crash",
  unsupported: "unsupported",
  invalid: "invalid (statistics criteria not met)",
  failed: "failed (attempts exhausted)",
  not_run: "not run (yet)",
  unavailable: "no speedup (a side is missing)",
};

// A CSS-safe class for a status: "b-oom_implied".
export function badgeClass(status) {
  return `b-${String(status).replace(/[^a-z_]/gi, "")}`;
}

// Progress-grid state of a job: the verdict once done, else the job status.
export const GRID_STATES = [
  "ok", "oom", "oom_implied", "error", "timeout", "crash", "unsupported", "invalid",
  "failed", "cancelled", "running", "leased", "queued",
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
