// A tiny element builder, so views read as the markup they make.
//   h("a", {href: "#/runs", class: "link"}, "Runs")
// Attributes: "class", "dataset" (object), "on" (object of listeners), booleans (true sets the
// attribute, false/null/undefined omits it), anything else with setAttribute. Children: strings,
// numbers, nodes, arrays (flattened), null/undefined/false (skipped).

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  if (attrs) setAttrs(el, attrs);
  append(el, children);
  return el;
}

export function setAttrs(el, attrs) {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k === "on") for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
    else if (k === "text") el.textContent = v;
    else if (v === true) el.setAttribute(k, "");
    else el.setAttribute(k, String(v));
  }
}

export function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

// Replaces `el`'s children.
export function fill(el, ...children) {
  clear(el);
  return append(el, children);
}

// Sets textContent / title / className only when they changed (live updates keep the DOM quiet).
export function patch(el, { text, title, className }) {
  if (text !== undefined && el.textContent !== text) el.textContent = text;
  if (title !== undefined && el.title !== title) el.title = title;
  if (className !== undefined && el.className !== className) el.className = className;
}
