// The runs list, the agents view, error and empty states: an empty fleet, an unknown run (the
// problem detail), a coordinator that goes down and comes back (banner, retrying), and a
// dashboard without its chart library ("charts unavailable", tables still there).
import { readFile } from "node:fs/promises";
import { browserSuite } from "./support/harness.mjs";
import { OPERATOR_TOKEN } from "./support/coordinator.mjs";
import { Api, Agent, matrix, okResult } from "./support/fleet.mjs";
import { waitForRunPage, readTables } from "./support/dashboard.mjs";

await browserSuite("browser_fleet_views", async (t) => {
  const coord = await t.coordinator();
  const api = new Api(coord.url);
  const page = await t.page();

  await t.step("an empty fleet: no runs, no agents, said plainly", async () => {
    await page.goto(`${coord.url}/`);
    await page.waitForSelector(".state-empty");
    t.ok(page.url().endsWith("#/runs"), "the root opens the runs");
    t.ok((await page.locator(".state-empty").textContent()).includes("No runs yet."), "runs empty state");
    await page.getByRole("link", { name: "Agents" }).click();
    await page.waitForSelector(".state-empty");
    t.ok((await page.locator(".state-empty").textContent()).includes("No agent has enrolled yet."), "agents empty state");
  });

  const run1 = await api.submit(matrix({ name: "finished run", models: ["microsoft/resnet-50", "google/vit-base-patch16-224"], batches: [1], modes: ["eager", "default"] }));
  const a1 = await Agent.enroll(api, { name: "gpu-host-1", slots: [["gpu0", "a100"], ["gpu1", "a100", { name: "NVIDIA A100-SXM4-80GB", memory_mb: 81920 }]], builds: { stable: ["eager", "default"], nightly: ["eager"] } });
  await a1.finish("gpu0", () => okResult(7.5));
  // The T4 host enrols before its run: a fleet of A100s alone refuses a T4 matrix.
  const a2 = await Agent.enroll(api, { name: "gpu-host-2", slots: [["gpu0", "t4", { name: "Tesla T4", memory_mb: 15360 }]], builds: { nightly: ["eager"] } });
  const run2 = await api.submit(matrix({ name: "running run", models: ["microsoft/resnet-50"], batches: [1, 4], modes: ["eager"], gpus: ["t4"], builds: ["nightly"] }));
  const held = await a2.lease("gpu0");
  await api.postJson(`/api/v1/agents/${a1.id}/drain`, { draining: true });

  await t.step("runs: name, state, progress, verdicts, GPU classes, builds, created; links to each run", async () => {
    await page.getByRole("link", { name: "Runs" }).click();
    await page.waitForSelector("table.runs tbody tr");
    const rows = await page.evaluate(() => [...document.querySelectorAll("table.runs tbody tr")].map((tr) => [...tr.cells].map((c) => c.innerText.trim())));
    t.equal(rows.map((r) => r.slice(0, 4).concat(r.slice(5, 7))), [
      [`#${run2.id}`, "running run", "running", `0/${run2.job_count}`, "t4", "nightly"],
      [`#${run1.id}`, "finished run", "done", `${run1.job_count}/${run1.job_count}`, "a100", "stable"],
    ], "rows, newest first");
    t.ok(rows[1][4].includes(`ok ${run1.job_count}`), `verdicts (${rows[1][4]})`);
    t.ok(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/.test(rows[0][7]), "created time");
    await page.getByRole("link", { name: "finished run" }).click();
    await waitForRunPage(page, 1);
    t.ok(page.url().endsWith(`#/runs/${run1.id}`), "the name links to the run");
  });

  await t.step("agents: slots, builds, last seen, current job, draining", async () => {
    await page.goto(`${coord.url}/#/agents`);
    await page.waitForSelector("table.agents tbody tr");
    const rows = await page.evaluate(() => Object.fromEntries([...document.querySelectorAll("table.agents tbody tr")].map((tr) => [tr.dataset.agent, [...tr.cells].map((c) => c.innerText.trim())])));
    const [name1, state1, slots1, builds1, seen1, jobs1] = rows["gpu-host-1"];
    t.ok(name1.startsWith("gpu-host-1") && name1.includes("gpu-host-1.test"), `name and host (${name1})`);
    t.ok(state1.includes("online") && state1.includes("draining"), `online and draining (${state1})`);
    t.ok(slots1.includes("gpu0 · a100 · NVIDIA A100 · 40 GiB") && slots1.includes("gpu1 · a100 · NVIDIA A100-SXM4-80GB · 80 GiB"), `slots (${slots1})`);
    t.ok(builds1.includes("stable 2.5.1+cu124") && builds1.includes("nightly 2.6.0.dev20241121+cu124") && builds1.includes("libtorch: eager, default"), `builds (${builds1})`);
    t.ok(/s ago/.test(seen1), `last seen (${seen1})`);
    t.equal(jobs1, "idle", "no current job");
    const [, state2, slots2, , , jobs2] = rows["gpu-host-2"];
    t.ok(!state2.includes("draining"), "gpu-host-2 is not draining");
    t.ok(slots2.includes("Tesla T4 · 15 GiB"), `T4 slot (${slots2})`);
    t.ok(jobs2.includes(`run ${run2.id} job ${held.id}`) && jobs2.includes(`microsoft/resnet-50 b${held.spec.batch} eager nightly`), `current job (${jobs2})`);
  });

  await t.step("an unknown run shows the coordinator's problem detail", async () => {
    await page.goto(`${coord.url}/#/runs/99`);
    await page.waitForSelector(".state-error");
    t.equal(await page.locator(".state-error .state-detail").textContent(), "run 99 does not exist", "detail");
    t.ok((await page.title()).startsWith("Not found"), "page title");
    await page.goto(`${coord.url}/#/no/such/page`);
    await page.waitForSelector(".state-error");
    t.ok((await page.locator(".state-error").textContent()).includes("There is no page at #/no/such/page"), "unknown address");
  });

  await t.step("without chart.js: tables work and the page says charts unavailable", async () => {
    const bare = await t.page();
    await bare.route("**/vendor/chart.umd.js", (route) => route.fulfill({ status: 404, contentType: "text/plain", body: "missing" }));
    await bare.goto(`${coord.url}/#/runs/${run1.id}`);
    await waitForRunPage(bare, 1);
    t.equal((await readTables(bare))[0].rows.length, 2, "the table is there");
    t.ok((await bare.locator(".charts-unavailable").textContent()).toLowerCase().includes("charts unavailable"), "charts unavailable note");
    t.equal(await bare.locator("canvas").count(), 0, "no canvases");
    const results = await api.results(run1.id);
    await bare.goto(`${coord.url}/#/results/${results[0].id}`);
    await bare.waitForSelector(".histogram .charts-unavailable");
    await bare.context().close();
  });

  await t.step("a registered model: its rows in a run's table, its source on the Models page", async () => {
    await api.postJson("/api/v1/models", { id: "acme/tiny-regnet", source: "torchvision", architecture: "regnet_y_400mf", name: "TinyRegNet" }, OPERATOR_TOKEN);
    await api.postJson("/api/v1/models", { id: "acme/factory", source: "python", factory: "acme_models.vision:make", task: "Object Detection", name: "AcmeDet" }, OPERATOR_TOKEN);
    const a3 = await Agent.enroll(api, { name: "gpu-host-3", slots: [["gpu0", "a100"]], builds: { stable: ["eager"] } });
    const own = await api.submit(matrix({ name: "our models", models: ["acme/tiny-regnet", "factory"], batches: [1], modes: ["eager"] }));
    await a3.finish("gpu0", () => okResult(4.25));
    await page.goto(`${coord.url}/#/runs/${own.id}`);
    await waitForRunPage(page, 1);
    const labels = (await readTables(page))[0].rows.map((r) => r.label);
    t.equal(labels, ["Image Classification/TinyRegNet", "Object Detection/AcmeDet"], "rows named from the definitions, in registration order");
    await page.getByRole("link", { name: "Models" }).click();
    await page.waitForSelector("table.models tbody tr");
    const rows = await page.evaluate(() => Object.fromEntries([...document.querySelectorAll("table.models tbody tr")].map((tr) => [tr.dataset.model, [...tr.cells].map((c) => c.innerText.trim())])));
    t.equal(rows["acme/tiny-regnet"].slice(1, 4), ["Image Classification/TinyRegNet", "torchvision", "torchvision.models regnet_y_400mf"], "a torchvision model's source");
    t.equal(rows["acme/factory"].slice(2, 4), ["python", "acme_models.vision:make"], "a factory's source");
    t.ok(rows["google/vit-base-patch16-224"][3].includes("ViTForImageClassification from its config"), `a seed model's source (${rows["google/vit-base-patch16-224"][3]})`);
  });

  await t.step("coordinator down: a banner, the page keeps its data, retries, recovers", async () => {
    await page.goto(`${coord.url}/#/runs/${run2.id}`);
    await waitForRunPage(page, 1);
    const port = coord.port;
    coord.kill();
    const banner = page.locator("#banner");
    await banner.waitFor({ state: "visible", timeout: 20000 });
    t.ok((await banner.textContent()).includes(`Cannot reach the coordinator at ${coord.url}`), `banner text: ${await banner.textContent()}`);
    t.ok((await banner.textContent()).includes("Retrying"), "says it retries");
    t.equal((await readTables(page)).length, 1, "the run's table stays on screen");
    await page.getByRole("link", { name: "Agents" }).click();
    await page.waitForSelector(".state-waiting");
    t.ok((await page.locator(".state-waiting").textContent()).includes("Waiting for the coordinator"), "a view opened while down waits");
    coord.fixedPort = port;
    await coord.start();
    await banner.waitFor({ state: "hidden", timeout: 20000 });
    await page.waitForSelector("table.agents tbody tr", { timeout: 20000 });
    t.equal(await page.locator("table.agents tbody tr").count(), 3, "the agents view loads once the coordinator is back (the three enrolled)");
  });

  await t.step("private reads: the page asks for the token once, then works (exports too)", async () => {
    const closed = await t.coordinator({ extraFlags: ["--public-reads", "false"] });
    const closedApi = new Api(closed.url);
    const run = await closedApi.submit(matrix({ name: "private", models: ["microsoft/resnet-50"], batches: [1], modes: ["eager", "default"] }));
    const agent = await Agent.enroll(closedApi, { name: "gpu-host-9", slots: [["gpu0", "a100"]], builds: { stable: ["eager", "default"] } });
    await agent.finish("gpu0", () => okResult(4.2));
    const p = await t.page();
    await p.goto(`${closed.url}/#/runs/${run.id}`);
    await p.locator("#token-banner input[name=token]").waitFor();
    t.ok((await p.locator("#token-banner").textContent()).includes("needs a token"), "the banner asks for a token");
    t.ok(await p.locator(".state-error").count() === 1, "the view says what failed");
    await p.locator("#token-banner input[name=token]").fill(OPERATOR_TOKEN);
    await p.keyboard.press("Enter");
    await waitForRunPage(p, 1);
    t.ok(await p.locator("#token-banner").isHidden(), "the banner is gone");
    const [download] = await Promise.all([p.waitForEvent("download"), p.getByRole("link", { name: "Markdown", exact: true }).click()]);
    t.equal(await readFile(await download.path(), "utf8"), await closedApi.report(run.id, "median", "md"), "the export carries the token");
    await p.reload();
    await waitForRunPage(p, 1);
    t.ok(await p.locator("#token-banner").isHidden(), "the token is kept for this tab");
    await p.context().close();
  });

  // Let the held lease go so the coordinator stops cleanly without pending work.
  await a2.post(held, okResult(20)).catch(() => {});
});
