// The build summary page against the real coordinator: a nightly schedule fires twice (the
// coordinator's schedule clock is a file the test moves to each night's due time), an agent feeds
// each run's jobs through the agent API (stable and nightly, eager and torch.compile; on the
// second night every nightly compiled cell runs out of memory). The schedules page links to the
// summary; its four charts draw a line per build · runtime · mode with a point per run and the
// OOM night as a gap, never a zero; the table lists the runs newest first with each figure's
// unit, the torch versions and run links; the mean/median switch and the run count go to the
// URL; without chart.js the table is still there; a schedule without runs and an unknown one say so.
import { mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { browserSuite } from "./support/harness.mjs";
import { Api, Agent, matrix, okResult, oomResult } from "./support/fleet.mjs";
import { summaryCharts, summaryColumns } from "../../web/js/summary_charts.js";

const MODELS = ["torchvision/resnet18", "microsoft/resnet-50", "google/vit-base-patch16-224"];
const MiB = 1024 * 1024;
const DAY_MS = 24 * 3600 * 1000;
// A fixed count: no result flagged as noisy, so every speedup is in its geomean.
const MEASUREMENT = { min_iterations: 15, max_iterations: 15 };
const NIGHTLY = ["2.7.0.dev20261128", "2.7.0.dev20261129"];
const STABLE = "2.6.0+cu124";
const round = (v) => (v === null ? null : Math.round(v * 1e6) / 1e6);

// Eager at 10 ms (mean and median); stable compiled at 8 ms mean, 5 ms median (speedup 1.25 or
// 2), exports in 40/41/42 s (median 41 s), 0.8 of eager's memory (ratio 1.25); nightly compiled
// on night 0 at 5 ms mean, 4 ms median (2 or 2.5), 30 s, half the memory (2), the ViT wrong (2 of
// 3 pass); on night 1 every nightly compiled cell out of memory.
function answer(night) {
  return (s) => {
    const version = s.torch_build === "nightly" ? NIGHTLY[night] : STABLE;
    const env = { torch_version: version };
    const model = MODELS.indexOf(s.model);
    const memory = (mb) => ({ peak_allocated_bytes: mb * MiB, peak_reserved_bytes: 2 * mb * MiB, peak_rss_bytes: 4 * mb * MiB });
    if (s.mode === "eager") return { ...okResult(10, { n: 15, env, stopReason: "fixed_count" }), memory: memory(1000) };
    if (s.torch_build === "nightly" && night === 1) {
      const r = oomResult("warmup", 8 * 1024 * MiB);
      return { ...r, environment: { ...r.environment, ...env } };
    }
    const nightly = s.torch_build === "nightly";
    const r = okResult(nightly ? 5 : 8, { medianMs: nightly ? 4 : 5, n: 15, env, stopReason: "fixed_count" });
    r.export_s = nightly ? 30 : 40 + model;
    r.memory = memory(nightly ? 500 : 800);
    r.accuracy = { verdict: "pass", compiled_error: 4.8e-7, eager_error: 4.3e-7, tolerance: 1.013e-4, output: "logits" };
    if (nightly && s.model === "google/vit-base-patch16-224") r.accuracy = { ...r.accuracy, verdict: "wrong", compiled_error: 0.049 };
    return r;
  };
}

// The charts drawn on the page: per figure its metric, x labels and per line its label and points.
function readCharts(page) {
  return page.evaluate(() => [...document.querySelectorAll(".summary-chart")].map((figure) => {
    const chart = window.Chart.getChart(figure.querySelector("canvas"));
    return {
      metric: figure.dataset.metric,
      labels: chart.data.labels,
      lines: chart.data.datasets.map((d) => ({ label: d.label, data: d.data })),
    };
  }));
}

// The table: per row its run id, the run link and per cell [column, metric, figure, subline, tooltip].
function readTable(page) {
  return page.evaluate(() => [...document.querySelectorAll("table.summary-table tbody tr")].map((tr) => ({
    run: Number(tr.dataset.run),
    href: tr.querySelector("th a").getAttribute("href"),
    cells: [...tr.querySelectorAll("td[data-metric]")].map((td) => [td.dataset.col, td.dataset.metric,
      td.querySelector(".figure")?.textContent ?? td.textContent, td.querySelector(".sub")?.textContent ?? "", td.title]),
  })));
}

await browserSuite("browser_schedule_summary", async (t) => {
  // The coordinator reads its schedule clock from the file its schedule_clock_file option names.
  const dir = mkdtempSync(join(process.env.TMPDIR || tmpdir(), "benchfleet-summary-"));
  process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  const clockFile = join(dir, "clock");
  const setClock = (ms) => {
    writeFileSync(`${clockFile}.tmp`, `${ms}\n`);
    renameSync(`${clockFile}.tmp`, clockFile);
  };
  setClock(Date.now());
  const coord = await t.coordinator({ extraFlags: ["--schedule-check-ms", "50", "--schedule-clock-file", clockFile] });
  const api = new Api(coord.url);
  const agent = await Agent.enroll(api, { name: "nightly-host", slots: [["gpu0", "a100"]], builds: { stable: ["eager", "default"], nightly: ["eager", "default"] } });

  const schedule = JSON.parse((await api.request("POST", "/api/v1/schedules", {
    body: { cron: "0 2 * * *", matrix: matrix({ name: "torch nightly", models: MODELS, modes: ["eager", "default"], builds: ["stable", "nightly"], measurement: MEASUREMENT }) },
  })).text);
  // Paused before the clock moves: it never fires.
  const idle = JSON.parse((await api.request("POST", "/api/v1/schedules", {
    body: { cron: "0 2 * * 0", matrix: matrix({ name: "weekly study", models: [MODELS[0]], modes: ["eager", "default"] }) },
  })).text);
  await api.request("POST", `/api/v1/schedules/${idle.id}/pause`);
  const firstDue = Date.parse(schedule.next_due_at);
  const runs = [];
  for (const night of [0, 1]) {
    setClock(firstDue + night * DAY_MS + 30000);
    const listed = await t.eventually(async () => {
      const page = (await api.getJson("/api/v1/runs")).runs;
      return page.length === night + 1 && page;
    }, `night ${night}: the schedule created its run`);
    const run = listed[0];
    const done = await agent.finish("gpu0", answer(night));
    t.equal(done.length, MODELS.length * 4, `night ${night}: every job answered`);
    await t.eventually(async () => (await api.run(run.id)).state === "done", `run ${run.id} is done`);
    runs.push(run);
  }
  // The median by default, as every view; the mean on the switch.
  const summary = await api.getJson(`/api/v1/schedules/${schedule.id}/summary`);
  const mean = await api.getJson(`/api/v1/schedules/${schedule.id}/summary?stat=mean`);
  const summaryHash = `#/schedules/${schedule.id}/summary`;
  const page = await t.page({ width: 1400, height: 1000 });

  await t.step("the API summarises both runs, oldest first (the figures the page is checked against)", async () => {
    t.equal(summary.schedule, { id: schedule.id, name: "torch nightly" }, "the schedule");
    t.equal(summary.runs.map((r) => r.run_id), runs.map((r) => r.id), "the two runs, oldest first");
    t.equal(summaryColumns(summary).map((c) => c.key).sort(), ["nightly/libtorch/default", "stable/libtorch/default"], "two compiled columns");
    const figures = (s, key) => s.runs.map((r) => r.columns.find((c) => c.key === key))
      .map((c) => [round(c.geomean_speedup), round(c.pass_rate), round(c.compile_ms_median), round(c.memory_ratio_geomean)]);
    t.equal(figures(mean, "stable/libtorch/default"), [[1.25, 1, 41000, 1.25], [1.25, 1, 41000, 1.25]], "stable, mean");
    t.equal(figures(mean, "nightly/libtorch/default"), [[2, round(2 / 3), 30000, 2], [null, 0, null, null]], "nightly, mean: the OOM night has no figures but 0% passed");
    t.equal(figures(summary, "stable/libtorch/default").map((f) => f[0]), [2, 2], "stable, median (the default)");
    t.equal(figures(summary, "nightly/libtorch/default").map((f) => f[0]), [2.5, null], "nightly, median (the default)");
  });

  await t.step("the schedules page links each schedule to its summary", async () => {
    await page.goto(`${coord.url}/#/schedules`);
    const link = page.locator(`table.schedules tr[data-schedule="${schedule.id}"] a.summary-link`);
    t.equal(await link.getAttribute("href"), summaryHash, "the Summary link");
    await link.click();
    await t.eventually(() => page.url().endsWith(summaryHash), `the link opens the summary (${page.url()})`);
    t.equal(await page.locator('nav a[data-nav="schedules"]').getAttribute("aria-current"), "page", "Schedules stays current in the top bar");
  });

  await t.step("four charts: a line per build · runtime · mode, a point per run, the OOM night a gap", async () => {
    await page.waitForFunction(() => document.querySelectorAll(".summary-chart[data-drawn]").length === 4);
    t.equal(await page.locator("h1").textContent(), "Build summary: torch nightly", "the title names the schedule");
    t.equal(await page.title(), "torch nightly · build summary · benchfleet", "the tab's title");
    const charts = await readCharts(page);
    const want = summaryCharts(summary);
    t.equal(charts.map((c) => c.metric), ["speedup", "pass_rate", "compile", "memory"], "the four charts in order");
    const labels = summary.runs.map((r) => `${r.created_at.slice(0, 10)} #${r.run_id}`);
    for (const [i, c] of charts.entries()) {
      t.equal(c.labels, labels, `${c.metric}: a label per run, oldest first`);
      t.equal(c.lines, want[i].datasets.map((d) => ({ label: d.label, data: d.data })), `${c.metric}: the lines of the API's figures`);
    }
    const line = (metric, build) => charts.find((c) => c.metric === metric).lines.find((l) => l.label === `${build} · libtorch · default`).data.map(round);
    t.equal(line("speedup", "stable"), [2, 2], "stable's speedup (×, of the median)");
    t.equal(line("speedup", "nightly"), [2.5, null], "nightly's speedup: a gap on the OOM night");
    t.equal(line("pass_rate", "stable"), [100, 100], "pass rate in percent");
    t.equal(line("pass_rate", "nightly"), [round(200 / 3), 0], "nightly's pass rate: 0%, a point, not a gap");
    t.equal(line("compile", "stable"), [41, 41], "compile time in seconds");
    t.equal(line("compile", "nightly"), [30, null], "nightly's compile time: a gap");
    t.equal(line("memory", "stable"), [1.25, 1.25], "memory ratio (×)");
    t.equal(line("memory", "nightly"), [2, null], "nightly's memory ratio: a gap");
    const spans = await page.evaluate(() => [...document.querySelectorAll(".summary-chart canvas")]
      .flatMap((c) => window.Chart.getChart(c).data.datasets.map((d) => d.spanGaps)));
    t.ok(spans.every((s) => s === false), "no line is drawn across a gap");
    await t.screenshot(page, "build-summary.png");
  });

  await t.step("one legend for the four charts: a column's button hides its line in each", async () => {
    const shownLines = () => page.evaluate(() => [...document.querySelectorAll(".summary-chart canvas")].map((c) => {
      const chart = window.Chart.getChart(c);
      return chart.data.datasets.filter((_, i) => chart.isDatasetVisible(i)).map((d) => d.label);
    }));
    const button = page.locator('.summary-legend button[data-col="nightly/libtorch/default"]');
    t.equal(await page.locator(".summary-legend button").allTextContents(), summaryColumns(summary).map((c) => c.label), "a button per column");
    await button.click();
    t.equal(await button.getAttribute("aria-pressed"), "false", "pressed off");
    t.equal(await shownLines(), Array(4).fill(["stable · libtorch · default"]), "the nightly line hidden in all four charts");
    await button.click();
    t.equal((await shownLines()).map((l) => l.length), [2, 2, 2, 2], "shown again");
  });

  await t.step("the table: runs newest first, each figure with its unit, torch versions, run links", async () => {
    const rows = await readTable(page);
    t.equal(rows.map((r) => r.run), [runs[1].id, runs[0].id], "newest first");
    t.equal(rows.map((r) => r.href), [`#/runs/${runs[1].id}`, `#/runs/${runs[0].id}`], "each run links to its page");
    const cells = (row, key) => row.cells.filter((c) => c[0] === key).map((c) => c.slice(1, 4));
    t.equal(cells(rows[1], "stable/libtorch/default"), [["speedup", "2.00×", `torch ${STABLE}`], ["pass_rate", "100.0%", "3/3"], ["compile", "41.00 s", ""], ["memory", "1.25×", ""]],
      "stable, first night");
    t.equal(cells(rows[1], "nightly/libtorch/default"), [["speedup", "2.50×", `torch ${NIGHTLY[0]}`], ["pass_rate", "66.7%", "2/3 · 1 wrong"], ["compile", "30.00 s", ""], ["memory", "2.00×", ""]],
      "nightly, first night: the wrong ViT named");
    t.equal(cells(rows[0], "nightly/libtorch/default"), [["speedup", "-", `torch ${NIGHTLY[1]}`], ["pass_rate", "0.0%", "0/3 · 3 OOM"], ["compile", "-", ""], ["memory", "-", ""]],
      "nightly, OOM night: no figures, and why nothing passed");
    const tip = rows[0].cells.find((c) => c[0] === "nightly/libtorch/default" && c[1] === "compile")[4];
    t.equal(tip, `no compile time recorded · torch ${NIGHTLY[1]}`, "a missing figure's tooltip says why, with the torch version");
    t.equal(await page.locator("table.summary-table thead th[scope=colgroup]").allTextContents(),
      summaryColumns(summary).map((c) => c.label), "a column group per build · runtime · mode");
    await page.locator(`table.summary-table a[href="#/runs/${runs[0].id}"]`).click();
    await t.eventually(() => page.url().endsWith(`#/runs/${runs[0].id}`), "a run link opens the run");
    await page.goBack();
    await page.waitForFunction(() => document.querySelectorAll(".summary-chart[data-drawn]").length === 4);
  });

  await t.step("the mean/median switch and the run count are kept in the URL", async () => {
    await page.getByRole("radio", { name: "mean" }).check({ force: true });
    await t.eventually(() => page.url().endsWith(`${summaryHash}?stat=mean`), `the URL says stat=mean (${page.url()})`);
    await t.eventually(async () => (await page.locator("table.summary-table thead th[data-metric=speedup]").first().textContent()) === "Speedup (mean)",
      "the table's speedups are the mean's");
    await page.waitForFunction(() => document.querySelectorAll(".summary-chart[data-drawn]").length === 4);
    const charts = await readCharts(page);
    t.equal(charts[0].lines, summaryCharts(mean)[0].datasets.map((d) => ({ label: d.label, data: d.data })), "the speedup chart of mean latencies");
    t.equal(charts[0].lines.map((l) => l.data.map(round)).sort(), [[1.25, 1.25], [2, null]].sort(), "1.25× and 2× (mean)");
    await page.locator("select[name=limit]").selectOption("10");
    await t.eventually(() => page.url().endsWith(`${summaryHash}?stat=mean&limit=10`), `the run count joins it (${page.url()})`);
    await page.reload();
    await page.waitForFunction(() => document.querySelectorAll(".summary-chart[data-drawn]").length === 4);
    t.ok(await page.getByRole("radio", { name: "mean" }).isChecked(), "reloaded, the switch still says mean");
    t.equal(await page.locator("select[name=limit]").inputValue(), "10", "and the run count 10");
    await page.getByRole("radio", { name: "median" }).check({ force: true });
    await t.eventually(() => page.url().endsWith(`${summaryHash}?limit=10`), `median, the default, leaves the URL (${page.url()})`);
  });

  await t.step("without chart.js: charts unavailable, the table still there", async () => {
    const bare = await t.page({ width: 1000, height: 900 });
    await bare.route("**/vendor/chart.umd.js", (route) => route.abort());
    await bare.goto(`${coord.url}/${summaryHash}`);
    await bare.waitForSelector(".charts-unavailable");
    t.ok((await bare.locator(".charts-unavailable").textContent()).startsWith("Charts unavailable"), "says charts are unavailable");
    t.equal(await bare.locator(".summary-chart").count(), 0, "no empty chart boxes");
    t.equal(await bare.locator("table.summary-table tbody tr").count(), 2, "the table has both runs");
    t.equal((await readTable(bare))[1].cells.find((c) => c[0] === "stable/libtorch/default" && c[1] === "speedup")[2], "2.00×", "with its figures");
  });

  await t.step("a schedule without runs: an empty state", async () => {
    await page.goto(`${coord.url}/#/schedules/${idle.id}/summary`);
    await page.waitForSelector(".state-empty");
    t.equal(await page.locator("h1").textContent(), "Build summary: weekly study", "the title names it");
    t.ok((await page.locator(".state-empty").textContent()).startsWith("No runs of this schedule yet."), "says there are no runs");
    t.equal(await page.locator(".summary-chart, table.summary-table").count(), 0, "no charts, no table");
  });

  await t.step("an unknown schedule: the error state", async () => {
    await page.goto(`${coord.url}/#/schedules/9999/summary`);
    await page.waitForSelector(".state-error");
    const detail = await page.locator(".state-error .state-detail").textContent();
    t.ok(/9999/.test(detail), `the coordinator's reason: ${detail}`);
    t.equal(await page.locator(".state-error a").getAttribute("href"), "#/schedules", "a way back to the schedules");
    t.equal(await page.title(), "Not found · benchfleet", "the tab says not found");
  });
});
