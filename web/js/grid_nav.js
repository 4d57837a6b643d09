// Keyboard navigation of a data table (WAI-ARIA grid pattern, "roving tabindex"): the table is a
// single Tab stop; arrow keys, Home/End, Ctrl+Home/End and PageUp/PageDown move between the
// body cells; Enter or Space follows the cell's link (keys typed into a field in a cell are the
// field's). Works across in-place updates: call `refresh()` after rows or cells were added or
// removed.
//
//   const nav = gridNav(table, { onFocus: (cell) => showDetail(cell) });

export function gridNav(table, { onFocus = () => {} } = {}) {
  table.setAttribute("role", "grid");

  const rows = () => [...table.tBodies].flatMap((b) => [...b.rows]).filter((r) => !r.hidden);
  const cellsOf = (row) => [...row.cells];

  function position(cell) {
    const list = rows();
    const r = list.indexOf(cell.parentElement);
    return r < 0 ? null : { r, c: cell.cellIndex, list };
  }

  function focusCell(cell) {
    if (!cell) return;
    for (const old of table.querySelectorAll('[tabindex="0"]')) if (old !== cell) old.tabIndex = -1;
    cell.tabIndex = 0;
    cell.focus({ preventScroll: false });
  }

  function refresh() {
    const list = rows();
    let current = table.querySelector('tbody [tabindex="0"]');
    if (current && (current.closest("tr").hidden || !table.contains(current))) {
      current.tabIndex = -1;
      current = null;
    }
    for (const row of list) {
      for (const cell of row.cells) if (!cell.hasAttribute("tabindex")) cell.tabIndex = -1;
    }
    for (const link of table.querySelectorAll("tbody a, tbody button")) {
      if (link.getAttribute("tabindex") !== "-1") link.tabIndex = -1;
    }
    if (!current && list.length) list[0].cells[0].tabIndex = 0;
  }

  table.addEventListener("focusin", (e) => {
    const cell = e.target.closest("td, th");
    if (!cell || !table.contains(cell) || cell.parentElement.parentElement.tagName !== "TBODY") return;
    if (cell.tabIndex !== 0) {
      for (const old of table.querySelectorAll('[tabindex="0"]')) old.tabIndex = -1;
      cell.tabIndex = 0;
    }
    onFocus(cell);
  });

  table.addEventListener("keydown", (e) => {
    const cell = e.target.closest("td, th");
    if (!cell || e.altKey || e.metaKey) return;
    if (e.target.matches("input, textarea, select")) return;  // typing in a field inside a cell
    const pos = position(cell);
    if (!pos) return;
    const { list } = pos;
    let { r, c } = pos;
    switch (e.key) {
      case "ArrowRight": c++; break;
      case "ArrowLeft": c--; break;
      case "ArrowDown": r++; break;
      case "ArrowUp": r--; break;
      case "Home": if (e.ctrlKey) r = 0; c = 0; break;
      case "End": if (e.ctrlKey) r = list.length - 1; c = Infinity; break;
      case "PageDown": r += 10; break;
      case "PageUp": r -= 10; break;
      case "Enter":
      case " ": {
        const link = cell.querySelector("a[href], button");
        if (link) { e.preventDefault(); link.click(); }
        return;
      }
      default: return;
    }
    e.preventDefault();
    r = Math.max(0, Math.min(list.length - 1, r));
    const cells = cellsOf(list[r]);
    c = Math.max(0, Math.min(cells.length - 1, c));
    focusCell(cells[c]);
  });

  refresh();
  return { refresh, focusCell };
}

// The focused cell of a table a view is about to rebuild, by its row's data-ATTR value and its
// column, so that refocusCell can put focus back on the same cell of the new table (a live
// refresh must not throw the keyboard user back to the top). null when no such cell has focus.
export function focusedCell(rowAttr) {
  const cell = document.activeElement?.closest?.("td, th");
  const key = cell?.parentElement?.dataset?.[rowAttr];
  return key === undefined ? null : { rowAttr, key, column: cell.cellIndex };
}

export function refocusCell(table, nav, at) {
  if (!at) return;
  const row = [...table.querySelectorAll("tr")].find((tr) => tr.dataset[at.rowAttr] === at.key);
  nav.focusCell(row?.cells[at.column]);
}
