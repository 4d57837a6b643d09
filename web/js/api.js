// The coordinator's REST API (coordinator/api/openapi.json) as the dashboard uses it: reads, and
// the few writes of the history views (schedules, regressions), which need the operator token.
// Errors are ApiError values carrying the problem detail (RFC 9457) the coordinator sent, e.g.
// "run 99 does not exist"; a transport failure (coordinator down, proxy 502-504) is an ApiError
// with `unreachable` set, and the connection listener hears about it so the app can show a banner.
// A coordinator with private reads (public_reads: false) answers 401 until a token is set
// (setToken); the unauthorized listener hears about each 401.
//
//   const api = new Api(new URL("api/v1/", document.baseURI), { onConnection: (up, why) => ... });
//   const run = await api.run(5);
//   await api.regressionAction(3, "acknowledge");   // ApiError with status 401 without a token

import { DEFAULT_STAT } from "./route.js";

const TIMEOUT_MS = 15000;

export class ApiError extends Error {
  constructor({ status = 0, title = "", detail, unreachable = false, path }) {
    super(detail);
    this.status = status;
    this.title = title;
    this.detail = detail;
    this.unreachable = unreachable;
    this.path = path;
  }
}

export class Api {
  // `base`: URL of /api/v1/ (ends with a slash). `onConnection(up, reason)` is called when the
  // coordinator goes from answering to not answering and back.
  constructor(base, { onConnection = () => {}, onUnauthorized = () => {}, token = null } = {}) {
    this.base = base;
    this.origin = new URL("../../", base);
    this.onConnection = onConnection;
    this.onUnauthorized = onUnauthorized;
    this.token = token;
    this.up = true;
  }

  setToken(token) { this.token = token || null; }

  // URL of an API path ("runs/5/report?format=md"), for links and downloads.
  url(path) { return new URL(path, this.base).href; }

  async getJson(path) {
    const res = await this.fetch(path, { headers: { Accept: "application/json" } });
    return res.json();
  }

