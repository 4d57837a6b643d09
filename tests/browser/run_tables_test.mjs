// The run page against the real coordinator: every table cell (text, status badge, tooltip)
// equals the report JSON, OOM badges sit where the store has `oom` results, the mean/median
// switch, permalinks and back/forward, exports equal to the endpoint's bodies, charts with
// marked gaps (never zeros), keyboard navigation, the progress grid, phone width.
import { readFile } from "node:fs/promises";
import { browserSuite } from "./support/harness.mjs";
import { Api, Agent, matrix, okResult, oomResult, failureResult } from "./support/fleet.mjs";
import { readTables, waitForRunPage, cellByResult } from "./support/dashboard.mjs";

const MODELS = ["google/vit-base-patch16-224", "nvidia/segformer-b0-finetuned-ade-512-512", "facebook/detr-resnet-50", "microsoft/resnet-50"];
// The seeds' A100 batch-1 means (ms) as the eager latency of each model.
const BASE = { "google/vit-base-patch16-224": 9.325, "nvidia/segformer-b0-finetuned-ade-512-512": 11.759, "facebook/detr-resnet-50": 34.619, "microsoft/resnet-50": 6.531 };
const FACTOR = { eager: 1, default: 0.8, "reduce-overhead": 0.6 };

// The torch each build's worker records in its results' fingerprints (report headers name it).
const TORCH = { stable: "2.5.1+cu124", nightly: "2.6.0.dev20250301+cu126" };

// What the fake agent answers for each job: every verdict the tables distinguish.
function answer(s) {
  const r = verdict(s);
  if (r?.environment?.torch_version) r.environment.torch_version = TORCH[s.torch_build];
  return r;
}

function verdict(s) {
  const is = (model, mode, batch, build) => s.model.startsWith(model) && s.mode === mode && s.batch === batch && s.torch_build === build;
  if (s.model.startsWith("facebook/detr") && s.batch === 4 && s.mode !== "reduce-overhead") return oomResult("measure", 3221225472);
  if (is("google/vit", "default", 1, "stable")) return failureResult("error", "RuntimeError: inductor codegen failed: boom");
  if (is("google/vit", "default", 4, "stable")) return failureResult("timeout", "exceeded timeout_s (1800 s)");
  if (is("nvidia/segformer", "default", 16, "stable")) return failureResult("crash", "worker died: signal 11 (SIGSEGV)", { signal: 11 });
  if (is("microsoft/resnet", "default", 1, "nightly")) return failureResult("unsupported", "default needs LibTorch >= 2.6");
  if (is("microsoft/resnet", "eager", 16, "nightly")) return failureResult("invalid", "95% CI of the median never within 2% (12 iterations)");
  if (is("microsoft/resnet", "default", 16, "stable")) return null;  // leased, never answered: fails (max_attempts 1)
  const mean = BASE[s.model] * s.batch ** 0.7 * FACTOR[s.mode] * (s.torch_build === "nightly" ? 0.97 : 1);
  return okResult(mean, { medianMs: mean * 0.96, n: 25 });
}

