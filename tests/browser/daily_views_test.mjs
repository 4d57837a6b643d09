// What a user at 1400 px sees after a quick-start-like run (stable with torch.compile, unstable
// eager only), against the real coordinator: the wide run table scrolls in its box with a visible
// scrollbar, the model column and the header staying put and opaque, the last column reachable;
// columns empty for every model are left out and named, and left out of the table's figures;
// accurate compiled cells carry a quiet "✓ accurate", eager ones none; the pass rate tells OOM,
// errors and wrong outputs apart, and counts a mode the build lacks as unsupported, not
// attempted; the detail line gives throughput; the compare table scrolls the same way; the
// Series link in the top bar and its search; the result page's telemetry with units, never raw
// floats.
import { join } from "node:path";
import { browserSuite } from "./support/harness.mjs";
import { Api, Agent, matrix, okResult, oomResult, failureResult } from "./support/fleet.mjs";
import { waitForRunPage } from "./support/dashboard.mjs";
import { fmtThroughput } from "../../web/js/format.js";

const MODELS = ["torchvision/resnet18", "torchvision/squeezenet1_1", "torchvision/mobilenet_v3_small", "microsoft/resnet-50",
  "google/vit-base-patch16-224", "facebook/detr-resnet-50", "nvidia/segformer-b0-finetuned-ade-512-512", "facebook/convnext-large-224"];
const MiB = 1024 * 1024;
const COMPILE_MS = 74352.01753499996;  // the raw float the result page used to print
// A fixed count: no cell flagged as noisy, so the marks after the values are the accuracy's.
const MEASUREMENT = { min_iterations: 15, max_iterations: 15 };

function answer(s) {
  const compiled = s.mode !== "eager";
  const is = (model, mode) => s.model === model && s.mode === mode && s.torch_build === "stable";
  if (is("facebook/detr-resnet-50", "default")) return oomResult("warmup", 8 * 1024 * MiB);
  if (is("nvidia/segformer-b0-finetuned-ade-512-512", "default")) return failureResult("error", "RuntimeError: inductor codegen failed");
  const r = okResult((3 + MODELS.indexOf(s.model)) * (compiled ? 0.8 : 1), { n: 15, stopReason: "fixed_count" });
  r.memory = { peak_allocated_bytes: (compiled ? 700 : 900) * MiB, peak_reserved_bytes: 1024 * MiB, peak_rss_bytes: 2048 * MiB };
  r.telemetry = { before_sm_clock_mhz: 1410, after_sm_clock_mhz: 1395, after_temperature_c: 61, after_power_w: 312.46, after_throttle_reasons: 0, host_ms_per_iteration: 3.0123456 };
  if (!compiled) return r;
  r.telemetry = { ...r.telemetry, compile_ms: COMPILE_MS, inductor_cache: "cold", graphs: 1, recompiles: 0 };
  r.accuracy = { verdict: "pass", compiled_error: 4.8e-7, eager_error: 4.3e-7, tolerance: 1.013e-4, output: "logits" };
  if (is("google/vit-base-patch16-224", "default")) {
    r.accuracy = { ...r.accuracy, verdict: "wrong", compiled_error: 0.049, detail: "logits is further from the float64 reference than eager allows" };
  }
  return r;
}

// A page of a browser that draws scrollbars as a desktop user sees them (the harness's browser
// hides them, as headless Chromium does by default). Its page errors fail the step that reads
// `errors`; closed with its browser by `close()`.
async function desktopPage(width, height) {
  const { chromium } = await import("playwright-core");
  const browser = await chromium.launch({
    executablePath: process.env.BENCHFLEET_CHROMIUM || "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox"], ignoreDefaultArgs: ["--hide-scrollbars"],
  });
  const page = await (await browser.newContext({ viewport: { width, height } })).newPage();
  page.setDefaultTimeout(30000);
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  return { page, errors, close: () => browser.close() };
}