  // A write: `method` with an optional JSON body; the answer's JSON, or null (204). A 401 does not
  // call the unauthorized listener (that one asks for a token to read): the caller asks.
  async send(method, path, body) {
    const headers = { Accept: "application/json" };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const res = await this.fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) }, { promptOnUnauthorized: false });
    return res.status === 204 ? null : res.json();
  }

  async fetch(path, init = {}, { promptOnUnauthorized = true } = {}) {
    const url = this.url(path);
    let res;
    const headers = { ...(init.headers || {}) };
    if (this.token) headers.Authorization = `Bearer ${this.token}`;
    try {
      res = await fetch(url, { ...init, headers, cache: "no-store", signal: AbortSignal.timeout(TIMEOUT_MS) });
    } catch (e) {
      const why = e && e.name === "TimeoutError" ? "timed out" : "connection failed";
      throw this.unreachable(path, why);
    }
    if (res.status >= 502 && res.status <= 504) throw this.unreachable(path, `HTTP ${res.status}`);
    this.setUp(true);
    if (res.ok) return res;
    let problem = {};
    try { problem = await res.json(); } catch { /* not problem+json */ }
    if (res.status === 401 && promptOnUnauthorized) this.onUnauthorized(problem.detail || "a token is needed");
    throw new ApiError({
      status: res.status,
      title: problem.title || res.statusText,
      detail: problem.detail || `HTTP ${res.status} ${res.statusText}`,
      path,
    });
  }

  // Health probe used while the coordinator is unreachable.
  async ping() {
    try {
      const res = await fetch(new URL("healthz", this.origin), { cache: "no-store", signal: AbortSignal.timeout(5000) });
      if (res.ok) this.setUp(true);
      return res.ok;
    } catch {
      return false;
    }
  }

  unreachable(path, why) {
    this.setUp(false, why);
    return new ApiError({ detail: `cannot reach the coordinator (${why})`, unreachable: true, path });
  }

  setUp(up, why = "") {
    if (up === this.up) return;
    this.up = up;
    this.onConnection(up, why);
  }

  // ---- endpoints -------------------------------------------------------------------------------
  runs({ limit = 50, before } = {}) {
    return this.getJson(`runs?limit=${limit}${before ? `&before=${before}` : ""}`);
  }
  run(id) { return this.getJson(`runs/${id}`); }
  // `excludeFlagged`: geomeans leave out results flagged as noisy (exclude_flagged=true).
  report(id, stat = DEFAULT_STAT, { excludeFlagged = false } = {}) {
    return this.getJson(`runs/${id}/report?format=json&stat=${stat}${excludeFlagged ? "&exclude_flagged=true" : ""}`);
  }
  // Two sides ({run, build}; build may be null: the run's first) compared by the coordinator
  // (GET /compare): its tables, ratios, verdicts and geomeans, which the CLI renders too.
  compare(a, b, stat = DEFAULT_STAT) {
    const side = (x) => encodeURIComponent(x.build ? `${x.run}:${x.build}` : String(x.run));
    return this.getJson(`compare?a=${side(a)}&b=${side(b)}&stat=${stat}`);
  }
  compareUrl(a, b, format, stat = DEFAULT_STAT) {
    const side = (x) => encodeURIComponent(x.build ? `${x.run}:${x.build}` : String(x.run));
    return this.url(`compare?a=${side(a)}&b=${side(b)}&stat=${stat}&format=${format}`);
  }
  reportUrl(id, format, stat, { excludeFlagged = false } = {}) {
    return this.url(`runs/${id}/report?format=${format}&stat=${stat}${excludeFlagged ? "&exclude_flagged=true" : ""}`);
  }

  // Saves an API answer as a file. Plain links do that without a token; with one, the body is
  // fetched with the Authorization header and handed to the browser as a blob.
  async download(path, filename) {
    const blob = await (await this.fetch(path)).blob();
    const href = URL.createObjectURL(blob);
    const a = document.createElement("a");
    a.href = href;
    a.download = filename;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(href), 10000);
  }
  result(id) { return this.getJson(`results/${id}`); }
  agents() { return this.getJson("agents"); }
  // Every version of every model (retired ones included): jobs and series name old versions too.
  models() { return this.getJson("models?all=true"); }

  // ---- history ----------------------------------------------------------------------
  schedules() { return this.getJson("schedules"); }
  // `action`: "pause" or "resume".
  scheduleAction(id, action) { return this.send("POST", `schedules/${id}/${action}`); }
  deleteSchedule(id) { return this.send("DELETE", `schedules/${id}`); }
  // A schedule's latest `limit` runs (oldest first), per build · runtime · compiled mode: geomean
  // speedup vs eager, pass rate, median compile time, memory ratio; `stat`: "mean" or "median".
  scheduleSummary(id, { limit = 30, stat = DEFAULT_STAT } = {}) {
    return this.getJson(`schedules/${id}/summary?limit=${limit}&stat=${stat}`);
  }
  // `query`: history.js seriesQuery(...).
  seriesList(query) { return this.getJson(`series?${query}`); }
  // One series with a page of its points (after point `afterPoint`) and its latest regressions.
  series(id, { limit = 1000, afterPoint } = {}) {
    return this.getJson(`series/${id}?limit=${limit}${afterPoint ? `&after_point=${afterPoint}` : ""}`);
  }
  // `filter`: {state, direction, series, before, limit}; absent keys take the API's defaults.
  regressions(filter = {}) {
    const q = new URLSearchParams();
    for (const k of ["state", "direction", "series", "limit", "before"]) if (filter[k] !== undefined && filter[k] !== null) q.set(k, String(filter[k]));
    const query = q.toString();
    return this.getJson(`regressions${query ? `?${query}` : ""}`);
  }
  // `action`: "acknowledge", "resolve" or "reopen"; `note` optional.
  regressionAction(id, action, note) {
    return this.send("POST", `regressions/${id}/${action}`, note ? { note } : undefined);
  }

  // Every job of a run, following next_cursor.
  async jobs(id) {
    const jobs = [];
    let cursor = null;
    for (let pages = 0; pages < 1000; pages++) {
      const page = await this.getJson(`runs/${id}/jobs?limit=10000${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`);
      jobs.push(...page.jobs);
      cursor = page.next_cursor;
      if (!cursor) break;
    }
    return jobs;
  }
}
