// Accuracy and dtypes on the run page, against the real coordinator: accuracy badges on compiled cells that
// are wrong (their speedups struck out and left out of geomeans), noise flags, the compile time,
// peak memory and memory-ratio columns, pass rates, the dtype selector (one table per GPU x batch
// x dtype), "exclude flagged from geomeans" (the report refetched with exclude_flagged=true, the
// exports too), the compile-time chart beside the latency chart, and the result page's accuracy
// section. Every value on screen is compared with the report JSON the coordinator serves.
import { browserSuite } from "./support/harness.mjs";
import { Api, Agent, matrix, okResult } from "./support/fleet.mjs";
import { readTables, waitForRunPage } from "./support/dashboard.mjs";

const MODELS = ["microsoft/resnet-50", "google/vit-base-patch16-224"];
const BASE = { "microsoft/resnet-50": 6.531, "google/vit-base-patch16-224": 9.325 };
const MiB = 1024 * 1024;

// The fake agent's answer: eager and compiled results with memory and compile telemetry; one
// compiled cell wrong (the resnet18 figure), one flagged (throttled), one eager
// non-deterministic.
function answer(s) {
  const compiled = s.mode !== "eager";
  const scale = s.dtype === "bfloat16" ? 0.6 : 1;
  const r = okResult(BASE[s.model] * s.batch ** 0.7 * scale * (compiled ? 0.8 : 1), { n: 15, stopReason: "fixed_count" });
  r.memory = { peak_allocated_bytes: (compiled ? 900 : 1200) * s.batch * MiB, peak_reserved_bytes: 2048 * s.batch * MiB, peak_rss_bytes: 3072 * MiB };
  r.telemetry = { before_sm_clock_mhz: 1410, after_sm_clock_mhz: 1405, after_throttle_reasons: 0 };
  if (!compiled) return r;
  r.telemetry = { ...r.telemetry, compile_ms: 41000 + 1000 * s.batch, inductor_cache: s.batch === 4 ? "warm" : "cold", graphs: 1, recompiles: 0, graph_breaks: 0 };
  // The tolerance is the coordinator's rule: 3 x eager's error + the dtype's floor on CUDA.
  const tolerance = 3 * 4.3e-7 + (s.dtype === "bfloat16" ? 4e-2 : 1e-4);
  r.accuracy = { verdict: "pass", compiled_error: 4.8e-7, eager_error: 4.3e-7, tolerance, output: "logits" };
  if (s.model.startsWith("google/vit") && s.batch === 1 && s.dtype === "float32") {
    r.accuracy = { verdict: "wrong", compiled_error: 0.049, eager_error: 4.3e-7, tolerance, output: "logits",
      detail: "logits is further from the float64 reference than 3.0 x eager's error + 0.0001" };
  }
  if (s.model.startsWith("microsoft/resnet") && s.batch === 4 && s.dtype === "float32") {
    r.telemetry.after_throttle_reasons = 4;  // SwPowerCap: throttled while measuring
  }
  if (s.model.startsWith("microsoft/resnet") && s.batch === 1 && s.dtype === "bfloat16") {
    r.accuracy = { verdict: "eager_nondeterministic", compiled_error: 0, eager_error: 0, tolerance: 0,
      detail: "two eager runs on the same inputs gave different outputs" };
  }
  return r;
}

