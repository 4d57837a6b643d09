// Drives a real coordinator through its REST API as an operator and as agents would
// (POST /api/v1/agents/enroll, /agents/{id}/lease, /jobs/{id}/result; coordinator/api/openapi.json).
//
//   const api = new Api(coord.url);
//   const run = await api.submit(matrix({ models: [...], batches: [1, 4], modes: ["eager", "default"] }));
//   const agent = await Agent.enroll(api, { name: "a1", slots: [["gpu0", "a100"]], builds: { stable: ["eager", "default"] } });
//   await agent.finish("gpu0", (spec) => okResult(10));      // lease and answer every job it gets
import { OPERATOR_TOKEN, ENROLLMENT_TOKEN } from "./coordinator.mjs";

export class ApiError extends Error {
  constructor(method, path, status, body) {
    super(`${method} ${path} answered ${status}: ${body}`);
    this.status = status;
    this.body = body;
  }
}

export class Api {
  constructor(baseUrl) { this.baseUrl = baseUrl; }

  async request(method, path, { body, token = OPERATOR_TOKEN, expect = [200, 201] } = {}) {
    const headers = { Authorization: `Bearer ${token}` };
    if (body !== undefined) headers["Content-Type"] = "application/json";
    const res = await fetch(this.baseUrl + path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(30000),
    });
    const text = await res.text();
    if (!expect.includes(res.status)) throw new ApiError(method, path, res.status, text);
    return { status: res.status, text, headers: res.headers };
  }
  async getJson(path) { return JSON.parse((await this.request("GET", path)).text); }
  async getText(path) { return (await this.request("GET", path)).text; }
  async postJson(path, body, token) { return JSON.parse((await this.request("POST", path, { body, token })).text); }

  // POST /api/v1/runs; the created run's {id, job_count, url}.
  submit(matrixSpec) { return this.postJson("/api/v1/runs", matrixSpec); }
  run(id) { return this.getJson(`/api/v1/runs/${id}`); }
  report(id, stat = "mean", format = "json") {
    const path = `/api/v1/runs/${id}/report?format=${format}&stat=${stat}`;
    return format === "json" ? this.getJson(path) : this.getText(path);
  }
  // Every job of a run (GET /api/v1/runs/{id}/jobs, all pages).
  async jobs(id) {
    const all = [];
    let cursor = null;
    do {
      const q = cursor ? `&cursor=${cursor}` : "";
      const page = await this.getJson(`/api/v1/runs/${id}/jobs?limit=10000${q}`);
      all.push(...page.jobs);
      cursor = page.next_cursor;
    } while (cursor);
    return all;
  }
  // Every result row of a run (all pages, samples included).
  async results(id) {
    const all = [];
    let cursor = null;
    do {
      const q = cursor ? `&cursor=${cursor}` : "";
      // Samples are listed only when asked for, at most 10 results a page then.
      const page = await this.getJson(`/api/v1/runs/${id}/results?samples=true${q}`);
      all.push(...page.results);
      cursor = page.next_cursor;
    } while (cursor);
    return all;
  }
}

// A matrix body for POST /api/v1/runs.
export function matrix({ name = "browser", models, batches = [1], modes = ["eager", "default"],
                         builds = ["stable"], gpus = ["a100"], runtimes = ["libtorch"], repetitions = 1,
                         measurement, memoryLimitMb }) {
  const m = { name, models, batch_sizes: batches, modes, torch_builds: builds, gpus, runtimes, repetitions };
  if (measurement) m.measurement = measurement;
  if (memoryLimitMb) m.memory_limit_mb = memoryLimitMb;
  return m;
}

export class Agent {
  constructor(api, id, token, name) {
    this.api = api;
    this.id = id;
    this.token = token;
    this.name = name;
  }

  // Enrols an agent. `slots`: [[slot id, GPU class, {name, memory_mb}?], ...];
  // `builds`: {build name: [modes]} (libtorch runtime).
  static async enroll(api, { name, slots, builds }) {
    const descriptor = {
      name,
      hostname: `${name}.test`,
      version: "browser-test",
      slots: slots.map(([id, gpuClass, gpu], index) => ({
        id,
        gpu_class: gpuClass,
        gpu: gpuClass === "cpu" ? null : {
          index, uuid: `GPU-${name}-${index}`, name: gpu?.name ?? `NVIDIA ${gpuClass.toUpperCase()}`,
          memory_mb: gpu?.memory_mb ?? 40960, compute_capability: "8.0", driver: "550.54",
        },
      })),
      torch_builds: Object.entries(builds).map(([build, modes]) => ({
        name: build,
        version: build === "nightly" ? "2.6.0.dev20241121+cu124" : "2.5.1+cu124",
        runtimes: [{ runtime: "libtorch", modes }],
      })),
    };
    const body = await api.postJson("/api/v1/agents/enroll", descriptor, ENROLLMENT_TOKEN);
    return new Agent(api, body.agent_id, body.agent_token, name);
  }

