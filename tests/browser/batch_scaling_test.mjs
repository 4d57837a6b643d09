// The run page's "Batch scaling" section against the real coordinator, fed through the agent
// API: a run with batch sizes 1, 4 and 16 on one GPU class, one mode out of memory at batch 16.
// The section shows the first model's latency and throughput per (build, runtime, mode) across
// the batch sizes, equal to the report JSON; the OOM is a gap named in the legend, the tooltip,
// the list under the chart and the numbers table; picking another model redraws with its values;
// without chart.js the numbers table is open; a run with one batch size has no section.
import { browserSuite } from "./support/harness.mjs";
import { Api, Agent, matrix, okResult, oomResult } from "./support/fleet.mjs";
import { waitForRunPage } from "./support/dashboard.mjs";

const VIT = "google/vit-base-patch16-224";
const RESNET = "microsoft/resnet-50";
const BASE = { [VIT]: 9.325, [RESNET]: 6.531 };
const FACTOR = { eager: 1, default: 0.8 };

function answer(s) {
  if (s.model === VIT && s.mode === "default" && s.batch === 16) return oomResult("measure", 3221225472);
  return okResult(BASE[s.model] * s.batch ** 0.7 * FACTOR[s.mode], { n: 9 });
}

// What the section should show for `model`, from the report JSON: per latency column the label,
// the latencies and throughputs by ascending batch (null where no value), the gap texts.
function expected(report, gpu, model) {
  const tables = report.tables.filter((t) => t.gpu === gpu).sort((a, b) => a.batch - b.batch);
  const columns = tables[0].columns.filter((c) => c.kind === "latency_ms");
  return columns.map((col) => {
    const cells = tables.map((t) => t.rows.find((r) => r.model === model).cells[t.columns.findIndex((c) => c.key === col.key)]);
    return {
      key: col.key,
      label: `${col.build} · ${col.runtime} · ${col.mode}`,
      latency: cells.map((c) => (c.status === "ok" ? c.value : null)),
      throughput: cells.map((c, i) => (c.status === "ok" ? c.throughput_per_s ?? (tables[i].batch * 1000) / c.value : null)),
      statuses: cells.map((c) => c.status),
      texts: cells.map((c) => c.text),
    };
  });
}

// The chart as chart.js holds it: labels, and per dataset its kind, label and data.
function readChart(page) {
  return page.evaluate(() => {
    const chart = window.Chart?.getChart(document.querySelector(".batch-scaling canvas"));
    if (!chart) return null;
    return {
      title: chart.options.plugins.title.text,
      labels: chart.data.labels,
      datasets: chart.data.datasets.map((d) => ({ kind: d.bfKind, label: d.label, data: d.data, texts: d.bfTexts ?? null })),
      width: chart.width,
      height: chart.height,
    };
  });
}

// The numbers table: per series row its label and, per batch, the cells' texts and statuses.
function readNumbers(page) {
  return page.evaluate(() => [...document.querySelectorAll(".batch-scaling table.scaling-table tbody tr")].map((tr) => ({
    series: tr.dataset.series,
    label: tr.cells[0].textContent,
    cells: [...tr.querySelectorAll("td")].map((td) => ({
      batch: Number(td.dataset.batch), kind: td.dataset.kind ?? null, status: td.dataset.status, text: td.textContent,
      badge: td.querySelector(".badge")?.className ?? null,
    })),
  })));
}

