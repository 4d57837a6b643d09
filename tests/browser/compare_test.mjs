// The compare page: two torch builds of one run (stable vs nightly) and two runs, side by side,
// with the ratio A/B per cell from the report JSON of the statistic shown (the median, as every
// view by default), each pair's noise flags (the union of its sides'), and the verdict the real
// CLI's `benchfleet compare --format json` gives the same cells (the coordinator's change rule):
// the page, the report and the CLI read the same. A build the run does not have is the
// coordinator's error on the page. Leaving flagged pairs out of the geomeans says how many were
// left out.
import { execFileSync } from "node:child_process";
import { browserSuite } from "./support/harness.mjs";
import { Api, Agent, matrix, okResult, oomResult } from "./support/fleet.mjs";
import { waitForRunPage } from "./support/dashboard.mjs";

const MODELS = ["google/vit-base-patch16-224", "microsoft/beit-base-patch16-224-pt22k-ft22k", "facebook/detr-resnet-50", "microsoft/resnet-50"];
// Latency (ms) per model and build at batch 1, eager; compiled modes take 80 %. ViT and BEiT
// barely move between builds (CIs overlap), DETR and ResNet get clearly faster on nightly.
const LATENCY = {
  stable: { "google/vit-base-patch16-224": 9.3, "microsoft/beit-base-patch16-224-pt22k-ft22k": 11.3, "facebook/detr-resnet-50": 34.6, "microsoft/resnet-50": 6.5 },
  nightly: { "google/vit-base-patch16-224": 9.35, "microsoft/beit-base-patch16-224-pt22k-ft22k": 11.25, "facebook/detr-resnet-50": 30.5, "microsoft/resnet-50": 3.8 },
};

const answerRun1 = (s) => {
  if (s.model === "facebook/detr-resnet-50" && s.torch_build === "nightly" && s.mode === "default" && s.batch === 4) return oomResult("compile", 536870912);
  const v = LATENCY[s.torch_build][s.model] * (s.mode === "eager" ? 1 : 0.8) * s.batch ** 0.7;
  return okResult(v, { n: 21, ciHalf: v * 0.01 });
};
// Run 2 repeats stable with ResNet 10 % slower and everything else within noise.
const answerRun2 = (s) => {
  const v = LATENCY.stable[s.model] * (s.mode === "eager" ? 1 : 0.8) * s.batch ** 0.7 * (s.model === "microsoft/resnet-50" ? 1.1 : 1.002);
  return okResult(v, { n: 21, ciHalf: v * 0.01 });
};

// The CLI's comparison of two sides ("RUN:BUILD"), as JSON; verdicts by "gpu/batch/model/runtime/mode".
function cliVerdicts(url, a, b) {
  const [runA, buildA] = a.split(":");
  const [runB, buildB] = b.split(":");
  const out = execFileSync(process.env.BENCHFLEET_CLI, ["compare", runA, runB, "--build-a", buildA, "--build-b", buildB, "--format", "json"],
    { env: { ...process.env, BENCHFLEET_URL: url }, encoding: "utf8" });
  const c = JSON.parse(out);
  return { comparison: c, verdicts: new Map(c.cells.map((x) => [`${x.gpu}/${x.batch}/${x.model}/${x.runtime}/${x.mode}`, x])) };
}

// What the page must show for side A (build a) vs side B (build b) in one report table each, the
// verdicts the CLI's.
function expected(tableA, buildA, tableB, buildB, cli) {
  const cols = (table, build) => new Map(table.columns.map((c, i) => [c, i]).filter(([c]) => c.kind === "latency_ms" && c.build === build).map(([c, i]) => [`${c.runtime}/${c.mode}`, i]));
  const ca = cols(tableA, buildA);
  const cb = cols(tableB, buildB);
  const keys = [...ca.keys()].filter((k) => cb.has(k));
  return tableA.rows.map((ra) => {
    const rb = tableB.rows.find((r) => r.model === ra.model);
    return keys.flatMap((k) => {
      const a = ra.cells[ca.get(k)];
      const b = rb.cells[cb.get(k)];
      if (a.status !== "ok" || b.status !== "ok") return [a.text, b.text, "-", "unavailable", ""];
      const judged = cli.verdicts.get(`${tableA.gpu}/${tableA.batch}/${ra.model}/${k}`);
      const verdict = judged?.verdict ?? "missing from the CLI's comparison";
      const flags = [...new Set([...a.flags, ...b.flags])].sort().join(",");
      return [a.text, b.text, `${(a.value / b.value).toFixed(2)}x`, verdict, flags];
    });
  });
}