await browserSuite("browser_run_tables", async (t) => {
  const coord = await t.coordinator({ extraFlags: ["--lease-ttl-s", "2", "--heartbeat-interval-s", "1", "--max-attempts", "1"] });
  const api = new Api(coord.url);
  const run = await api.submit(matrix({
    name: "seed study (browser)", models: MODELS, batches: [1, 4, 16],
    modes: ["eager", "default", "reduce-overhead"], builds: ["stable", "nightly"], gpus: ["a100", "t4"],
  }));
  // nightly cannot run reduce-overhead on this agent (the coordinator marks those unsupported);
  // no agent has a T4, so its tables stay "not run".
  const agent = await Agent.enroll(api, { name: "gpu-host-1", slots: [["gpu0", "a100"]], builds: { stable: ["eager", "default", "reduce-overhead"], nightly: ["eager", "default"] } });
  await agent.finish("gpu0", answer);
  await t.eventually(async () => (await api.run(run.id)).jobs.failed === 1, "the unanswered job fails after its lease expires");
  // The run page shows the median unless the route asks for the mean (the default statistic of
  // every view).
  const median = await api.report(run.id, "median");
  const mean = await api.report(run.id, "mean");
  const results = await api.results(run.id);
  const statuses = new Set(median.tables.flatMap((tb) => tb.rows.flatMap((r) => r.cells.map((c) => c.status))));
  for (const s of ["ok", "oom", "oom_implied", "error", "timeout", "crash", "unsupported", "invalid", "failed", "not_run", "unavailable"]) {
    t.ok(statuses.has(s), `the fixture covers status ${s}`);
  }
  const runUrl = `${coord.url}/#/runs/${run.id}`;
  const page = await t.page();

  await t.step("every table cell equals the report JSON (text, status, badge, geomeans)", async () => {
    const shown = [];
    for (const gpu of ["a100", "t4"]) {
      await page.goto(`${runUrl}?gpu=${gpu}&batch=all`);
      await waitForRunPage(page, 3);
      shown.push(...await readTables(page));
    }
    t.equal(shown.map((x) => x.title), median.tables.map((x) => x.title), "table titles");
    median.tables.forEach((table, i) => {
      const got = shown[i];
      t.equal(got.headers, ["Task/Model", ...table.columns.map((c) => c.header)], `${table.title} headers`);
      t.equal(got.rows.map((r) => r.label), table.rows.map((r) => r.label), `${table.title} row labels`);
      table.rows.forEach((row, r) => row.cells.forEach((cell, c) => {
        const td = got.rows[r].cells[c];
        const where = `${table.title} / ${row.label} / ${table.columns[c].header}`;
        t.equal(td.text, cell.text, `${where} text`);
        t.equal(td.status, cell.status, `${where} status`);
        if (cell.status !== "ok") t.equal(td.badge, `badge b-${cell.status}`, `${where} badge`);
        else t.equal(td.badge, null, `${where} has no badge`);
        if (cell.detail && cell.status !== "ok") t.ok(td.title.includes(cell.detail.replace(/^phase=\w+( bytes=\d+)?: /, "")), `${where} tooltip carries the detail: ${td.title}`);
      }));
      t.equal(got.geomeans, table.geomeans.map((g) => g.text), `${table.title} geomeans`);
    });
    // Headers name the torch each build's results in the table recorded; keys stay put.
    const column = (gpu, key) => median.tables.find((x) => x.gpu === gpu && x.batch === 1).columns.find((c) => c.key === key);
    t.equal(column("a100", "latency/stable/libtorch/eager").header, "stable (torch 2.5.1) - eager", "stable's torch in its header");
    t.equal(column("a100", "speedup/nightly/libtorch/default").header, "nightly (torch 2.6.0.dev20250301) - default speedup", "nightly's torch in its header");
    t.equal(column("a100", "latency/nightly/libtorch/eager").torch_versions, [TORCH.nightly], "the exact version in the JSON");
    t.equal(column("t4", "latency/stable/libtorch/eager").header, "stable - eager", "no T4 result: no version");
  });

  await t.step("OOM badges where the store has oom, tooltip with phase and bytes", async () => {
    await page.goto(`${runUrl}?gpu=a100&batch=all`);
    await waitForRunPage(page, 3);
    const ooms = results.filter((r) => r.result.status === "oom");
    t.equal(ooms.length, 4, "oom results in the store (DETR batch 4, eager and default, both builds)");
    for (const r of ooms) {
      const td = await cellByResult(page, r.id);
      t.equal(td.text, "OOM", `result ${r.id} cell text`);
      t.equal(td.badge, "badge b-oom", `result ${r.id} badge`);
      t.ok(td.title.includes("phase measure") && td.title.includes("3221225472 bytes") && td.title.includes("3.00 GiB"), `result ${r.id} tooltip: ${td.title}`);
    }
    const implied = results.filter((r) => r.result.status === "oom_implied");
    t.ok(implied.length >= 1, "implied OOMs in the store");
    for (const r of implied) t.equal((await cellByResult(page, r.id)).badge, "badge b-oom_implied", `implied result ${r.id}`);
    const oomCells = await page.locator("td[data-status=oom] .badge.b-oom").count();
    t.equal(oomCells, 4, "no other OOM badges");
  });

  await t.step("speedups are coloured by the report's verdict on them, not by 1.00x", async () => {
    await page.goto(`${runUrl}?gpu=a100&batch=all`);
    await waitForRunPage(page, 3);
    const count = (change) => median.tables.filter((tb) => tb.gpu === "a100")
      .flatMap((tb) => tb.rows.flatMap((r) => r.cells.filter((c, i) => tb.columns[i].kind === "speedup" && c.status === "ok" && c.change === change))).length;
    t.ok(count("faster") > 0, "the fixture has speedups beyond the noise");
    t.equal(await page.locator("td.speedup.faster").count(), count("faster"), "green: the report's faster");
    t.equal(await page.locator("td.speedup.slower").count(), count("slower"), "red: the report's slower");
    t.equal(await page.locator("td.speedup[data-change=same]").count(), count("same"), "no colour: within the noise");
  });

  await t.step("the mean/median switch shows the report's mean values", async () => {
    await page.goto(`${runUrl}?gpu=a100&batch=all`);
    await waitForRunPage(page, 3);
    t.ok(await page.getByRole("radio", { name: "median" }).isChecked(), "the median by default");
    await page.getByRole("radio", { name: "mean" }).check({ force: true });
    await t.eventually(() => page.url().includes("stat=mean"), "the URL says stat=mean");
    const a100 = (report) => report.tables.filter((tb) => tb.gpu === "a100");
    const want = a100(mean).map((tb) => tb.rows.map((r) => r.cells.map((c) => c.text)));
    t.ok(JSON.stringify(want) !== JSON.stringify(a100(median).map((tb) => tb.rows.map((r) => r.cells.map((c) => c.text)))), "mean differs from median in the fixture");
    await t.eventually(async () => JSON.stringify((await readTables(page)).map((x) => x.rows.map((r) => r.cells.map((c) => c.text)))) === JSON.stringify(want),
      "cells show the mean report");
    t.equal((await readTables(page)).map((x) => x.geomeans), a100(mean).map((tb) => tb.geomeans.map((g) => g.text)), "mean geomeans");
  });

  await t.step("exports download the endpoint's Markdown and CSV bodies", async () => {
    for (const [format, name] of [["md", "Markdown"], ["csv", "CSV"]]) {
      const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("link", { name, exact: true }).click()]);
      const body = await readFile(await download.path(), "utf8");
      t.equal(body, await api.report(run.id, "mean", format), `${format} export body`);
      // The download attribute names the file unless the endpoint's Content-Disposition does.
      t.ok(new RegExp(`^run-${run.id}(-mean)?\\.${format}$`).test(download.suggestedFilename()), `${format} file name ${download.suggestedFilename()}`);
    }
  });

  await t.step("a permalink (gpu, batch, stat, filter) restores the view in a fresh page", async () => {
    const fresh = await t.page();
    await fresh.goto(`${runUrl}?gpu=a100&batch=4&stat=mean&q=detr`);
    await waitForRunPage(fresh, 1);
    t.equal(await fresh.locator("select[name=gpu]").inputValue(), "a100", "GPU selector");
    t.equal(await fresh.locator("select[name=batch]").inputValue(), "4", "batch selector");
    t.ok(await fresh.getByRole("radio", { name: "mean" }).isChecked(), "mean is selected");
    t.equal(await fresh.locator("input[name=q]").inputValue(), "detr", "model filter");
    const [table] = await readTables(fresh);
    const want = mean.tables.find((x) => x.batch === 4);
    t.equal(table.title, want.title, "the batch-4 table only");
    t.equal(table.rows.filter((r) => !r.hidden).map((r) => r.label), ["Object Detection/DETR"], "the filter keeps DETR only");
    t.equal(table.rows.map((r) => r.cells.map((c) => c.text)), want.rows.map((r) => r.cells.map((c) => c.text)), "mean cells");
    await fresh.context().close();
  });

  await t.step("selectors push history: back and forward restore the batch", async () => {
    await page.goto(`${runUrl}?batch=1`);
    await waitForRunPage(page, 1);
    await page.locator("select[name=batch]").selectOption("16");
    await t.eventually(async () => (await readTables(page))[0]?.title === "A100 (batch size: 16)", "batch 16 shown");
    await page.goBack();
    await t.eventually(async () => (await readTables(page))[0]?.title === "A100 (batch size: 1)", "back: batch 1 again");
    t.equal(await page.locator("select[name=batch]").inputValue(), "1", "selector follows back");
    await page.goForward();
    await t.eventually(async () => (await readTables(page))[0]?.title === "A100 (batch size: 16)", "forward: batch 16 again");
  });

  await t.step("charts: latency and improvement bars, OOM and failures are labelled gaps, never zeros", async () => {
    await page.goto(`${runUrl}?batch=4`);
    await waitForRunPage(page, 1);
    // The compile-time figure (compiled modes) is browser_accuracy_columns' subject.
    const figures = ".report-table .chart-latency canvas, .report-table .chart-improvement canvas";
    await page.waitForFunction((sel) => [...document.querySelectorAll(sel)].filter((c) => window.Chart?.getChart(c)).length === 2, figures);
    const charts = await page.evaluate((sel) => [...document.querySelectorAll(sel)].map((canvas) => {
      const chart = window.Chart.getChart(canvas);
      return { labels: chart.data.labels, datasets: chart.data.datasets.map((d) => ({ label: d.label, data: d.data, gaps: d.gaps })) };
    }), figures);
    t.equal(charts.length, 2, "two figures per table");
    const table = median.tables.find((x) => x.batch === 4);
    const [latency, improvement] = charts;
    t.equal(latency.labels, ["ViT", "Segformer", "DETR", "ResNet"], "one bar group per model");
    const latencyCols = table.columns.filter((c) => c.kind === "latency_ms");
    t.equal(latency.datasets.map((d) => d.label), latencyCols.map((c) => c.header), "one series per latency column");
    latencyCols.forEach((col, d) => {
      const ci = table.columns.indexOf(col);
      table.rows.forEach((row, r) => {
        const cell = row.cells[ci];
        if (cell.status === "ok") t.equal(latency.datasets[d].data[r], cell.value, `${col.header} ${row.label} value`);
        else {
          t.equal(latency.datasets[d].data[r], null, `${col.header} ${row.label} is a gap, not a zero`);
          t.equal(latency.datasets[d].gaps[r], cell.status === "not_run" ? "not run" : cell.text, `${col.header} ${row.label} gap label`);
        }
      });
    });
    const detr = table.rows.findIndex((r) => r.model === "facebook/detr-resnet-50");
    t.equal(latency.datasets[0].gaps[detr], "OOM", "DETR eager at batch 4 is an OOM gap");
    t.equal(improvement.datasets.map((d) => d.label), table.columns.filter((c) => c.kind === "speedup").map((c) => c.header.replace(/ speedup$/, "")), "improvement series");
    t.equal(improvement.datasets[0].gaps[detr], "OOM", "no improvement for DETR: marked OOM");
    const vitDefault = table.rows[0].cells[table.columns.findIndex((c) => c.key === "speedup/stable/libtorch/default")];
    t.equal(improvement.datasets[0].gaps[0], "timeout", `ViT default at batch 4 timed out (${vitDefault.text})`);
    for (const d of [...latency.datasets, ...improvement.datasets]) t.ok(!d.data.includes(0), `${d.label}: no zero bars`);
  });

  await t.step("keyboard: one tab stop per table, arrows move, Enter opens the result", async () => {
    const table = page.locator(".report-table table");
    t.equal(await table.locator('[tabindex="0"]').count(), 1, "one tab stop");
    await page.locator("input[name=q]").focus();
    // Tab from the filter past the toolbar reaches the table's tab stop.
    for (let i = 0; i < 20; i++) {
      await page.keyboard.press("Tab");
      if (await page.evaluate(() => Boolean(document.activeElement?.closest(".report-table table")))) break;
    }
    t.equal(await page.evaluate(() => document.activeElement.textContent), "Image Classification/ViT", "Tab reaches the first row header");
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
    t.ok(outline !== "none", `focus is visible (outline ${outline})`);
    await page.keyboard.press("ArrowRight");
    await page.keyboard.press("ArrowDown");
    const focused = await page.evaluate(() => ({ col: document.activeElement.dataset.col, row: document.activeElement.parentElement.dataset.model, text: document.activeElement.textContent }));
    t.equal([focused.col, focused.row], ["latency/stable/libtorch/eager", "nvidia/segformer-b0-finetuned-ade-512-512"], "arrows moved right and down");
    t.ok((await page.locator(".report-table .cell-detail").textContent()).includes("Image Segmentation/Segformer · stable (torch 2.5.1) - eager"), "the detail line follows focus");
    await page.keyboard.press("End");
    const last = mean.tables.find((x) => x.batch === 4).columns.at(-1).key;
    t.equal(await page.evaluate(() => document.activeElement.dataset.col), last, "End goes to the last column");
    await page.keyboard.press("Home");
    await page.keyboard.press("ArrowRight");
    await page.keyboard.press("Enter");
    await t.eventually(() => /#\/results\/\d+$/.test(page.url()), "Enter opens the result");
    await page.goBack();
    await waitForRunPage(page, 1);
  });

  await t.step("progress grid: a square per job, coloured by status", async () => {
    const jobs = await api.jobs(run.id);
    t.equal(jobs.length, run.job_count, "jobs endpoint lists every job");
    t.equal(await page.locator(".progress-grid td[data-job]").count(), run.job_count, "one square per job");
    const byState = await page.evaluate(() => {
      const out = {};
      for (const td of document.querySelectorAll(".progress-grid td[data-job]")) out[td.dataset.state] = (out[td.dataset.state] || 0) + 1;
      return out;
    });
    const want = {};
    for (const j of jobs) {
      const state = j.status === "done" && j.result ? j.result.status : j.status;
      want[state] = (want[state] || 0) + 1;
    }
    t.equal(Object.keys(byState).sort().map((k) => [k, byState[k]]), Object.keys(want).sort().map((k) => [k, want[k]]), "squares per state");
    t.equal(await page.locator(".progress-grid td[data-state=oom] .sq.b-oom").count(), 4, "OOM squares");
    t.equal(await page.locator(".progress-grid td[data-state=failed] .sq.b-failed").count(), 1, "the failed job");
    await page.locator(".legend-item[data-state=oom]").click();
    await t.eventually(() => page.url().includes("status=oom"), "legend filter in the URL");
    // The URL changes before the grid is redrawn with the filter: wait for the redraw.
    const bright = () => page.locator(".progress-grid td[data-job]:not(.dim)").count();
    await t.eventually(async () => (await bright()) === 4, "only OOM squares stay bright", 5000,
                       async () => `bright squares: ${await bright()}`);
  });

  await t.step("screenshot of the run page (1280 px)", async () => {
    await page.goto(`${runUrl}?batch=4`);
    await waitForRunPage(page, 1);
    await page.waitForSelector(".figures[data-drawn]");
    await t.screenshot(page, "run-page.png");
  });

  await t.step("phone width (375 px): no sideways scrolling of the page, tables scroll in their box", async () => {
    const phone = await t.page({ width: 375, height: 800 });
    for (const hash of [`#/runs/${run.id}?batch=4`, "#/runs", "#/agents", `#/results/${results[0].id}`, `#/compare?a=${run.id}:stable&b=${run.id}:nightly&batch=4`]) {
      await phone.goto(`${coord.url}/${hash}`);
      await phone.waitForSelector(".run-head, table.runs, table.agents, .compare-table", { timeout: 20000 });
      await phone.waitForTimeout(200);
      const { scroll, client } = await phone.evaluate(() => ({ scroll: document.documentElement.scrollWidth, client: document.documentElement.clientWidth }));
      t.ok(scroll <= client, `${hash}: page is ${scroll} px wide in a ${client} px viewport`);
    }
    await phone.goto(`${coord.url}/#/runs/${run.id}?batch=4`);
    await waitForRunPage(phone, 1);
    await phone.locator(".figures").scrollIntoViewIfNeeded();
    await phone.waitForSelector(".figures[data-drawn]");
    await phone.evaluate(() => window.scrollTo(0, 0));
    const box = await phone.evaluate(() => { const el = document.querySelector(".report-table .table-scroll"); return { scroll: el.scrollWidth, client: el.clientWidth }; });
    t.ok(box.scroll > box.client, "the wide table scrolls inside its box");
    await t.screenshot(phone, "run-page-phone.png");
    await phone.context().close();
  });
});