await browserSuite("browser_batch_scaling", async (t) => {
  const coord = await t.coordinator();
  const api = new Api(coord.url);
  const run = await api.submit(matrix({ name: "batch scaling", models: [VIT, RESNET], batches: [1, 4, 16], modes: ["eager", "default"] }));
  const single = await api.submit(matrix({ name: "one batch", models: [VIT, RESNET], batches: [8], modes: ["eager", "default"] }));
  const agent = await Agent.enroll(api, { name: "gpu-host-1", slots: [["gpu0", "a100"]], builds: { stable: ["eager", "default"] } });
  const answered = await agent.finish("gpu0", answer);
  t.equal(answered.length, 16, "every job of both runs answered (2 models x 3 batches x 2 modes, then 2 x 1 x 2)");
  const report = await api.report(run.id, "median");  // what the run page shows by default
  const vit = expected(report, "a100", VIT);
  const resnet = expected(report, "a100", RESNET);
  t.equal(vit.map((s) => s.statuses), [["ok", "ok", "ok"], ["ok", "ok", "oom"]], "the fixture: ViT's default mode OOM at batch 16 only");
  t.ok(resnet.every((s) => s.statuses.every((x) => x === "ok")), "the fixture: ResNet ok everywhere");
  const labelOf = (model) => report.tables[0].rows.find((r) => r.model === model).label;
  t.equal([VIT, RESNET].map(labelOf), ["Image Classification/ViT", "Image Classification/ResNet"], "the catalog's display names");
  const page = await t.page();
  const section = page.locator("section.batch-scaling");

  await t.step("the section appears with the first model on the run's GPU class, drawn from the report", async () => {
    await page.goto(`${coord.url}/#/runs/${run.id}`);
    await waitForRunPage(page, 1);
    await section.scrollIntoViewIfNeeded();
    t.ok(await section.isVisible(), "the Batch scaling section is shown");
    t.equal(await section.locator("h2").textContent(), "Batch scaling", "its heading");
    t.equal(await section.locator("select[name=scaling_model]").inputValue(), VIT, "the first model is picked");
    t.equal(await section.locator("select[name=scaling_model] option").allTextContents(), [VIT, RESNET].map(labelOf),
      "every model of the run to pick from");
    t.equal(await section.locator(".scaling-group").textContent(), "A100 · float32 (batch 1/4/16)", "the GPU class, dtype and batch sizes");
    const chart = await t.eventually(() => readChart(page), "the chart is drawn");
    t.ok(chart.width > 200 && chart.height > 200, `the canvas has a size (${chart.width} x ${chart.height})`);
    t.equal(chart.title, "Image Classification/ViT · A100 · float32: median latency and throughput by batch size", "chart title");
    t.equal(chart.labels, ["1", "4", "16"], "batch sizes on the x axis");
    const lines = chart.datasets.filter((d) => d.kind !== "gap");
    t.equal(lines.map((d) => d.label), [
      "stable · libtorch · eager · latency", "stable · libtorch · eager · throughput",
      "stable · libtorch · default · latency (no value: OOM at 16)", "stable · libtorch · default · throughput",
    ], "a latency and a throughput line per column; the OOM named in the legend");
    t.equal(lines.map((d) => d.data), vit.flatMap((s) => [s.latency, s.throughput]), "latencies and throughputs equal the report's");
    t.equal(lines[2].data[2], null, "no latency at the OOM (a gap, not 0)");
    t.equal(lines[3].data[2], null, "no throughput at the OOM");
    const gaps = chart.datasets.filter((d) => d.kind === "gap");
    t.equal(gaps.map((d) => d.texts), [[null, null, "OOM"]], "an OOM marker at batch 16");
    const legend = await page.evaluate(() => window.Chart.getChart(document.querySelector(".batch-scaling canvas")).legend.legendItems.map((i) => i.text));
    t.ok(legend.includes("stable · libtorch · default · latency (no value: OOM at 16)"), `the legend says OOM: ${legend.join(" | ")}`);
    await t.screenshot(page, "batch-scaling.png");
  });

  await t.step("pointing at batch 16 shows the OOM in the tooltip", async () => {
    const canvas = section.locator("canvas");
    await canvas.scrollIntoViewIfNeeded();
    const at = await page.evaluate(() => {
      const c = document.querySelector(".batch-scaling canvas");
      const chart = window.Chart.getChart(c);
      const r = c.getBoundingClientRect();
      return { x: r.left + chart.scales.x.getPixelForValue(2), y: r.top + (chart.chartArea.top + chart.chartArea.bottom) / 2 };
    });
    await page.mouse.move(at.x, at.y);
    const tooltip = await t.eventually(() => page.evaluate(() => {
      const tip = window.Chart.getChart(document.querySelector(".batch-scaling canvas")).tooltip;
      return tip.opacity > 0 ? { title: tip.title, lines: tip.body.flatMap((b) => b.lines) } : null;
    }), "a tooltip shows");
    t.equal(tooltip.title, ["batch 16"], "tooltip title");
    t.ok(tooltip.lines.includes("stable · libtorch · default: OOM (no value)"), `the tooltip names the OOM: ${tooltip.lines.join(" | ")}`);
    t.ok(tooltip.lines.includes(`stable · libtorch · eager: ${vit[0].latency[2].toFixed(3)} ms`), `and eager's latency: ${tooltip.lines.join(" | ")}`);
  });

  await t.step("the OOM is listed under the chart and the numbers table has every value", async () => {
    const items = await section.locator(".scaling-gaps li").evaluateAll((lis) => lis.map((li) => ({ ...li.dataset, text: li.textContent })));
    t.equal(items.map((i) => [i.series, i.batch, i.status]), [["latency/stable/libtorch/default", "16", "oom"]], "one point without a value");
    t.ok(items[0].text.startsWith("OOM stable · libtorch · default at batch 16") && items[0].text.includes("out of memory in phase measure"),
      `it says OOM, where and why: ${items[0].text}`);
    t.equal(await section.locator(".scaling-gaps .badge").getAttribute("class"), "badge b-oom", "with the OOM badge");
    await section.locator("details.scaling-numbers summary").click();
    const rows = await readNumbers(page);
    t.equal(rows.map((r) => r.label), vit.map((s) => s.label), "a row per build · runtime · mode");
    rows.forEach((row, i) => {
      const want = vit[i];
      const cells = [];
      [1, 4, 16].forEach((batch, b) => {
        if (want.statuses[b] === "ok") {
          cells.push({ batch, kind: "latency", status: "ok", text: want.latency[b].toFixed(3), badge: null });
          const tp = want.throughput[b];
          cells.push({ batch, kind: "throughput", status: "ok", text: tp >= 100 ? tp.toFixed(0) : tp >= 10 ? tp.toFixed(1) : tp.toFixed(2), badge: null });
        } else {
          cells.push({ batch, kind: null, status: want.statuses[b], text: want.texts[b], badge: `badge b-${want.statuses[b]}` });
        }
      });
      t.equal(row.cells, cells, `${row.label}: latency and samples/s per batch, the OOM a badge`);
    });
    await t.screenshot(page, "batch-scaling-numbers.png");
  });

  await t.step("picking another model redraws with its values; the link keeps it", async () => {
    const before = await readChart(page);
    await section.locator("select[name=scaling_model]").selectOption(RESNET);
    await t.eventually(() => page.url().includes(`model=${encodeURIComponent(RESNET)}`), "the model is in the URL");
    const chart = await t.eventually(async () => {
      const c = await readChart(page);
      return c && c.title.startsWith("Image Classification/ResNet ·") ? c : null;
    }, "the chart shows ResNet", 20000, async () => `chart: ${JSON.stringify(await readChart(page))}`);
    const lines = chart.datasets.filter((d) => d.kind !== "gap");
    t.equal(lines.map((d) => d.data), resnet.flatMap((s) => [s.latency, s.throughput]), "ResNet's latencies and throughputs");
    t.ok(JSON.stringify(lines.map((d) => d.data)) !== JSON.stringify(before.datasets.filter((d) => d.kind !== "gap").map((d) => d.data)), "the data changed");
    t.equal(lines.map((d) => d.label).filter((l) => l.includes("no value")), [], "no gap in the legend");
    t.equal(chart.datasets.filter((d) => d.kind === "gap").length, 0, "no gap marker");
    t.equal(await section.locator(".scaling-gaps li").count(), 0, "no point without a value listed");
    t.equal((await readNumbers(page)).map((r) => r.cells.filter((c) => c.kind === "latency").map((c) => c.text)),
      resnet.map((s) => s.latency.map((v) => v.toFixed(3))), "the numbers table follows");
    await page.goBack();
    await t.eventually(async () => (await readChart(page))?.title.startsWith("Image Classification/ViT"), "back shows ViT again");
    await page.goForward();
    await t.eventually(async () => (await section.locator("select[name=scaling_model]").inputValue()) === RESNET, "forward picks ResNet again");
  });

  await t.step("without chart.js the numbers table is open and says charts are unavailable", async () => {
    const bare = await t.page();
    await bare.route("**/vendor/chart.umd.js", (route) => route.abort());
    await bare.goto(`${coord.url}/#/runs/${run.id}`);
    await waitForRunPage(bare, 1);
    const scaling = bare.locator("section.batch-scaling");
    await scaling.scrollIntoViewIfNeeded();
    await scaling.locator(".charts-unavailable").waitFor();
    t.ok(await scaling.locator("details.scaling-numbers").evaluate((d) => d.open), "the numbers are open");
    t.equal(await scaling.locator("canvas").count(), 0, "no empty canvas left");
    const oom = scaling.locator('table.scaling-table tr[data-series="latency/stable/libtorch/default"] td[data-batch="16"]');
    t.equal(await oom.textContent(), "OOM", "the OOM in the table");
    t.ok(await oom.isVisible(), "and visible");
    await bare.context().close();
  });

  await t.step("a live run: not-run points are marked, then filled in place as results arrive", async () => {
    const live = await api.submit(matrix({ name: "live scaling", models: [VIT], batches: [1, 4, 16], modes: ["eager", "default"] }));
    t.equal((await agent.finish("gpu0", answer, 2)).length, 2, "two of its six jobs answered");
    const partial = expected(await api.report(live.id), "a100", VIT);
    const notRun = partial.flatMap((s) => s.statuses).filter((x) => x === "not_run").length;
    t.equal(notRun, 4, "four points not run yet");
    await page.goto(`${coord.url}/#/runs/${live.id}`);
    await waitForRunPage(page, 1);
    await section.scrollIntoViewIfNeeded();
    const before = await t.eventually(async () => {
      const c = await readChart(page);
      return c?.title.includes("A100") ? c : null;
    }, "the live run's chart is drawn");
    t.equal(before.datasets.filter((d) => d.kind === "gap").flatMap((d) => d.texts).filter((x) => x === "not run").length, 4, "a 'not run' marker per point not run");
    t.equal(before.datasets.filter((d) => d.kind !== "gap").map((d) => d.data), partial.flatMap((s) => [s.latency, s.throughput]), "the values measured so far");
    const canvas = await section.locator("canvas").elementHandle();
    await agent.finish("gpu0", answer);
    const done = expected(await api.report(live.id), "a100", VIT);
    await t.eventually(async () => JSON.stringify((await readChart(page))?.datasets.filter((d) => d.kind !== "gap").map((d) => d.data)) ===
      JSON.stringify(done.flatMap((s) => [s.latency, s.throughput])), "the chart takes the new results (the page polls)", 20000,
    async () => `chart: ${JSON.stringify(await readChart(page))}`);
    const after = await readChart(page);
    t.equal(after.datasets.filter((d) => d.kind === "gap").map((d) => d.texts), [[null, null, "OOM"]], "only the OOM is left marked");
    t.ok(await canvas.evaluate((c) => c.isConnected), "the chart stays in its canvas (no section rebuilt)");
    t.equal(await section.locator(".scaling-gaps li").evaluateAll((lis) => lis.map((li) => li.dataset.status)), ["oom"], "the list follows");
  });

  await t.step("at phone width the section fits the screen", async () => {
    const phone = await t.page({ width: 375, height: 800 });
    await phone.goto(`${coord.url}/#/runs/${run.id}`);
    await waitForRunPage(phone, 1);
    const scaling = phone.locator("section.batch-scaling");
    await scaling.scrollIntoViewIfNeeded();
    await t.eventually(() => phone.evaluate(() => Boolean(window.Chart?.getChart(document.querySelector(".batch-scaling canvas")))), "the chart is drawn");
    const box = await scaling.boundingBox();
    t.ok(box.x >= 0 && box.x + box.width <= 375, `the section within the screen: ${JSON.stringify(box)}`);
    t.ok(await phone.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), "the page does not scroll sideways");
    const shot = `${t.artifacts}/batch-scaling-phone.png`;
    await scaling.screenshot({ path: shot });
    console.log(`screenshot: ${shot}`);
    await phone.context().close();
  });

  await t.step("a run with a single batch size has no Batch scaling section", async () => {
    await page.goto(`${coord.url}/#/runs/${single.id}`);
    await waitForRunPage(page, 1);
    t.equal((await api.report(single.id)).tables.map((tb) => tb.batch), [8], "the run has one table, batch 8");
    t.equal(await page.locator("section.batch-scaling").count(), 1, "the section exists");
    t.ok(!(await page.locator("section.batch-scaling").isVisible()), "but is not shown");
    t.equal(await page.getByRole("heading", { name: "Batch scaling" }).count(), 0, "no Batch scaling heading for users or screen readers");
  });
});