  // One lease for `slot` (no waiting); null when there is no work.
  async lease(slot, waitS = 0) {
    const body = await this.api.postJson(`/api/v1/agents/${this.id}/lease`, { slot, wait_s: waitS }, this.token);
    return body.job;
  }

  async post(lease, result) {
    return this.api.postJson(`/api/v1/jobs/${lease.id}/result`,
      { lease_id: lease.lease_id, attempt: lease.attempt, result }, this.token);
  }

  // Renews (and so acknowledges) the given leases, as an agent's heartbeat does.
  async heartbeat(leases) {
    return this.api.postJson(`/api/v1/agents/${this.id}/heartbeat`,
      { leases: leases.map((l) => ({ job_id: l.id, lease_id: l.lease_id })), draining: false }, this.token);
  }

  // Leases jobs for `slot` until there is none or `limit` were answered; `answer(spec, lease)`
  // gives the result body (or null to abandon the job: it is acknowledged by a heartbeat, so
  // the slot's next poll gives it up, as a restarted agent's would, instead of getting it
  // again). Returns the leases answered.
  async finish(slot, answer, limit = Infinity) {
    const done = [];
    while (done.length < limit) {
      const lease = await this.lease(slot);
      if (!lease) break;
      const result = answer(lease.spec, lease);
      if (result === null) {
        await this.heartbeat([lease]);
        done.push({ lease, result: null });
        continue;
      }
      const stored = await this.post(lease, result);
      done.push({ lease, result, stored });
    }
    return done;
  }
}

// ---- result bodies (JobResult) ---------------------------------------------------------------

// An ok result whose `n` samples have exactly mean `meanMs` and median `medianMs`; the CI of the
// median is [medianMs - ciHalf, medianMs + ciHalf] (default: 2% of the median).
export function okResult(meanMs, { medianMs = meanMs, n = 9, ciHalf, env = {}, stopReason = "max_time" } = {}) {
  // Symmetric samples around the median (so it is exact for odd and even n), then move the
  // largest (or smallest) one so the mean is exact too; the median does not change.
  const samples = Array.from({ length: n }, (_, i) => medianMs * (1 + 0.01 * (i - (n - 1) / 2)));
  const shift = meanMs * n - samples.reduce((a, b) => a + b, 0);
  if (shift >= 0) samples[n - 1] += shift; else samples[0] += shift;
  const min = samples[0];
  const max = samples[samples.length - 1];
  const h = ciHalf ?? medianMs * 0.02;
  const ciLow = Math.max(min, Math.min(medianMs, medianMs - h));
  const ciHigh = Math.min(Math.max(max, medianMs), medianMs + h);
  // Percentiles as common/stats.cpp computes them (linear between the two nearest ranks): the
  // coordinator recomputes a posted result's statistics from its samples and refuses a mismatch.
  const percentile = (q) => {
    const h = (samples.length - 1) * q;
    const lo = Math.floor(h);
    const hi = Math.min(lo + 1, samples.length - 1);
    return samples[lo] + (h - lo) * (samples[hi] - samples[lo]);
  };
  const mean = samples.reduce((a, b) => a + b, 0) / samples.length;
  const stddev = Math.sqrt(samples.reduce((a, b) => a + (b - mean) ** 2, 0) / Math.max(1, samples.length - 1));
  return {
    status: "ok",
    stats: {
      mean_ms: meanMs, median_ms: medianMs, p90_ms: percentile(0.9),
      p99_ms: percentile(0.99), min_ms: min, max_ms: max, stddev_ms: stddev, cv: stddev / meanMs,
      ci_low_ms: ciLow, ci_high_ms: ciHigh, iterations: n,
    },
    samples_ms: samples,
    first_call_ms: 1234.5,
    stop_reason: stopReason,  // max_time fits any count; fixed_count only a fixed one, of exactly n
    export_s: 12.5,
    load_s: 0.75,
    memory: { peak_allocated_bytes: 1610612736, peak_reserved_bytes: 2147483648, peak_rss_bytes: 3221225472 },
    environment: {
      torch_version: "2.5.1+cu124", torch_git: "a8d6afb", cuda: "12.4", cudnn: "90100", driver: "550.54.15",
      gpu_name: "NVIDIA A100-SXM4-40GB", gpu_uuid: "GPU-1a2b3c", sm: "8.0", host: "gpu-host-1",
      agent_version: "browser-test", artifact_sha256: "9f86d081884c7d65", ...env,
    },
    telemetry: { sm_clock_mhz_before: 1410, sm_clock_mhz_after: 1395, temperature_c_after: 61, power_w_after: 312.5 },
  };
}

export function oomResult(phase = "warmup", bytes = 2147483648) {
  return {
    status: "oom",
    oom: { phase, bytes_requested: bytes },
    error: "CUDA out of memory. Tried to allocate 2.00 GiB",
    samples_ms: [],
    environment: { torch_version: "2.5.1+cu124", gpu_name: "NVIDIA A100-SXM4-40GB" },
    telemetry: {},
  };
}

export function failureResult(status, message, extra = {}) {
  return { status, error: message, samples_ms: [], environment: {}, telemetry: {}, ...extra };
}
