// The dashboard views against the real coordinator: a nightly series fed through the
// agent API across seven torch versions (three at 10 ms, an OOM, three at 11.5 ms), so the
// detector confirms a regression. A report cell links to its series; the trend chart draws every
// point with its CI band, marks the OOM (never a zero) and the first bad point, and its hover
// names the torch version; the regressions page shows the range to bisect, and acknowledging
// (asking for the operator token first) changes the state; the schedules page pauses, resumes
// and deletes a schedule.
import { browserSuite } from "./support/harness.mjs";
import { OPERATOR_TOKEN } from "./support/coordinator.mjs";
import { Api, Agent, matrix, okResult, oomResult } from "./support/fleet.mjs";
import { bisectRange, pValueText, ratioText, shortGit } from "../../web/js/history.js";

const MODEL = "microsoft/resnet-50";
const VERSIONS = ["2.6.0.dev20241118", "2.6.0.dev20241119", "2.6.0.dev20241120", "2.6.0.dev20241121", "2.6.0.dev20241122",
  "2.6.0.dev20241123", "2.6.0.dev20241124"];
const GITS = VERSIONS.map((_, i) => `${"0123456789abcdef"[i + 3].repeat(3)}${i}f00d${i}c0ffee`);
const OOM_AT = 3;        // the fourth version ran out of memory
const STEP_AT = 4;       // from the fifth on, 15% slower
const median = (i) => (i < STEP_AT ? 10 : 11.5);