function readCompare(page) {
  return page.evaluate(() => [...document.querySelectorAll(".compare-table")].map((article) => ({
    title: article.querySelector("h3").textContent,
    rows: [...article.querySelectorAll("tbody tr")].map((tr) => [...tr.cells].slice(1).flatMap((td) =>
      td.classList.contains("ratio")
        ? [td.querySelector(".ratio-value").textContent, td.dataset.verdict, td.querySelector(".marker")?.textContent ?? "", td.dataset.flags]
        : [td.dataset.status === "ok" ? (td.querySelector("a") ?? td.firstChild).textContent : td.textContent])),
    geomeans: [...article.querySelectorAll(".geomeans li")].map((li) => li.textContent),
  })));
}

await browserSuite("browser_compare", async (t) => {
  const coord = await t.coordinator();
  const api = new Api(coord.url);
  const run1 = await api.submit(matrix({ name: "stable vs nightly", models: MODELS, batches: [1, 4], modes: ["eager", "default"], builds: ["stable", "nightly"] }));
  const agent = await Agent.enroll(api, { name: "gpu-host-1", slots: [["gpu0", "a100"]], builds: { stable: ["eager", "default"], nightly: ["eager", "default"] } });
  await agent.finish("gpu0", answerRun1);
  const run2 = await api.submit(matrix({ name: "stable again", models: MODELS, batches: [1, 4], modes: ["eager", "default"], builds: ["stable"] }));
  await agent.finish("gpu0", answerRun2);
  const rep1 = await api.report(run1.id);
  const rep2 = await api.report(run2.id);
  const page = await t.page();

  const check = async (tableA, buildA, tableB, buildB, cli) => {
    const want = expected(tableA, buildA, tableB, buildB, cli);
    const [shown] = await readCompare(page);
    t.equal(shown.title, tableA.title, "table title");
    t.equal(shown.rows.length, want.length, "rows");
    shown.rows.forEach((row, r) => {
      const w = want[r];
      for (let i = 0; i < w.length; i += 5) {
        const j = (i / 5) * 6;
        const where = `${tableA.rows[r].label} column ${i / 5}`;
        t.equal(row.slice(j, j + 4), w.slice(i, i + 4), `${where}: A, B, ratio, verdict`);
        t.equal(row[j + 4], { same: "≈ no significant change", faster: "▲ faster", slower: "▼ slower", unavailable: "" }[w[i + 3]], `${where}: marker`);
        t.equal(row[j + 5], w[i + 4], `${where}: the pair's noise flags`);
      }
    });
    return { shown, want };
  };

  await t.step("stable vs nightly of one run, from the run page's compare link", async () => {
    await page.goto(`${coord.url}/#/runs/${run1.id}`);
    await waitForRunPage(page, 1);
    await page.getByRole("link", { name: "Compare stable vs nightly" }).click();
    await t.eventually(() => page.url().includes(`#/compare?a=${run1.id}:stable&b=${run1.id}:nightly&gpu=a100&batch=1`), `compare URL (${page.url()})`);
    await page.waitForSelector(".compare-table tbody tr");
    const cli = cliVerdicts(coord.url, `${run1.id}:stable`, `${run1.id}:nightly`);
    t.equal(cli.comparison.stat, "median", "the CLI compares the median, as the page and the report show");
    for (const x of cli.comparison.cells.filter((c) => c.batch === 1)) {
      const row = rep1.tables[0].rows.find((r) => r.model === x.model);
      const col = rep1.tables[0].columns.findIndex((c) => c.kind === "latency_ms" && c.build === "stable" && c.runtime === x.runtime && c.mode === x.mode);
      t.equal(x.a_ms, row.cells[col].value, `${x.label} ${x.mode}: the CLI's A is the report's value`);
    }
    const { want } = await check(rep1.tables[0], "stable", rep1.tables[0], "nightly", cli);
    const verdicts = want.flatMap((r) => r.filter((_, i) => i % 5 === 3));
    t.ok(verdicts.includes("same") && verdicts.includes("faster"), `the fixture has both outcomes (${verdicts})`);
    t.equal(await page.locator(".compare-table td.ratio .m-same").count(), verdicts.filter((v) => v === "same").length, "one marker per overlapping pair");
    // The fixture's results claim the time bound; those whose CI came out wider than the run's
    // target are flagged ci_not_met, and their pairs with them.
    const flagged = want.flatMap((r) => r.filter((_, i) => i % 5 === 4)).filter((f) => f !== "").length;
    t.ok(flagged > 0, "the fixture has flagged pairs");
    const before = (await readCompare(page))[0].geomeans;
    await page.locator("input[name=flagged]").check();
    await t.eventually(() => page.url().includes("flagged=exclude"), "exclude flagged in the URL");
    await t.eventually(async () => (await readCompare(page))[0].geomeans.some((g) => /flagged excluded\)$/.test(g)), "geomeans say what they left out");
    t.ok((await readCompare(page))[0].geomeans.join() !== before.join(), "the geomeans changed");
    await page.locator("input[name=flagged]").uncheck();
    await t.eventually(() => !page.url().includes("flagged=exclude"), "flagged pairs back in");
    await t.screenshot(page, "compare-page.png");
  });

  await t.step("batch 4: an OOM side gives no ratio", async () => {
    await page.locator("select[name=batch]").selectOption("4");
    await t.eventually(async () => (await readCompare(page))[0]?.title === "A100 (batch size: 4)", "batch 4 shown");
    await check(rep1.tables[1], "stable", rep1.tables[1], "nightly", cliVerdicts(coord.url, `${run1.id}:stable`, `${run1.id}:nightly`));
    const detr = (await readCompare(page))[0].rows[2];
    t.equal(detr.slice(6, 11), [rep1.tables[1].rows[2].cells[1].text, "OOM", "-", "unavailable", ""], "DETR default: nightly OOM, no ratio");
  });

  await t.step("swap A and B inverts the ratios", async () => {
    await page.getByRole("link", { name: "Swap A and B" }).click();
    await t.eventually(() => page.url().includes(`a=${run1.id}:nightly&b=${run1.id}:stable`), "swapped URL");
    await page.waitForFunction(() => document.querySelector(".compare-table th[scope=colgroup]") && document.querySelector(".compare-table thead tr:nth-child(2) th").textContent.includes("nightly"));
    await check(rep1.tables[1], "nightly", rep1.tables[1], "stable", cliVerdicts(coord.url, `${run1.id}:nightly`, `${run1.id}:stable`));
  });

  await t.step("two runs side by side, from the run page's compare form", async () => {
    await page.goto(`${coord.url}/#/runs/${run1.id}`);
    await waitForRunPage(page, 1);
    await page.locator("input[name=other]").fill(String(run2.id));
    await page.getByRole("button", { name: "Go" }).click();
    await t.eventually(() => page.url().includes(`a=${run1.id}:stable&b=${run2.id}:stable`), `two-run URL (${page.url()})`);
    await page.waitForSelector(".compare-table tbody tr");
    const { want } = await check(rep1.tables[0], "stable", rep2.tables[0], "stable", cliVerdicts(coord.url, `${run1.id}:stable`, `${run2.id}:stable`));
    t.equal(want[3][3], "slower", "ResNet is significantly slower in run 2 (10%, beyond a GPU's 5% floor)");
    t.equal(want[0][3], "same", "ViT: no significant change");
    const fresh = await t.page();
    await fresh.goto(page.url());
    await fresh.waitForSelector(".compare-table tbody tr");
    t.equal(await readCompare(fresh), await readCompare(page), "the permalink restores the comparison");
    await fresh.context().close();
  });

  await t.step("a build the run does not have: the coordinator's error, not a page about it", async () => {
    await page.goto(`${coord.url}/#/compare?a=${run1.id}:stabel&b=${run1.id}:nightly`);
    await t.eventually(async () => (await page.locator(".compare-body").textContent()).includes(`run ${run1.id} has no torch build "stabel"; its builds: stable, nightly`),
      "the error names the run's builds");
    t.equal(await page.locator(".compare-table").count(), 0, "no table");
  });
});