// Boxes of what the user sees in the first comparison table (or compare table) on the page.
function geometry(page, scope) {
  return page.evaluate((sel) => {
    const article = document.querySelector(sel);
    const box = article.querySelector(".table-scroll");
    const table = box.querySelector("table");
    const rect = (el) => { const r = el.getBoundingClientRect(); return { left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width, height: r.height }; };
    const rowHead = table.tBodies[0].rows[0].cells[0];
    const firstCell = table.tBodies[0].rows[0].cells[1];
    const lastCell = [...table.tBodies[0].rows[0].cells].at(-1);
    const corner = table.tHead.rows[0].cells[0];
    // What is drawn at the middle of `el`: "" when it is el (or inside it), else what covers it.
    const hit = (el) => {
      const r = el.getBoundingClientRect();
      const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
      return at && (at === el || el.contains(at)) ? "" : `${at?.tagName}.${at?.className} ${at?.textContent.slice(0, 30)}`;
    };
    const s = getComputedStyle(box);
    return {
      scrollWidth: box.scrollWidth, clientWidth: box.clientWidth, scrollLeft: box.scrollLeft,
      scrollHeight: box.scrollHeight, clientHeight: box.clientHeight,
      // What a horizontal scrollbar takes at the bottom of the box (0: none, or an overlay one).
      scrollbar: box.offsetHeight - box.clientHeight - parseFloat(s.borderTopWidth) - parseFloat(s.borderBottomWidth),
      box: rect(box), innerLeft: box.getBoundingClientRect().left + box.clientLeft,
      rowHead: rect(rowHead), firstCell: rect(firstCell), lastCell: rect(lastCell), corner: rect(corner),
      rowHeadOnTop: hit(rowHead), cornerOnTop: hit(corner),
      rowHeadBackground: getComputedStyle(rowHead).backgroundColor, cornerBackground: getComputedStyle(corner).backgroundColor,
      viewport: { width: innerWidth, height: innerHeight }, pageWidth: document.documentElement.scrollWidth,
    };
  }, scope);
}

function scrollBox(page, scope, { left, top }) {
  return page.evaluate(([sel, l, t]) => new Promise((resolve) => {
    const box = document.querySelector(sel).querySelector(".table-scroll");
    if (l !== null) box.scrollLeft = l === "end" ? box.scrollWidth : l;
    if (t !== null) box.scrollTop = t === "end" ? box.scrollHeight : t;
    requestAnimationFrame(() => requestAnimationFrame(resolve));
  }), [scope, left ?? null, top ?? null]);
}

// The sticky model column and header, and the last column, as a user scrolling sees them.
async function checkScrolling(t, page, scope, what, screenshot) {
  await page.evaluate((sel) => document.querySelector(sel).querySelector(".table-scroll").scrollIntoView({ block: "start" }), scope);
  const before = await geometry(page, scope);
  t.ok(before.scrollWidth > before.clientWidth + 50, `${what}: the table is wider than its box (${before.scrollWidth} > ${before.clientWidth})`);
  t.ok(before.pageWidth <= before.viewport.width, `${what}: the page itself does not overflow (${before.pageWidth} px)`);
  t.ok(before.scrollbar >= 8, `${what}: a visible horizontal scrollbar (${before.scrollbar} px)`);
  t.ok(before.box.bottom <= before.viewport.height, `${what}: scrolled to, the box and its scrollbar fit on screen (bottom ${before.box.bottom} px)`);
  t.ok(before.lastCell.right > before.box.right, `${what}: the last column starts out of view`);
  await scrollBox(page, scope, { left: "end" });
  const after = await geometry(page, scope);
  t.ok(after.scrollLeft > 0, `${what}: the box scrolled (${after.scrollLeft})`);
  t.ok(Math.abs(after.rowHead.left - before.rowHead.left) < 1, `${what}: the model column stays (${before.rowHead.left} -> ${after.rowHead.left})`);
  t.ok(Math.abs(after.corner.left - before.corner.left) < 1, `${what}: the Task/Model header stays`);
  t.ok(after.firstCell.left < before.firstCell.left - 50, `${what}: the cells moved under it`);
  t.equal([after.rowHeadOnTop, after.cornerOnTop], ["", ""], `${what}: the model column is drawn over the cells passing under it`);
  for (const bg of [after.rowHeadBackground, after.cornerBackground]) t.ok(bg !== "rgba(0, 0, 0, 0)" && bg !== "transparent", `${what}: opaque background (${bg})`);
  t.ok(after.lastCell.right <= after.innerLeft + after.clientWidth + 1, `${what}: the last column ends inside the box (${after.lastCell.right} <= ${after.innerLeft + after.clientWidth})`);
  t.ok(after.lastCell.left >= after.rowHead.right - 1, `${what}: the last column is not under the model column`);
  // The table's box scrolled to its last column.
  const path = join(t.artifacts, screenshot);
  await page.locator(`${scope} .table-scroll`).first().screenshot({ path });
  console.log(`screenshot: ${path}`);
  await scrollBox(page, scope, { left: 0 });
}

