// Small form controls shared by the views.
import { h } from "../dom.js";

// <label>Batch <select name=batch>…</select></label>; `options`: [[value, text], ...].
export function selectControl(label, name, options, value, onChange) {
  const select = h("select", { name, on: { change: (e) => onChange(e.target.value) } },
    options.map(([v, text]) => h("option", { value: v, selected: v === value }, text)));
  return h("label", { class: "control" }, h("span", { class: "label" }, label), select);
}

// The mean/median switch: two radio buttons styled as a segmented control.
export function statSwitch(value, onChange) {
  return h("fieldset", { class: "segmented" },
    h("legend", { class: "label" }, "Statistic"),
    ["mean", "median"].map((stat) => h("label", null,
      h("input", { type: "radio", name: "stat", value: stat, checked: stat === value, on: { change: () => onChange(stat) } }),
      h("span", null, stat))));
}

// A button copying text(); says "Copied" (or how to copy by hand) for a moment.
export function copyButton(label, text, extra = {}) {
  const button = h("button", { type: "button", class: "btn", ...extra }, label);
  button.addEventListener("click", async () => {
    const value = text();
    let ok;
    try {
      await navigator.clipboard.writeText(value);
      ok = true;
    } catch {
      ok = legacyCopy(value);
    }
    button.textContent = ok ? "Copied" : "Select and copy by hand";
    button.dataset.copied = ok ? "1" : "0";
    setTimeout(() => { button.textContent = label; }, 1500);
  });
  return button;
}

function legacyCopy(value) {
  const area = h("textarea", { class: "offscreen", "aria-hidden": "true" });
  area.value = value;
  document.body.append(area);
  area.select();
  let ok;
  try { ok = document.execCommand("copy"); } catch { ok = false; }
  area.remove();
  return ok;
}

// Controls are rebuilt when their options change; these keep keyboard focus on the same control
// (by name, and value for radio buttons) across the rebuild.
export function focusKey(el) {
  if (!el || !el.name) return null;
  return el.type === "radio" ? { name: el.name, value: el.value } : { name: el.name };
}

export function restoreFocus(container, key) {
  if (!key) return;
  const selector = key.value === undefined ? `[name="${key.name}"]` : `[name="${key.name}"][value="${key.value}"]`;
  container.querySelector(selector)?.focus();
}
