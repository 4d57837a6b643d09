// Dashboard entry point: the hash router, the connection banner and the shared context that
// every view gets. A view is a class with mount(route), optional update(route) for a new state
// of the same page (same view and id: the page keeps its DOM, selection and scroll), optional
// reconnected() after the coordinator came back, and destroy().
import { Api } from "./api.js";
import { parseRoute, formatRoute } from "./route.js";
import { RunsView } from "./views/runs.js";
import { RunView } from "./views/run.js";
import { CompareView } from "./views/compare.js";
import { ResultView } from "./views/result.js";
import { AgentsView } from "./views/agents.js";
import { NotFoundView } from "./views/notfound.js";
import { SchedulesView } from "./views/schedules.js";
import { SeriesView } from "./views/series.js";
import { RegressionsView } from "./views/regressions.js";
import { ScheduleSummaryView } from "./views/schedule_summary.js";
import { ModelsView } from "./views/models.js";

const VIEWS = {
  runs: RunsView, run: RunView, compare: CompareView, result: ResultView, agents: AgentsView,
  schedules: SchedulesView, schedule_summary: ScheduleSummaryView, series: SeriesView, regressions: RegressionsView,
  models: ModelsView, notfound: NotFoundView,
};
// A page under a top-bar entry that is not its own: it marks that entry as the current one.
const NAV_PARENT = { run: "runs", schedule_summary: "schedules" };
const PROBE_MS = 2000;

const root = document.getElementById("view");
const banner = document.getElementById("banner");
const tokenBanner = document.getElementById("token-banner");
let current = null;  // {route, view}
let probeTimer = null;

const TOKEN_KEY = "benchfleet-token";  // sessionStorage: this tab only, gone with it
const api = new Api(new URL("api/v1/", document.baseURI), { onConnection, onUnauthorized, token: sessionStorage.getItem(TOKEN_KEY) });

// Catalog labels ("Image Classification/ViT"), fetched once and shared.
let modelsPromise = null;
function models() {
  if (!modelsPromise) {
    modelsPromise = api.models().then(
      (list) => new Map(list.models.map((m) => [m.key ?? m.id, m])),
      (e) => { modelsPromise = null; throw e; });
  }
  return modelsPromise;
}

const context = {
  api,
  models,
  // Goes to `route`: a new history entry, or replacing the current one (typing in a filter).
  navigate(route, { replace = false } = {}) {
    const hash = formatRoute(route);
    if (hash === location.hash) return;
    if (replace) {
      history.replaceState(history.state, "", hash);
      onRoute();
    } else {
      location.hash = hash;
    }
  },
  href: (route) => formatRoute(route),
  setTitle(text) { document.title = text ? `${text} · benchfleet` : "benchfleet"; },
  // Runs a write (`action`: () => Promise). Without the operator token (401) it asks for it
  // once, in the token banner, then tries again; rejects with the ApiError otherwise.
  async write(action, what) {
    try {
      return await action();
    } catch (e) {
      if (e.status !== 401) throw e;
      await askWriteToken(`${what} needs the operator token (${e.detail}). `);
      return action();
    }
  },
};

// One pending "give the token" form for writes; every write waiting on it resumes on submit.
let writeToken = null;
function askWriteToken(text) {
  if (!writeToken) {
    writeToken = new Promise((resolve) => {
      showTokenForm(text, (token) => {
        api.setToken(token);
        sessionStorage.setItem(TOKEN_KEY, token);
        writeToken = null;
        resolve();
      });
    });
  }
  return writeToken;
}

function onRoute() {
  const route = parseRoute(location.hash);
  for (const link of document.querySelectorAll("[data-nav]")) {
    const active = link.dataset.nav === route.view || link.dataset.nav === NAV_PARENT[route.view];
    if (active) link.setAttribute("aria-current", "page"); else link.removeAttribute("aria-current");
  }
  if (current && current.route.view === route.view && current.route.id === route.id && current.view.update) {
    current.route = route;
    current.view.update(route);
    return;
  }
  current?.view.destroy?.();
  // Each view draws into its own element: a late answer to a view already left lands in a
  // detached element, never over the next view.
  const el = document.createElement("div");
  el.className = "view-body";
  root.replaceChildren(el);
  window.scrollTo(0, 0);
  const View = VIEWS[route.view] ?? NotFoundView;
  const view = new View(context, el);
  current = { route, view };
  view.mount(route);
}

function onConnection(up, why) {
  if (up) {
    banner.hidden = true;
    banner.textContent = "";
    clearInterval(probeTimer);
    probeTimer = null;
    current?.view.reconnected?.();
    return;
  }
  banner.hidden = false;
  banner.textContent = `Cannot reach the coordinator at ${location.origin} (${why}). Retrying every ${PROBE_MS / 1000} s…`;
  if (!probeTimer) probeTimer = setInterval(() => api.ping(), PROBE_MS);
}

// Private reads (public_reads: false): ask for the operator token once, keep it for this tab.
function onUnauthorized(detail) {
  showTokenForm(`This coordinator needs a token to read (${detail}). `, (token) => {
    api.setToken(token);
    sessionStorage.setItem(TOKEN_KEY, token);
    current?.view.destroy?.();
    current = null;  // mount the view again, with the token
    onRoute();
  });
}

// The token form in the banner under the top bar: `text`, a password field, "Use token". While
// it is shown, a second ask adds its callback (and replaces the text); all are called on submit.
let tokenWaiters = [];
function showTokenForm(text, onToken) {
  tokenWaiters.push(onToken);
  const shown = document.getElementById("token-form");
  if (shown) {
    shown.querySelector("span").textContent = text;
    return;
  }
  const input = document.createElement("input");
  Object.assign(input, { type: "password", name: "token", autocomplete: "off", placeholder: "operator token" });
  input.setAttribute("aria-label", "Operator token");
  const form = document.createElement("form");
  form.id = "token-form";
  form.className = "token-form";
  const span = document.createElement("span");
  span.textContent = text;
  const button = document.createElement("button");
  Object.assign(button, { type: "submit", className: "btn", textContent: "Use token" });
  form.append(span, input, " ", button);
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    form.remove();
    tokenBanner.hidden = true;
    const waiters = tokenWaiters;
    tokenWaiters = [];
    for (const fn of waiters) fn(input.value.trim());
  });
  tokenBanner.replaceChildren(form);
  tokenBanner.hidden = false;
  input.focus();
}

window.addEventListener("hashchange", onRoute);
if (!location.hash) history.replaceState(null, "", "#/runs");
onRoute();