await browserSuite("browser_daily_views", async (t) => {
  const coord = await t.coordinator();
  const api = new Api(coord.url);
  const run = await api.submit(matrix({ name: "quick start at 1400 px", models: MODELS, modes: ["eager", "default", "reduce-overhead"], builds: ["stable", "unstable"], measurement: MEASUREMENT }));
  const agent = await Agent.enroll(api, { name: "gpu-host-1", slots: [["gpu0", "a100"]], builds: { stable: ["eager", "default", "reduce-overhead"], unstable: ["eager"] } });
  await agent.finish("gpu0", answer);
  await t.eventually(async () => (await api.run(run.id)).state === "done", "the run is done");
  const report = await api.report(run.id, "mean");
  const [table] = report.tables;
  const page = await t.page({ width: 1400, height: 900 });
  const runUrl = `${coord.url}/#/runs/${run.id}`;
  const col = (key) => table.columns.findIndex((c) => c.key === key);
  await page.goto(runUrl);
  await waitForRunPage(page, 1);

  await t.step("at 1400 px the run table scrolls in its box; the model column and header stay, the last column is reachable", async () => {
    const desktop = await desktopPage(1400, 900);
    try {
      await desktop.page.goto(runUrl);
      await waitForRunPage(desktop.page, 1);
      await checkScrolling(t, desktop.page, ".report-table", "run table", "daily-views-run-table.png");
      // A short window: the rows scroll in the box under a header that stays.
      await desktop.page.setViewportSize({ width: 1400, height: 420 });
      const top = await geometry(desktop.page, ".report-table");
      t.ok(top.scrollHeight > top.clientHeight, `the rows overflow the box of a short window (${top.scrollHeight} > ${top.clientHeight})`);
      await scrollBox(desktop.page, ".report-table", { top: "end" });
      const down = await geometry(desktop.page, ".report-table");
      t.ok(Math.abs(down.corner.top - top.corner.top) < 1, `the header stays at the top of the box (${top.corner.top} -> ${down.corner.top})`);
    t.equal(down.cornerOnTop, "", "the header is drawn over the rows passing under it");
      t.ok(down.firstCell.top < top.firstCell.top - 20, "the rows moved under it");
      t.equal(desktop.errors, [], "no errors in the page");
    } finally {
      await desktop.close();
    }
  });

  await t.step("columns empty for every model are left out, and the note under the table names them", async () => {
    const hidden = table.columns.filter((_, c) => table.rows.every((r) => ["not_run", "unavailable"].includes(r.cells[c].status)));
    const keys = hidden.map((c) => c.key);
    for (const k of ["speedup/unstable/libtorch/default", "compile/unstable/libtorch/default", "memory/unstable/libtorch/default", "memory_ratio/unstable/libtorch/default"]) {
      t.ok(keys.includes(k), `the fixture has an empty ${k} column`);
    }
    const shownHeaders = await page.locator(".report-table thead th").evaluateAll((ths) => ths.map((th) => th.dataset.col ?? "model"));
    t.equal(shownHeaders, ["model", ...table.columns.filter((c) => !keys.includes(c.key)).map((c) => c.key)], "the columns drawn: every one with something in it");
    t.equal(await page.locator('.report-table td[data-col="latency/unstable/libtorch/default"][data-status=unsupported]').count(), MODELS.length,
      "a column of unsupported cells says so: it stays");
    const note = page.locator(".report-table .hidden-columns");
    t.ok(await note.isVisible(), "the note is shown");
    t.equal(await note.textContent(), `Hidden, empty for every model: ${hidden.map((c) => c.header).join(", ")}.`, "the note names the hidden columns");
  });

  await t.step("the table's figures leave out the same columns: no row of 'no value' slots for them", async () => {
    const hiddenKeys = new Set(table.columns.filter((_, c) => table.rows.every((r) => ["not_run", "unavailable"].includes(r.cells[c].status))).map((c) => c.key));
    const shown = (kind) => table.columns.filter((c) => c.kind === kind && !hiddenKeys.has(c.key)).map((c) => c.header);
    await page.locator(".report-table .figures[data-drawn]").first().waitFor();
    const charts = await page.evaluate(() => Object.fromEntries([...document.querySelector(".report-table .figures").querySelectorAll("figure")].map((f) => [
      [...f.classList].find((x) => x.startsWith("chart-") && x !== "chart-box").slice(6),
      window.Chart.getChart(f.querySelector("canvas")).data.datasets.map((d) => d.label)])));
    t.equal(charts.latency, shown("latency_ms"), "latency: the columns the table shows (the unsupported one kept, with its marks)");
    t.equal(charts.compile, shown("compile_ms"), "compile time: the unstable build's empty column left out");
    t.equal(charts.improvement, shown("speedup").map((x) => x.replace(/ speedup$/, "")), "improvement: the unstable build's empty speedup left out");
    t.ok(!charts.compile.some((l) => l.includes("unstable")) && !charts.improvement.some((l) => l.includes("unstable")), `nothing of the unstable build's compiled figures (${JSON.stringify(charts)})`);
  });

  await t.step("accurate compiled cells carry a quiet ✓ accurate; eager cells and inaccurate ones do not", async () => {
    const cells = await page.locator('.report-table td[data-col^="latency/"]').evaluateAll((tds) => tds.map((td) => ({
      col: td.dataset.col, model: td.parentElement.dataset.model, mark: td.querySelector(".acc-pass")?.textContent ?? null,
      title: td.querySelector(".acc-pass")?.title ?? null, badge: td.querySelector(".badge.acc")?.textContent ?? null,
    })));
    let marked = 0;
    for (const c of cells) {
      const cell = table.rows.find((r) => r.model === c.model).cells[col(c.col)];
      const want = cell.status === "ok" && cell.accuracy === "pass";
      t.equal(c.mark, want ? "✓ accurate" : null, `${c.model} ${c.col}: the accurate mark`);
      if (want) { marked++; t.ok(c.title.includes("accurate"), `${c.model} ${c.col}: the mark's tooltip`); }
      if (c.col.endsWith("/eager")) t.equal(c.mark, null, `${c.model} ${c.col}: no mark on eager`);
    }
    t.ok(marked >= 10, `accurate cells marked (${marked})`);
    const vit = cells.find((c) => c.model === "google/vit-base-patch16-224" && c.col === "latency/stable/libtorch/default");
    t.equal([vit.mark, vit.badge], [null, "wrong"], "the wrong cell keeps its wrong badge, no check mark");
    const look = await page.locator(".report-table td .acc-pass").first().evaluate((el) => {
      const s = getComputedStyle(el);
      return { size: parseFloat(s.fontSize), cell: parseFloat(getComputedStyle(el.parentElement).fontSize), weight: Number(s.fontWeight) };
    });
    t.ok(look.size < look.cell && look.weight < 600, `a quiet mark: smaller than the value, not bold (${JSON.stringify(look)})`);
    t.equal(await page.locator(".report-table td[data-col^='speedup/'] .acc-pass").count(), 0, "no mark on speedup cells");
  });

  await t.step("the pass rate tells OOM, errors and wrong outputs apart", async () => {
    const rate = table.pass_rates.find((p) => p.column === "latency/stable/libtorch/default");
    t.equal([rate.passed, rate.attempted], [5, 8], "the report: 5 of 8 passed");
    const li = page.locator('.report-table .pass-rates li[data-column="latency/stable/libtorch/default"]');
    const text = await li.textContent();
    t.ok(text.startsWith(`Pass rate ${rate.header}: 5/8 (62%)`), `the line starts with the rate: ${text}`);
    t.ok(text.endsWith(": 1 OOM, 1 error, 1 wrong"), `the line names why the others failed: ${text}`);
    if (typeof rate.oom === "number") {
      t.equal([rate.oom, rate.errors, rate.wrong], [1, 1, 1], "the report's own split");
      t.equal(text, rate.text, "the page says what the report says");
    }
    const looks = await li.locator(".pass-reason").evaluateAll((spans) => spans.map((s) => [s.dataset.reason, getComputedStyle(s).color, getComputedStyle(s).backgroundColor]));
    t.equal(looks.map((l) => l[0]), ["oom", "error", "wrong"], "one mark per reason");
    const [oom, error, wrong] = looks;
    t.ok(oom[1] !== wrong[1] && oom[2] !== wrong[2] && oom[2] !== error[2], `an OOM does not look like an accuracy failure or an error (${JSON.stringify(looks)})`);
    const reduce = await page.locator('.report-table .pass-rates li[data-column="latency/stable/libtorch/reduce-overhead"]').textContent();
    t.ok(/8\/8 \(100%\)$/.test(reduce), `all passed: no reasons (${reduce})`);
  });

  await t.step("a mode the build lacks: its pass rate counts the cells unsupported, not attempted, in a neutral look", async () => {
    const key = "latency/unstable/libtorch/default";
    const rate = table.pass_rates.find((p) => p.column === key);
    t.ok(rate, "the report has a pass rate for the unstable build's default mode");
    t.equal([rate.passed, rate.attempted], [0, 0], "none attempted: unsupported cells never ran");
    const li = page.locator(`.report-table .pass-rates li[data-column="${key}"]`);
    const text = await li.textContent();
    t.ok(text.endsWith(`0/0 (-): ${MODELS.length} unsupported`), `the line names the unsupported cells: ${text}`);
    if (typeof rate.unsupported === "number") {
      t.equal(rate.unsupported, MODELS.length, "the report's own count");
      t.equal(text, rate.text, "the page says what the report says");
    }
    const mark = li.locator(".pass-reason");
    t.equal(await mark.evaluateAll((spans) => spans.map((s) => s.dataset.reason)), ["unsupported"], "one mark, unsupported");
    t.ok((await mark.getAttribute("title")).includes("not attempted"), "its tooltip says it is not attempted");
    const look = (sel) => page.locator(sel).first().evaluate((el) => [getComputedStyle(el).color, getComputedStyle(el).backgroundColor]);
    const [unsupported, wrong, error] = await Promise.all([look(`.report-table .pass-rates li[data-column="${key}"] .pass-reason`),
      look(".report-table .pass-rates .pr-wrong"), look(".report-table .pass-rates .pr-error")]);
    const muted = await page.evaluate(() => getComputedStyle(document.querySelector(".report-table .hidden-columns")).color);
    t.equal(unsupported[0], muted, `muted text, as notes are (${unsupported[0]})`);
    t.ok(unsupported[1] !== wrong[1] && unsupported[1] !== error[1], `not the look of a failure (${JSON.stringify([unsupported, wrong, error])})`);
  });

  await t.step("the detail line of a latency cell gives its throughput", async () => {
    const key = "latency/stable/libtorch/eager";
    const cell = table.rows.find((r) => r.model === MODELS[0]).cells[col(key)];
    const perS = typeof cell.throughput_per_s === "number" ? cell.throughput_per_s : (table.batch * 1000) / cell.value_ms;
    await page.locator(`.report-table tbody tr[data-model="${MODELS[0]}"] td[data-col="${key}"]`).focus();
    const detail = await page.locator(".report-table .cell-detail").textContent();
    t.ok(detail.includes(fmtThroughput(perS)), `the detail line says ${fmtThroughput(perS)}: ${detail}`);
    t.ok(/ samples\/s/.test(detail), "with its unit");
  });

  await t.step("the compare table scrolls the same way at a narrower width", async () => {
    const again = await api.submit(matrix({ name: "stable again", models: MODELS, modes: ["eager", "default", "reduce-overhead"], builds: ["stable"], measurement: MEASUREMENT }));
    await agent.finish("gpu0", answer);
    const desktop = await desktopPage(1000, 900);
    try {
      await desktop.page.goto(`${coord.url}/#/compare?a=${run.id}:stable&b=${again.id}:stable`);
      await desktop.page.waitForSelector(".compare-table table tbody td");
      await checkScrolling(t, desktop.page, ".compare-table", "compare table", "daily-views-compare.png");
      t.equal(desktop.errors, [], "no errors in the page");
    } finally {
      await desktop.close();
    }
  });

  await t.step("the top bar links to the series, whose search narrows the list", async () => {
    const all = (await api.getJson("/api/v1/series?limit=500")).series;
    const link = page.locator('.topbar nav a[data-nav="series"]');
    t.equal(await link.textContent(), "Series", "a Series link in the top bar");
    await link.click();
    await page.waitForSelector("table.series-list tbody tr");
    t.ok(page.url().endsWith("#/series"), `the link opens the series list (${page.url()})`);
    t.equal(await link.getAttribute("aria-current"), "page", "the link is marked current");
    t.equal(await page.locator("table.series-list tbody tr").count(), Math.min(100, all.length), "every series listed");
    const search = page.getByRole("searchbox", { name: "Search series" });
    const shown = () => page.locator("table.series-list tbody tr").evaluateAll((trs) => trs.map((tr) => Number(tr.dataset.series)).sort((a, b) => a - b));
    const want = (pred) => all.filter(pred).map((s) => s.id).sort((a, b) => a - b);
    await search.pressSequentially("resnet18", { delay: 20 });
    const resnet18 = want((s) => s.model === "torchvision/resnet18");
    t.ok(resnet18.length >= 4, `the fixture has resnet18 series (${resnet18.length})`);
    await t.eventually(async () => JSON.stringify(await shown()) === JSON.stringify(resnet18), "“resnet18” lists the torchvision/resnet18 series only", 10000,
      async () => JSON.stringify(await shown()));
    t.ok(page.url().includes("q=resnet18"), `the search is in the URL (${page.url()})`);
    t.equal(await page.evaluate(() => document.activeElement?.name), "q", "typing keeps focus in the search box");
    await search.pressSequentially(" unstable", { delay: 20 });
    await t.eventually(async () => JSON.stringify(await shown()) === JSON.stringify(want((s) => s.model === "torchvision/resnet18" && s.torch_build === "unstable")),
      "“resnet18 unstable”: its unstable series only", 10000, async () => JSON.stringify(await shown()));
    // Punctuation aside: "resnet-50" is in microsoft/resnet-50 and facebook/detr-resnet-50.
    await search.fill("resnet-50 reduce-overhead");
    const resnet50 = want((s) => /resnet-50$/.test(s.model) && s.mode === "reduce-overhead");
    t.equal(resnet50.length, 2, "two models end in resnet-50");
    await t.eventually(async () => JSON.stringify(await shown()) === JSON.stringify(resnet50),
      "a model with punctuation and a mode", 10000, async () => JSON.stringify(await shown()));
    await search.fill("no-such-model");
    await page.waitForSelector(".state-empty");
    t.ok((await page.locator(".state-empty").textContent()).includes("No series match."), "nothing matches: says so");
  });

  await t.step("the result page shows telemetry with units, never raw floats", async () => {
    const results = await api.results(run.id);
    const compiled = results.find((r) => r.job.mode === "default" && r.job.model === MODELS[0] && r.job.torch_build === "stable");
    await page.goto(`${coord.url}/#/results/${compiled.id}`);
    await page.waitForSelector("table[data-table=telemetry]");
    const kv = await page.evaluate(() => Object.fromEntries([...document.querySelectorAll("table[data-table=telemetry] tr")].map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent])));
    t.equal(Object.keys(kv), Object.keys(compiled.result.telemetry), "every telemetry key");
    t.equal(kv.compile_ms, "74.35 s", "compile time in seconds");
    t.equal(kv.before_sm_clock_mhz, "1,410 MHz", "clock in MHz");
    t.equal(kv.after_temperature_c, "61 °C", "temperature");
    t.equal(kv.after_power_w, "312.5 W", "power");
    t.equal(kv.host_ms_per_iteration, "3.012 ms", "a per-iteration time in ms");
    for (const [k, v] of Object.entries(kv)) t.ok(!/\d\.\d{5,}/.test(v), `${k}: no raw float (${v})`);
    const stats = await page.evaluate(() => Object.fromEntries([...document.querySelectorAll("table[data-table=stats] tr")].map((tr) => [tr.cells[0].textContent, tr.cells[1].textContent])));
    t.ok(/^\d+\.\d\d?%$/.test(stats.cv), `the CV in percent (${stats.cv})`);
    t.equal(await page.locator("table[data-table=telemetry] tr", { hasText: "compile_ms" }).locator("td").getAttribute("title"), String(COMPILE_MS), "the value as recorded in the tooltip");
  });
});
