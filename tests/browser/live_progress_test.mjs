// A running run's page updates by itself (polling every 2 s) as results arrive through the
// real API: the progress grid, the header counts and the tables change in place, while the
// selected batch, the focused cell and the scroll position stay; when the run ends, polling stops.
import { browserSuite } from "./support/harness.mjs";
import { Api, Agent, matrix, okResult, oomResult } from "./support/fleet.mjs";
import { readTables, waitForRunPage } from "./support/dashboard.mjs";

const MODELS = ["google/vit-base-patch16-224", "microsoft/beit-base-patch16-224-pt22k-ft22k", "facebook/convnext-large-224", "microsoft/resnet-50",
  "nvidia/segformer-b0-finetuned-ade-512-512", "facebook/detr-resnet-50"];

function answer(s) {
  if (s.model === "facebook/detr-resnet-50" && s.batch === 4 && s.mode === "eager") return oomResult("warmup", 1073741824);
  const mean = (5 + MODELS.indexOf(s.model)) * s.batch ** 0.8 * (s.mode === "eager" ? 1 : 0.75);
  return okResult(mean, { n: 15 });
}

await browserSuite("browser_live_progress", async (t) => {
  const coord = await t.coordinator();
  const api = new Api(coord.url);
  const run = await api.submit(matrix({ name: "live run", models: MODELS, batches: [1, 4], modes: ["eager", "default"] }));
  const agent = await Agent.enroll(api, { name: "gpu-host-1", slots: [["gpu0", "a100"], ["gpu1", "a100"]], builds: { stable: ["eager", "default"] } });
  await agent.finish("gpu0", answer, 5);

  const page = await t.page({ height: 700 });
  const url = `${coord.url}/#/runs/${run.id}?batch=4`;
  await page.goto(url);
  await waitForRunPage(page, 1);
  const doneSquares = () => page.locator(".progress-grid td[data-state=ok], .progress-grid td[data-state=oom]").count();

  await t.step("the page of a running run shows what is done so far", async () => {
    t.equal(await doneSquares(), 5, "five squares done");
    t.equal(await page.locator(".progress-grid td[data-state=queued]").count(), run.job_count - 5, "the rest queued");
    t.ok((await page.locator(".run-head .counts").textContent()).startsWith(`5/${run.job_count} jobs finished`), "header counts");
    t.ok((await page.locator(".run-head .counts").textContent()).includes("live"), "says it is live");
  });

  await t.step("new results appear without a reload, keeping batch, focus and scroll", async () => {
    // The user picks a cell (keyboard focus) and scrolls; the page must keep both.
    await page.locator(".report-table tbody tr").nth(2).locator("td").nth(1).click();
    const focusBefore = await page.evaluate(() => ({ col: document.activeElement.dataset.col, model: document.activeElement.parentElement.dataset.model }));
    await page.evaluate(() => { window.scrollTo(0, 250); document.querySelector(".report-table")._kept = true; });
    const scrollBefore = await page.evaluate(() => window.scrollY);
    const lease = await agent.lease("gpu1");  // gpu1 holds a job: the run stays active
    t.ok(lease, "a job to hold");
    await agent.finish("gpu0", answer);
    const jobs = await api.jobs(run.id);
    const states = (list) => list.reduce((m, j) => ({ ...m, [j.status]: (m[j.status] || 0) + 1 }), {});
    t.ok(states(jobs).done >= run.job_count - 2 && states(jobs).leased === 1, `gpu0 did all it could (${JSON.stringify(states(jobs))})`);
    const want = await api.report(run.id, "mean");
    const want4 = want.tables.find((x) => x.batch === 4);
    await t.eventually(async () => (await doneSquares()) === states(jobs).done, "every answered job turns done in the grid", 20000,
      async () => `${await doneSquares()} done squares; header: ${await page.locator(".run-head .counts").textContent()}`);
    await t.eventually(async () => JSON.stringify((await readTables(page))[0].rows.map((r) => r.cells.map((c) => c.text))) ===
      JSON.stringify(want4.rows.map((r) => r.cells.map((c) => c.text))), "the batch-4 table equals the new report", 20000);
    t.equal(await page.locator(".progress-grid td[data-state=leased]").count(), 1, "the held job shows as leased");
    t.ok((await page.locator(".run-head .counts").textContent()).startsWith(`${states(jobs).done}/${run.job_count} jobs finished`), "header counts follow");
    t.ok(page.url().endsWith("?batch=4"), `the URL keeps batch=4 (${page.url()})`);
    t.equal(await page.locator("select[name=batch]").inputValue(), "4", "the batch selector keeps 4");
    t.equal((await readTables(page)).map((x) => x.title), ["A100 (batch size: 4)"], "still only the batch-4 table");
    t.ok(await page.evaluate(() => document.querySelector(".report-table")._kept === true), "the table was updated in place, not rebuilt");
    const focusAfter = await page.evaluate(() => ({ col: document.activeElement.dataset.col, model: document.activeElement.parentElement?.dataset.model }));
    t.equal(focusAfter, focusBefore, "the focused cell keeps focus");
    const focusedText = await page.evaluate(() => document.activeElement.textContent);
    t.ok((await page.locator(".report-table .cell-detail").textContent()).includes(`: ${focusedText} — `), "the detail line shows the focused cell's new value");
    t.equal(await page.evaluate(() => window.scrollY), scrollBefore, "the scroll position stays");
    t.equal(await page.locator(".report-table td[data-status=oom] .badge.b-oom").count(), 1, "the OOM that arrived shows as a badge");
    await page.waitForSelector(".figures[data-drawn]");
    await t.screenshot(page, "run-page-live.png");

    await agent.post(lease, answer(lease.spec));
    await agent.finish("gpu1", answer);
    await t.eventually(async () => (await page.locator(".run-head .run-state").textContent()) === "done", "the run turns done", 20000);
    t.ok(!(await page.locator(".run-head .counts").textContent()).includes("live"), "no longer live");
    t.equal(await doneSquares(), run.job_count, "every square done");
  });

  await t.step("once the run is done, polling stops", async () => {
    let requests = 0;
    page.on("request", (r) => { if (r.url().includes("/api/v1/runs/")) requests++; });
    await page.waitForTimeout(4500);
    t.equal(requests, 0, "no run requests after the run ended");
  });
});
