// The dashboard's entry point: asks for an API key once (kept in this tab's
// sessionStorage), then shows a view per address: #/runs, #/runs/<id>, #/prs, #/sessions,
// #/automations (automations and goal loops), #/cluster (linked only for a key that sees a
// cluster).

import { api, ApiError, onUnauthorized, session } from "./api.js";
import { automationsView } from "./automations.js";
import { clusterView, hasCluster } from "./cluster.js";
import { fill, h, notify } from "./dom.js";
import { prsView } from "./prs.js";
import { runView } from "./run.js";
import { runsView } from "./runs.js";
import { sessionsView } from "./sessions.js";

const main = document.getElementById("main");
const nav = document.getElementById("nav");
const signOut = document.getElementById("sign-out");
const clusterLink = nav.querySelector("a[data-view='cluster']");
let shown = null; // the AbortController of the view on screen
let probed = null; // the key whose cluster link is decided (nav's data-cluster says how)

function stopView() {
  shown?.abort();
  shown = new AbortController();
  notify("");
  document.title = "golem";
  return shown.signal;
}

function route() {
  const signal = stopView();
  if (!session.key) return login();
  nav.hidden = false;
  signOut.hidden = false;
  showClusterLink();
  const [view, id] = location.hash.replace(/^#\/?/, "").split("/");
  for (const link of nav.querySelectorAll("a")) {
    link.classList.toggle("active", link.dataset.view === (view || "runs"));
  }
  let shownView;
  if (view === "runs" && id) shownView = runView(main, decoded(id), signal);
  else if (view === "sessions") shownView = sessionsView(main, signal);
  else if (view === "prs") shownView = prsView(main, signal);
  else if (view === "automations") shownView = automationsView(main, signal);
  else if (view === "cluster") shownView = clusterView(main, signal);
  else shownView = runsView(main, signal);
  shownView.catch((error) => {
    if (!signal.aborted) notify(`Something went wrong: ${error.message}`);
  });
}

/** Show the cluster link once per key, when the key sees a cluster. */
function showClusterLink() {
  const key = session.key;
  if (probed === key) return;
  probed = key;
  delete nav.dataset.cluster;
  clusterLink.hidden = true;
  hasCluster().then((seen) => {
    if (probed !== key) return;
    clusterLink.hidden = !seen;
    nav.dataset.cluster = seen ? "yes" : "no";
  }, () => { probed = null; }); // the server did not answer: ask again on the next view
}

function decoded(part) {
  try {
    return decodeURIComponent(part);
  } catch {
    return part; // a malformed address: the API answers 404 for it
  }
}

function explain(error) {
  if (error instanceof ApiError && error.status === 401) {
    return `That key was not accepted: ${error.message}.`;
  }
  if (error instanceof ApiError) return `The server refused: ${error.message}.`;
  return `The server did not answer (${error.message}). Is golem serve running?`;
}

function login(message = "") {
  stopView();
  nav.hidden = true;
  signOut.hidden = true;
  const input = h("input", {
    id: "api-key", name: "api-key", type: "password", autocomplete: "off",
    spellcheck: "false", required: true, placeholder: "golem_…",
  });
  const alert = h("p", { class: "alert", role: "alert", hidden: !message }, message);
  const button = h("button", { type: "submit", class: "primary" }, "Sign in");
  const submit = async (event) => {
    event.preventDefault();
    const key = input.value.trim();
    if (!key) return;
    button.disabled = true;
    alert.hidden = true;
    try {
      await api("/v1/runs?limit=1", { key });
      session.save(key);
      route();
    } catch (error) {
      fill(alert, explain(error));
      alert.hidden = false;
      button.disabled = false;
      input.select();
    }
  };
  fill(main, h("form", { class: "card login", onsubmit: submit },
    h("h1", {}, "Sign in to golem"),
    h("p", { class: "muted" },
      "Paste an API key (golem keys create, or ask your admin). It stays in this tab ",
      "only and is sent as an Authorization header; closing the tab forgets it."),
    h("label", { for: "api-key" }, "API key"),
    input,
    button,
    alert,
  ));
  input.focus();
}

onUnauthorized((detail) => {
  session.forget();
  login(`Your key is no longer accepted (${detail}). Sign in again.`);
});

signOut.addEventListener("click", () => {
  session.forget();
  login();
});

window.addEventListener("hashchange", route);
route();
