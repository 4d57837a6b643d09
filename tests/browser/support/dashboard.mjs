// Reading the dashboard's DOM in tests.

// Waits until the run page shows `tables` comparison tables (and their cells are filled).
export async function waitForRunPage(page, tables) {
  await page.waitForFunction((n) => {
    const shown = document.querySelectorAll(".report-table");
    return shown.length === n && [...shown].every((t) => t.querySelector("tbody td[data-status]"));
  }, tables, { timeout: 30000 });
}

// Every comparison table shown: title, headers, rows (label, hidden, cells: text, status,
// badge class, tooltip), geomean lines.
export function readTables(page) {
  return page.evaluate(() => [...document.querySelectorAll(".report-table")].map((article) => {
    const table = article.querySelector("table");
    return {
      title: article.querySelector("h3").textContent,
      headers: [...table.tHead.rows[0].cells].map((th) => th.firstChild.textContent),
      rows: [...table.tBodies[0].rows].map((tr) => ({
        label: tr.cells[0].textContent,
        hidden: tr.hidden,
        cells: [...tr.cells].slice(1).map((td) => ({
          // The value, without the accuracy badge and noise flag that may follow it.
          text: [...td.childNodes].filter((n) => !n.classList?.contains("acc") && !n.classList?.contains("flag")).map((n) => n.textContent).join(""),
          flag: td.querySelector(".flag")?.title ?? null,
          status: td.dataset.status,
          badge: td.querySelector(".badge")?.className ?? null,
          title: td.title,
        })),
      })),
      geomeans: [...article.querySelectorAll(".geomeans li")].map((li) => li.textContent),
    };
  }));
}

// The latency cell backed by result `id`.
export function cellByResult(page, id) {
  return page.evaluate((rid) => {
    const td = [...document.querySelectorAll(".report-table td[data-results]")]
      .find((x) => x.dataset.col.startsWith("latency/") && x.dataset.results.split(",").includes(String(rid)));
    return td ? { text: td.textContent, status: td.dataset.status, badge: td.querySelector(".badge")?.className ?? null, title: td.title } : null;
  }, id);
}