await browserSuite("browser_history", async (t) => {
  const coord = await t.coordinator();
  const api = new Api(coord.url);
  const agent = await Agent.enroll(api, { name: "nightly-host", slots: [["gpu0", "a100"]], builds: { nightly: ["eager"] } });
  const runs = [];
  for (const [i, version] of VERSIONS.entries()) {
    const run = await api.submit(matrix({ name: `nightly ${version}`, models: [MODEL], batches: [1], modes: ["eager"], builds: ["nightly"] }));
    const env = { torch_version: version, torch_git: GITS[i] };
    const done = await agent.finish("gpu0", () => (i === OOM_AT
      ? { ...oomResult("warmup", 4294967296), environment: { ...oomResult().environment, ...env } }
      : okResult(median(i), { n: 15, env })));
    t.ok(done.length === 1, `run ${run.id} answered`);
    runs.push(run);
  }
  const key = { model: MODEL, gpu: "a100", dtype: "float32", batch: "1", mode: "eager", runtime: "libtorch", build: "nightly" };
  const listed = await api.getJson(`/api/v1/series?${new URLSearchParams(key)}`);
  t.equal(listed.series.length, 1, "one series for the cell");
  const seriesId = listed.series[0].id;
  const regression = await t.eventually(async () => (await api.getJson("/api/v1/regressions")).regressions[0], "the detector confirms the step", 30000);
  const detail = await api.getJson(`/api/v1/series/${seriesId}`);
  const points = detail.points;
  t.equal(points.map((p) => p.torch_version), VERSIONS, "the points in torch version order");
  t.equal(regression.first_bad.torch_version, VERSIONS[STEP_AT], "the change starts at the step");
  t.equal(regression.last_good.torch_version, VERSIONS[STEP_AT - 2], "the last good point is the last ok one before it");
  const seriesHash = "#/series?model=microsoft%2Fresnet-50&gpu=a100&dtype=float32&batch=1&mode=eager&runtime=libtorch&build=nightly";
  const page = await t.page();

  await t.step("a report cell links to its series, and the link opens the series", async () => {
    await page.goto(`${coord.url}/#/runs/${runs[STEP_AT].id}`);
    await page.waitForSelector(".report-table td[data-status]");
    const cell = page.locator('.report-table td[data-col="latency/nightly/libtorch/eager"]');
    t.equal(await cell.locator("a.series-link").count(), 0, "no link before the cell is pointed at (made on demand)");
    await cell.hover({ position: { x: 3, y: 3 } });
    t.equal(await cell.locator("a.series-link").getAttribute("href"), seriesHash, "pointed at, the cell shows its series link");
    t.equal(await cell.locator("a").first().textContent(), "11.500", "the value still links to its result first");
    t.equal(await cell.locator("a.series-link").textContent(), "", "the link adds no text to the cell");
    const memory = page.locator('.report-table td[data-col^="memory/"]');
    await memory.hover({ position: { x: 3, y: 3 } });
    t.equal(await memory.locator("a.series-link").getAttribute("href"), seriesHash, "a memory cell links to the same series");
    await page.goto(`${coord.url}/#/runs/${runs[OOM_AT].id}`);
    const oom = page.locator('.report-table td[data-col="latency/nightly/libtorch/eager"][data-status=oom]');
    await oom.waitFor();
    await oom.focus();  // the keyboard path: a focused cell shows the link, Enter follows it
    t.equal(await oom.locator("a.series-link").getAttribute("href"), seriesHash, "an OOM cell links too");
    await page.keyboard.press("Enter");
    await t.eventually(() => page.url().endsWith(`#/series/${seriesId}`), `the key resolves to #/series/${seriesId} (${page.url()})`);
  });

  await t.step("the trend chart: every point, the CI band, the OOM marked (not a zero), the first bad point", async () => {
    if (!page.url().endsWith(`#/series/${seriesId}`)) await page.goto(`${coord.url}/#/series/${seriesId}`);  // the step above failed
    await page.waitForSelector(".trend[data-drawn]");
    const chart = await page.evaluate(() => {
      const c = window.Chart.getChart(document.querySelector(".trend canvas"));
      const ds = c.data.datasets;
      return {
        labels: c.data.labels, low: ds[0].data, high: ds[1].data, bandFill: ds[1].fill, median: ds[2].data,
        missing: ds[3].data, missingStyle: ds[3].pointStyle, missingAxis: ds[3].yAxisID, firstBad: ds[4].data,
      };
    });
    t.equal(chart.labels, VERSIONS.map((v, i) => `${v} (${shortGit(GITS[i])})`), "one x label per point: torch version (git)");
    t.equal(chart.median, points.map((p) => (p.status === "ok" ? p.median_ms : null)), "the median line; a gap at the OOM");
    t.equal(chart.low, points.map((p) => p.ci_low_ms), "the band's lower edge is ci_low_ms");
    t.equal(chart.high, points.map((p) => p.ci_high_ms), "the band's upper edge is ci_high_ms");
    t.equal(chart.bandFill, "-1", "the band is filled between the two edges");
    t.ok(chart.high.filter((v, i) => v !== null && v > chart.low[i]).length === VERSIONS.length - 1, "every ok point has a band of some width");
    t.equal(chart.missing.map((v) => v !== null), VERSIONS.map((_, i) => i === OOM_AT), "one marker, at the OOM point");
    t.equal(chart.missingStyle[OOM_AT], "triangle", "the OOM marker's point style");
    t.ok(chart.missing[OOM_AT] < 0.5 && chart.missingAxis === "status", "the OOM marker sits at the bottom, on its own axis");
    t.equal(chart.firstBad.map((v) => v !== null), VERSIONS.map((_, i) => i === STEP_AT), "the first bad point highlighted");
    t.equal(await page.locator(".missing-points li").allTextContents(),
      [`OOM ${VERSIONS[OOM_AT]} (${shortGit(GITS[OOM_AT])}) · run #${runs[OOM_AT].id} · result #${points[OOM_AT].result_id}`], "the OOM point listed");
    const rows = await page.locator("table.points tbody tr").evaluateAll((trs) => trs.map((tr) => [tr.cells[1].textContent, tr.dataset.status, tr.classList.contains("first-bad")]));
    t.equal(rows, points.map((p, i) => [p.torch_version, p.status, i === STEP_AT]), "the points table: version, status, first bad row marked");
    t.equal(await page.locator(`table.points tbody tr:nth-child(${STEP_AT + 1}) a[href="#/runs/${runs[STEP_AT].id}"]`).count(), 1, "a point links to its run");
    t.ok((await page.locator(".series-regressions li").first().textContent()).includes(bisectRange(regression).text), "the series lists its regression");
    await t.screenshot(page, "series-trend.png");
  });

  await t.step("hovering a point shows its torch version, git hash, median and run", async () => {
    const at = await page.evaluate((i) => {
      const c = window.Chart.getChart(document.querySelector(".trend canvas"));
      const el = c.getDatasetMeta(2).data[i];
      const box = c.canvas.getBoundingClientRect();
      return { x: box.left + el.x, y: box.top + el.y };
    }, STEP_AT);
    await page.mouse.move(at.x, at.y);
    const tip = page.locator(".trend-tooltip");
    await tip.waitFor({ state: "visible" });
    const text = await tip.innerText();
    t.ok(text.includes(`torch ${VERSIONS[STEP_AT]} (${shortGit(GITS[STEP_AT])})`), `the tooltip names the torch version: ${text}`);
    t.ok(text.includes("median 11.500 ms") && text.includes(`run #${runs[STEP_AT].id}`), `median and run: ${text}`);
    t.ok(text.includes("regression starts here"), `says the change starts there: ${text}`);
    await t.screenshot(page, "series-hover.png");
  });

  await t.step("the regressions page: series, medians, ratio, p-value and the range to bisect", async () => {
    await page.getByRole("link", { name: "Regressions", exact: true }).click();
    await page.waitForSelector("table.regressions tbody tr");
    const row = page.locator(`table.regressions tr[data-regression="${regression.id}"]`);
    const cells = await row.locator("td, th").allTextContents();
    t.equal(await row.locator("th a").getAttribute("href"), `#/series/${seriesId}`, "the series link");
    t.equal(cells[1], regression.before_median_ms.toFixed(3), "before");
    t.equal(cells[2], regression.after_median_ms.toFixed(3), "after");
    t.equal(cells[3], ratioText(regression.ratio), "ratio");
    t.ok(regression.ratio > 1.1 && regression.ratio < 1.2, `the ratio is the step's (${regression.ratio})`);
    t.equal(cells[4], pValueText(regression.p_value), "p-value");
    const range = bisectRange(regression);
    t.equal(cells[5], range.text, "last good → first bad");
    t.equal(range.text, `${VERSIONS[STEP_AT - 2]} (${shortGit(GITS[STEP_AT - 2])}) → ${VERSIONS[STEP_AT]} (${shortGit(GITS[STEP_AT])})`, "the versions to bisect between");
    t.equal(await row.getAttribute("data-state"), "open", "open");
    await t.screenshot(page, "regressions.png");
  });

  await t.step("acknowledging asks for the operator token, then changes the state", async () => {
    const row = page.locator(`table.regressions tr[data-regression="${regression.id}"]`);
    // Typed key by key: a space or an arrow in the field must not act on the table (grid keys).
    await row.locator("input[name=note]").pressSequentially("bisecting nightly 1121..1122");
    t.equal(await page.locator("#token-form").count(), 0, "typing a space clicked no button");
    await row.getByRole("button", { name: "Acknowledge" }).click();
    await page.waitForSelector("#token-form");
    t.ok((await page.locator("#token-banner").textContent()).includes(`Acknowledging regression ${regression.id} needs the operator token`), "the banner says why");
    await page.fill("#token-form input", OPERATOR_TOKEN);
    await page.locator("#token-form button").click();
    await t.eventually(async () => (await row.getAttribute("data-state")) === "acknowledged", "the row turns acknowledged");
    t.equal(await row.locator(".state-cell .badge").textContent(), "acknowledged", "the state badge");
    const stored = await api.getJson(`/api/v1/regressions/${regression.id}`);
    t.equal([stored.state, stored.note], ["acknowledged", "bisecting nightly 1121..1122"], "the coordinator stored the state and the note");
    t.ok((await row.locator(".state-cell").textContent()).includes("bisecting nightly 1121..1122"), "the note is shown");
    t.equal(await row.locator("button").allTextContents(), ["Resolve", "Reopen"], "what can be done next");
    await page.locator("select[name=state]").selectOption("acknowledged");
    await t.eventually(() => page.url().includes("state=acknowledged"), "the filter is in the URL");
    await page.waitForSelector(`table.regressions tr[data-regression="${regression.id}"][data-state=acknowledged]`);
    await page.locator("select[name=state]").selectOption("open");
    await page.waitForSelector(".state-empty");
    t.ok((await page.locator(".state-empty").textContent()).includes("No open regressions."), "no open regression left");
  });

  await t.step("the series list: a partial filter lists the matching series", async () => {
    await page.goto(`${coord.url}/#/series?gpu=a100&build=nightly`);
    await page.waitForSelector("table.series-list tbody tr");
    t.equal(await page.locator("table.series-list tbody tr th a").getAttribute("href"), `#/series/${seriesId}`, "the series row links to it");
    t.equal(await page.locator("table.series-list tbody tr").count(), 1, "one series");
    await page.fill(".series-filter input[name=mode]", "default");
    await page.locator(".series-filter button").click();
    await t.eventually(() => page.url().endsWith("#/series?gpu=a100&mode=default&build=nightly"), `the filter form's fields go to the URL (${page.url()})`);
    await page.waitForSelector(".state-empty");
    t.ok((await page.locator(".state-empty").textContent()).includes("No series match."), "no default-mode series");
    await page.fill(".series-filter input[name=mode]", "");
    for (const [k, v] of Object.entries(key)) await page.fill(`.series-filter input[name=${k}]`, v);
    await page.locator(".series-filter button").click();
    await t.eventually(() => page.url().endsWith(`#/series/${seriesId}`), `a full key goes to its series (${page.url()})`);
  });

  await t.step("the schedules page: pause, resume and delete (the token kept for the tab)", async () => {
    const schedule = JSON.parse((await api.request("POST", "/api/v1/schedules", {
      body: { cron: "30 2 * * *", matrix: matrix({ name: "nightly study", models: [MODEL], batches: [1, 8], modes: ["eager"], builds: ["nightly"] }) },
    })).text);
    await page.getByRole("link", { name: "Schedules", exact: true }).click();
    const row = page.locator(`table.schedules tr[data-schedule="${schedule.id}"]`);
    await row.waitFor();
    const cells = await row.locator("td, th").allTextContents();
    t.ok(cells[0].startsWith("nightly study"), `name: ${cells[0]}`);
    t.equal(cells[1], "30 2 * * *", "cron");
    t.equal(cells[2], "enabled", "state");
    t.ok(cells[3].includes(":30:00"), `next due: ${cells[3]}`);
    await row.getByRole("button", { name: "Pause" }).click();
    await t.eventually(async () => (await row.getAttribute("data-enabled")) === "false", "the row shows it paused");
    t.equal((await row.locator("td").nth(2).textContent()), "— (paused)", "no next due time while paused");
    t.equal((await api.getJson(`/api/v1/schedules/${schedule.id}`)).enabled, false, "the coordinator paused it");
    await row.getByRole("button", { name: "Resume" }).click();
    await t.eventually(async () => (await row.getAttribute("data-enabled")) === "true", "resumed");
    await row.getByRole("button", { name: "Delete" }).click();
    t.equal(await row.locator("button[data-action=delete]").textContent(), "Click again to delete", "delete asks to confirm");
    t.equal((await api.getJson("/api/v1/schedules")).schedules.length, 1, "not deleted by one click");
    await row.locator("button[data-action=delete]").click();
    await page.waitForSelector(".state-empty");
    t.equal((await api.getJson("/api/v1/schedules")).schedules.length, 0, "deleted");
    t.equal(await page.locator("#token-form").count(), 0, "no second token prompt");
  });
});
