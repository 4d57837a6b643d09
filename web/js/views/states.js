// Empty, loading and error states shared by the views.
import { h } from "../dom.js";

export function loadingState(text = "Loading…") {
  return h("p", { class: "state state-loading", role: "status" }, text);
}

export function emptyState(text, ...more) {
  return h("div", { class: "state state-empty" }, h("p", null, text), ...more);
}

// `error` is an ApiError or a message. Unreachable coordinators are told apart from answers.
export function errorState(error, ...more) {
  const message = typeof error === "string" ? error : error.detail || error.message;
  const waiting = typeof error === "object" && error.unreachable;
  return h("div", { class: `state state-error${waiting ? " state-waiting" : ""}`, role: "alert" },
    h("p", { class: "state-title" }, waiting ? "Waiting for the coordinator…" : "Something went wrong"),
    h("p", { class: "state-detail" }, message),
    ...more);
}
