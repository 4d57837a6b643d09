// A small harness for the dashboard's browser tests: real Chromium through playwright-core,
// the real coordinator binary serving the assembled dashboard, named steps run in order.
//
//   await browserSuite("browser_run_tables", async (t) => {
//     const coord = await t.coordinator();                 // started, stopped at the end
//     const page = await t.page();                          // 1280 x 900, page errors fail the step
//     await t.step("tables equal the report", async () => { ... t.equal(a, b, "what") ... });
//   });
//
// Configuration (set by tests/browser/CMakeLists.txt):
//   BENCHFLEET_COORDINATOR   the benchfleet-coordinator binary
//   BENCHFLEET_WEB_ROOT      the assembled dashboard (${CMAKE_BINARY_DIR}/web)
//   BENCHFLEET_ARTIFACTS     where screenshots go (${CMAKE_BINARY_DIR}/test-artifacts/browser)
//   BENCHFLEET_CHROMIUM      the browser (default /usr/bin/chromium)
// Exit status: 0 all steps passed, 1 a step failed, 77 skipped (no Chromium or playwright-core).
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { startCoordinator } from "./coordinator.mjs";

export const SKIP = 77;

export class AssertionError extends Error {}

export async function browserSuite(name, body, { needsBrowser = true } = {}) {
  const chromiumPath = process.env.BENCHFLEET_CHROMIUM || "/usr/bin/chromium";
  const binary = process.env.BENCHFLEET_COORDINATOR;
  const webRoot = process.env.BENCHFLEET_WEB_ROOT;
  const artifacts = process.env.BENCHFLEET_ARTIFACTS || join(process.cwd(), "test-artifacts", "browser");

  let chromium = null;
  if (needsBrowser) {
    if (!existsSync(chromiumPath)) skip(`${chromiumPath} is missing (Debian package chromium; scripts/install-deps.sh installs it)`);
    try {
      ({ chromium } = await import("playwright-core"));
    } catch (e) {
      skip(`playwright-core is not installed (run npm ci in the repository root): ${e.code ?? e.message}`);
    }
    if (!binary || !existsSync(binary)) fail(`BENCHFLEET_COORDINATOR is not an existing binary: ${binary}`);
    if (!webRoot || !existsSync(join(webRoot, "index.html"))) fail(`BENCHFLEET_WEB_ROOT has no index.html: ${webRoot} (build the coordinator target)`);
    if (!existsSync(join(webRoot, "vendor", "chart.umd.js"))) {
      skip(`${webRoot}/vendor/chart.umd.js is missing: run npm ci in the repository root, then rebuild`);
    }
  }
  mkdirSync(artifacts, { recursive: true });

  const coordinators = [];
  const contexts = [];
  const pages = [];
  let browser = null;
  const failures = [];
  const pageErrors = [];
  const started = Date.now();

  // Whole-suite watchdog: a hung step must not hang ctest (its TIMEOUT is the backstop).
  const watchdog = setTimeout(() => {
    console.error(`${name}: still running after 200 s; giving up`);
    process.exit(1);
  }, 200000);
  watchdog.unref();

  const t = {
    artifacts,
    async coordinator(options = {}) {
      const c = await startCoordinator({ binary, webRoot, ...options });
      coordinators.push(c);
      return c;
    },
    async browser() {
      if (!browser) {
        browser = await chromium.launch({ executablePath: chromiumPath, args: ["--headless", "--no-sandbox"] });
      }
      return browser;
    },
    // A page in a fresh context (own storage and clipboard). Uncaught page errors fail the step.
    async page({ width = 1280, height = 900, permissions = [] } = {}) {
      const b = await t.browser();
      const context = await b.newContext({ viewport: { width, height }, acceptDownloads: true });
      if (permissions.length) await context.grantPermissions(permissions);
      contexts.push(context);
      const page = await context.newPage();
      page.setDefaultTimeout(30000);
      page.on("pageerror", (e) => pageErrors.push(`${page.url()}: ${e.message}`));
      pages.push(page);
      return page;
    },
    async step(title, fn) {
      const t0 = Date.now();
      pageErrors.length = 0;
      try {
        await fn();
        if (pageErrors.length) throw new AssertionError(`uncaught errors in the page:\n  ${pageErrors.join("\n  ")}`);
        console.log(`ok   - ${title} (${Date.now() - t0} ms)`);
      } catch (e) {
        failures.push(title);
        console.log(`FAIL - ${title} (${Date.now() - t0} ms)\n       ${String(e.stack || e).split("\n").join("\n       ")}`);
        for (const c of coordinators) if (c.child) console.log(`       coordinator log tail:\n${c.logTail(1500)}`);
        await describePages(pages.filter((p) => !p.isClosed()), artifacts, failures.length);
      }
    },
    equal(actual, expected, what) {
      const a = JSON.stringify(actual);
      const b = JSON.stringify(expected);
      if (a !== b) throw new AssertionError(`${what}: expected ${b}, got ${a}`);
    },
    ok(condition, what) {
      if (!condition) throw new AssertionError(what);
    },
    // Polls fn() until it returns a truthy value (returned) or `ms` pass (throws with `what`
    // and, when given, what explain() says about the state then).
    async eventually(fn, what, ms = 20000, explain = null) {
      const deadline = Date.now() + ms;
      let last;
      for (;;) {
        try {
          last = await fn();
          if (last) return last;
        } catch (e) { last = e; }
        if (Date.now() > deadline) {
          const state = explain ? `; ${await explain()}` : "";
          throw new AssertionError(`${what} (not within ${ms} ms; last: ${last instanceof Error ? last.message : JSON.stringify(last)}${state})`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async screenshot(page, file) {
      const path = join(artifacts, file);
      await page.screenshot({ path, fullPage: true });
      console.log(`screenshot: ${path}`);
      return path;
    },
  };

  try {
    await body(t);
  } catch (e) {
    failures.push("(suite)");
    console.log(`FAIL - ${name}: ${e.stack || e}`);
    for (const c of coordinators) console.log(`coordinator log tail:\n${c.logTail(2000)}`);
  } finally {
    for (const ctx of contexts) await ctx.close().catch(() => {});
    if (browser) await browser.close().catch(() => {});
    for (const c of coordinators) {
      await c.stop().catch(() => c.kill());
      if (!failures.length) c.removeDir();
      else console.log(`coordinator directory kept: ${c.dir}`);
    }
  }
  clearTimeout(watchdog);
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  if (failures.length) {
    console.log(`${name}: ${failures.length} failed (${failures.join("; ")}) in ${seconds} s`);
    process.exit(1);
  }
  console.log(`${name}: all passed in ${seconds} s`);
  process.exit(0);
}

// On a failure: each open page's address, what it shows, and a screenshot.
async function describePages(pages, artifacts, n) {
  for (const [i, page] of pages.entries()) {
    try {
      const text = await page.locator("body").innerText({ timeout: 2000 });
      const path = join(artifacts, `failure-${process.pid}-${n}-${i}.png`);
      await page.screenshot({ path, fullPage: true, timeout: 5000 });
      console.log(`       page ${i}: ${page.url()}\n       shows: ${text.slice(0, 600).replace(/\s+/g, " ")}\n       screenshot: ${path}`);
    } catch (e) {
      console.log(`       page ${i}: ${page.url()} (cannot describe: ${e.message.split("\n")[0]})`);
    }
  }
}

function skip(why) {
  console.log(`skipped: ${why}`);
  process.exit(SKIP);
}

function fail(why) {
  console.error(why);
  process.exit(1);
}