await browserSuite("browser_accuracy_columns", async (t) => {
  const coord = await t.coordinator();
  const api = new Api(coord.url);
  const spec = { ...matrix({ name: "accuracy and dtypes", models: MODELS, batches: [1, 4], modes: ["eager", "default"] }), dtypes: ["float32", "bfloat16"],
    measurement: { min_iterations: 15, max_iterations: 15 } };  // a fixed count: no cell flagged but the throttled one
  const run = await api.submit(spec);
  const agent = await Agent.enroll(api, { name: "gpu-host-1", slots: [["gpu0", "a100"]], builds: { stable: ["eager", "default"] } });
  const answered = await agent.finish("gpu0", answer);
  t.equal(answered.length, 16, "every job answered (2 models x 2 batches x 2 dtypes x 2 modes)");
  const report = await api.getJson(`/api/v1/runs/${run.id}/report?format=json&stat=mean`);
  const excluding = await api.getJson(`/api/v1/runs/${run.id}/report?format=json&stat=mean&exclude_flagged=true`);
  const tableOf = (rep, batch, dtype) => rep.tables.find((tb) => tb.batch === batch && tb.dtype === dtype);
  const page = await t.page();

  await t.step("the report has a table per GPU x batch x dtype, with compile, memory and ratio columns", async () => {
    t.equal(report.tables.map((tb) => `${tb.batch}/${tb.dtype}`), ["1/float32", "1/bfloat16", "4/float32", "4/bfloat16"], "table order: batch, then dtype");
    const kinds = new Set(report.tables[0].columns.map((c) => c.kind));
    for (const k of ["latency_ms", "speedup", "compile_ms", "peak_memory_mb", "memory_ratio"]) t.ok(kinds.has(k), `column kind ${k}`);
    const wrongTable = tableOf(report, 1, "float32");
    const geo = wrongTable.geomeans[0];
    t.equal(geo.excluded_inaccurate, 1, "the wrong ViT speedup is left out of the geomean");
    t.equal(geo.covered, 1, "only ResNet's speedup is in the float32 batch-1 geomean");
    t.equal(wrongTable.pass_rates[0].passed, 1, "one of two compiled cells is ok and accurate");
    t.equal(wrongTable.pass_rates[0].attempted, 2, "two compiled cells attempted");
    t.equal(tableOf(report, 4, "float32").geomeans[0].covered, 2, "without exclude_flagged the throttled cell counts");
    t.equal(tableOf(excluding, 4, "float32").geomeans[0].excluded_flagged, 1, "with exclude_flagged it is left out");
  });

  await t.step("cells, badges, flags, pass rates and geomeans on screen equal the report JSON", async () => {
    await page.goto(`${coord.url}/#/runs/${run.id}?batch=all`);
    await waitForRunPage(page, 2);
    const shown = await readTables(page);
    const expected = report.tables.filter((tb) => tb.dtype === "float32");
    t.equal(shown.map((tb) => tb.title), expected.map((tb) => tb.title), "the float32 tables are shown first");
    shown.forEach((tb, i) => {
      t.equal(tb.headers, ["Task/Model", ...expected[i].columns.map((c) => c.header)], `${tb.title}: headers`);
      t.equal(tb.geomeans, expected[i].geomeans.map((g) => g.text), `${tb.title}: geomean lines`);
    });
    const cells = await page.evaluate(() => [...document.querySelectorAll(".report-table")].map((a) => [...a.querySelectorAll("tbody tr")].map((tr) =>
      [...tr.querySelectorAll("td")].map((td) => ({
        col: td.dataset.col, status: td.dataset.status, accuracy: td.dataset.accuracy ?? null, flags: td.dataset.flags ?? null,
        value: td.querySelector("a:not(.series-link)")?.textContent ?? td.firstChild?.textContent ?? "",
        badge: td.querySelector(".badge.acc")?.textContent ?? null, flag: td.querySelector(".flag")?.title ?? null, struck: td.classList.contains("excluded"),
      })))));
    expected.forEach((tb, i) => tb.rows.forEach((row, r) => row.cells.forEach((cell, c) => {
      const td = cells[i][r][c];
      const where = `${tb.title} ${row.model} ${tb.columns[c].key}`;
      t.equal(td.status, cell.status, `${where}: status`);
      t.equal(td.value, cell.text, `${where}: text`);
      t.equal(td.accuracy, cell.accuracy ?? null, `${where}: accuracy`);
      t.equal(td.flags, cell.flags?.length ? cell.flags.join(",") : null, `${where}: flags`);
      if (cell.accuracy === "wrong") t.equal(td.badge, "wrong", `${where}: a "wrong" badge`);
      if (cell.flags?.length) t.ok(td.flag && td.flag.length > 0, `${where}: a flag explaining ${cell.flags}`);
      if (tb.columns[c].kind === "speedup" && cell.accuracy === "wrong") t.ok(td.struck, `${where}: the speedup is struck out`);
    })));
    const rates = await page.evaluate(() => [...document.querySelectorAll(".report-table")].map((a) => [...a.querySelectorAll(".pass-rates li")].map((li) => li.textContent)));
    t.equal(rates, expected.map((tb) => tb.pass_rates.map((p) => p.text)), "pass-rate lines");
    const wrong = await page.locator('.report-table td[data-accuracy="wrong"][data-col^="latency/"]').first();
    t.ok((await wrong.getAttribute("title")).includes("wrong"), "the wrong cell's tooltip says why");
    await t.screenshot(page, "accuracy-columns.png");
  });

  await t.step("the compile-time chart sits beside the latency chart, in seconds, with gaps for no value", async () => {
    await page.waitForFunction(() => document.querySelector(".report-table .chart-compile canvas") && window.Chart?.getChart(document.querySelector(".report-table .chart-compile canvas")), null, { timeout: 20000 });
    const chart = await page.evaluate(() => {
      const c = window.Chart.getChart(document.querySelector(".report-table .chart-compile canvas"));
      return { labels: c.data.labels, data: c.data.datasets.map((d) => d.data) };
    });
    const tb = report.tables.find((x) => x.dtype === "float32" && x.batch === 1);
    const cols = tb.columns.map((c, i) => [c, i]).filter(([c]) => c.kind === "compile_ms");
    t.equal(chart.data, cols.map(([, i]) => tb.rows.map((r) => (r.cells[i].status === "ok" ? r.cells[i].value / 1000 : null))), "compile seconds per model");
    const sideBySide = await page.evaluate(() => {
      const box = (s) => document.querySelector(`.report-table ${s}`).getBoundingClientRect();
      return Math.abs(box(".chart-latency").top - box(".chart-compile").top) < 2;
    });
    t.ok(sideBySide, "compile chart on the latency chart's row");
  });

  await t.step("the dtype selector shows the bfloat16 tables; the permalink keeps it", async () => {
    await page.selectOption("select[name=dtype]", "bfloat16");
    await page.waitForFunction(() => [...document.querySelectorAll(".report-table")].every((a) => a.dataset.dtype === "bfloat16"));
    const shown = await readTables(page);
    t.equal(shown.map((x) => x.title), report.tables.filter((x) => x.dtype === "bfloat16").map((x) => x.title), "bfloat16 titles");
    t.ok(page.url().includes("dtype=bfloat16"), `permalink ${page.url()}`);
    const nondet = await page.locator('.report-table td[data-accuracy="eager_nondeterministic"][data-col^="latency/"] .badge').first().textContent();
    t.equal(nondet, "nondet.", "eager non-determinism has its own badge");
  });

  await t.step("exclude flagged: the report is refetched with exclude_flagged=true and the exports follow", async () => {
    await page.goto(`${coord.url}/#/runs/${run.id}?batch=4`);
    await waitForRunPage(page, 1);
    const requested = page.waitForRequest((req) => req.url().includes("exclude_flagged=true") && req.url().includes("format=json"));
    await page.check("input[name=flagged]");
    await requested;
    const want = tableOf(excluding, 4, "float32").geomeans.map((g) => g.text);
    await page.waitForFunction((w) => JSON.stringify([...document.querySelectorAll(".report-table .geomeans li")].map((li) => li.textContent)) === JSON.stringify(w), want);
    t.ok(page.url().includes("flagged=exclude"), "the choice is in the URL");
    const href = await page.locator("a[data-export=csv]").getAttribute("href");
    t.ok(href.includes("exclude_flagged=true"), `CSV export link ${href}`);
  });

  await t.step("the result page shows the accuracy verdict with its errors, and the flags", async () => {
    const results = await api.results(run.id);
    const wrong = results.find((r) => r.result.accuracy?.verdict === "wrong");
    await page.goto(`${coord.url}/#/results/${wrong.id}`);
    await page.waitForSelector("table[data-table=accuracy]");
    const kv = await page.evaluate(() => Object.fromEntries([...document.querySelectorAll("table[data-table=accuracy] tr")].map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent])));
    t.equal(kv.verdict, "wrong", "verdict");
    t.equal(kv["compiled error (relative L2 vs float64)"], (0.049).toExponential(3), "compiled error");
    const flagged = results.find((r) => (r.flags ?? []).includes("throttled"));
    t.ok(flagged, "the results listing carries the throttled flag");
    await page.goto(`${coord.url}/#/results/${flagged.id}`);
    await page.waitForSelector("table[data-table=accuracy]");
    t.ok((await page.locator("table[data-table=accuracy]").textContent()).includes("throttled"), "the flag on the result page");
  });
});
