// The result page: every statistic, a histogram of all samples, memory, the environment
// fingerprint and telemetry, the OOM phase and bytes, and a command that reproduces the cell.
// With BENCHFLEET_CLI set, the copied command is run for real (the CLI submits a one-cell run,
// a fake agent answers it) and the new run must measure the same cell with the same settings.
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { browserSuite } from "./support/harness.mjs";
import { OPERATOR_TOKEN } from "./support/coordinator.mjs";
import { Api, Agent, matrix, okResult, oomResult } from "./support/fleet.mjs";

await browserSuite("browser_result_detail", async (t) => {
  const coord = await t.coordinator();
  const api = new Api(coord.url);
  const spec = matrix({
    name: "detail", models: ["microsoft/resnet-50"], batches: [1, 64], modes: ["eager"],
    measurement: { warmup: 5, min_iterations: 200, max_iterations: 200, min_duration_s: 0.25, max_duration_s: 60, target_ci_rel_width: 0.05 },
    memoryLimitMb: 8192,
  });
  const run = await api.submit(spec);
  const agent = await Agent.enroll(api, { name: "gpu-host-1", slots: [["gpu0", "a100"]], builds: { stable: ["eager"] } });
  await agent.finish("gpu0", (s) => (s.batch === 64 ? oomResult("warmup", 2147483648) : okResult(6.531, { medianMs: 6.4, n: 200, stopReason: "fixed_count" })));
  const results = await api.results(run.id);
  const ok = results.find((r) => r.result.status === "ok");
  const oom = results.find((r) => r.result.status === "oom");
  const page = await t.page({ permissions: ["clipboard-read", "clipboard-write"] });

  await t.step("statistics, histogram, memory, fingerprint and telemetry of an ok result", async () => {
    await page.goto(`${coord.url}/#/results/${ok.id}`);
    await page.waitForSelector("table[data-table=stats]");
    const kv = (name) => page.evaluate((n) => Object.fromEntries([...document.querySelectorAll(`table[data-table=${n}] tr`)]
      .map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent])), name);
    const s = ok.result.stats;
    const stats = await kv("stats");
    for (const [label, key] of [["mean", "mean_ms"], ["median", "median_ms"], ["p90", "p90_ms"], ["p99", "p99_ms"], ["min", "min_ms"], ["max", "max_ms"], ["stddev", "stddev_ms"]]) {
      t.equal(stats[label], `${s[key].toFixed(3)} ms`, label);
    }
    t.equal(stats["95% CI of the median"], `${s.ci_low_ms.toFixed(3)} – ${s.ci_high_ms.toFixed(3)} ms`, "CI");
    t.equal(stats.iterations, "200", "iterations");
    t.equal(stats["first call"], "1234.500 ms", "first call");
    t.equal(stats["stop reason"], "fixed_count", "stop reason");
    t.equal(await kv("environment"), Object.fromEntries(Object.entries(ok.result.environment).map(([k, v]) => [k, String(v)])), "the whole environment fingerprint");
    t.equal(Object.keys(await kv("telemetry")), Object.keys(ok.result.telemetry), "telemetry keys");
    t.ok((await kv("memory"))["peak allocated"].includes("1610612736 bytes"), "peak allocated memory");
    const hist = await page.evaluate(() => {
      const canvas = document.querySelector(".histogram canvas");
      const chart = window.Chart.getChart(canvas);
      return { bins: chart.data.labels.length, total: chart.data.datasets[0].data.reduce((a, b) => a + b, 0), first: chart.data.labels[0] };
    });
    t.equal(hist.bins, Math.ceil(Math.sqrt(200)), "sqrt(n) bins");
    t.equal(hist.total, 200, "the histogram counts every sample");
    t.ok(hist.first.startsWith(Math.min(...ok.result.samples_ms).toFixed(3)), `the first bin starts at the minimum (${hist.first})`);
    t.ok((await page.locator("h1").textContent()).includes("Image Classification/ResNet"), "title names the model");
  });

  let command = "";
  await t.step("the reproduce command: a one-cell matrix with the run's settings, copied with one click", async () => {
    command = await page.locator("pre.command").textContent();
    const file = `benchfleet-run${run.id}-result${ok.id}.yaml`;
    t.equal(command, [
      `cat > ${file} <<'EOF'`,
      `name: "reproduce run ${run.id} result ${ok.id}"`,
      'models: ["microsoft/resnet-50"]', "batch_sizes: [1]", 'modes: ["eager"]', 'torch_builds: ["stable"]', 'gpus: ["a100"]', 'runtimes: ["libtorch"]',
      "measurement:", "  warmup: 5", "  min_iterations: 200", "  max_iterations: 200", "  min_duration_s: 0.25", "  max_duration_s: 60", "  target_ci_rel_width: 0.05",
      "memory_limit_mb: 8192", "timeout_s: 1800", "EOF",
      `BENCHFLEET_URL=${coord.url} benchfleet submit ${file} --wait`,
    ].join("\n"), "command text");
    await page.getByRole("button", { name: "Copy command" }).click();
    await t.eventually(async () => (await page.evaluate(() => navigator.clipboard.readText())) === command, "the clipboard holds the command");
    t.equal(await page.getByRole("button", { name: "Copied" }).count(), 1, "the button says Copied");
  });

  await t.step("the copied command reproduces the cell through the real CLI", async () => {
    const cli = process.env.BENCHFLEET_CLI;
    if (!cli || !existsSync(cli)) {
      console.log("       (BENCHFLEET_CLI not set: the command is checked as text only)");
      return;
    }
    const dir = mkdtempSync(join(process.env.TMPDIR || tmpdir(), "benchfleet-repro-"));
    try {
      const child = spawn("bash", ["-euo", "pipefail", "-c", command], {
        cwd: dir,
        env: { PATH: `${dirname(cli)}:${process.env.PATH}`, HOME: dir, BENCHFLEET_OPERATOR_TOKEN: OPERATOR_TOKEN },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let output = "";
      child.stdout.on("data", (d) => { output += d; });
      child.stderr.on("data", (d) => { output += d; });
      const exited = new Promise((r) => child.once("exit", (code) => r(code)));
      const runs = await t.eventually(async () => {
        const list = await api.getJson("/api/v1/runs");
        return list.runs.length === 2 ? list.runs : null;
      }, "the CLI submitted a run", 30000);
      const repro = runs[0];
      await t.eventually(async () => (await agent.finish("gpu0", () => okResult(6.6, { n: 200, stopReason: "fixed_count" }))).length > 0 || (await api.run(repro.id)).state === "done", "the agent answers the new job", 30000);
      const code = await Promise.race([exited, new Promise((r) => setTimeout(() => r("timeout"), 20000))]);
      if (code === "timeout") child.kill("SIGKILL");
      t.equal(code, 0, `benchfleet submit --wait exit status (output: ${output.trim()})`);
      const m = (await api.run(repro.id)).matrix;
      const o = (await api.run(run.id)).matrix;
      t.equal([m.models, m.batch_sizes, m.modes, m.torch_builds, m.gpus, m.runtimes], [[ok.job.model], [ok.job.batch], [ok.job.mode], [ok.job.torch_build], [ok.job.gpu], [ok.job.runtime]], "one cell: the same model, batch, mode, build, GPU class, runtime");
      t.equal([m.measurement, m.memory_limit_mb, m.timeout_s], [o.measurement, o.memory_limit_mb, o.timeout_s], "the same measurement settings");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  await t.step("an OOM result: phase and bytes, no samples", async () => {
    await page.goto(`${coord.url}/#/results/${oom.id}`);
    await page.waitForSelector(".oom-info");
    t.equal(await page.locator(".oom-info").textContent(), "Out of memory in phase warmup; 2147483648 bytes (2.00 GiB) requested", "OOM line");
    t.equal(await page.locator(".run-head .badge").textContent(), "oom", "status badge");
    t.ok((await page.locator(".histogram").textContent()).includes("No samples."), "no histogram without samples");
    t.ok((await page.locator("pre.error-text").textContent()).includes("CUDA out of memory"), "the error message");
  });

  await t.step("an unknown result says so", async () => {
    await page.goto(`${coord.url}/#/results/999999`);
    await page.waitForSelector(".state-error");
    t.ok((await page.locator(".state-error").textContent()).includes("999999"), `problem detail shown: ${await page.locator(".state-error").textContent()}`);
  });
});
