// The tenant's runs, newest first, refreshed every few seconds.

import { api, ApiError } from "./api.js";
import { badge, duration, empty, fill, h, money, notify, pause, table, when } from "./dom.js";

const REFRESH_SECONDS = 2;

export const FINAL = new Set(["succeeded", "unverified", "escalated", "failed", "cancelled"]);

/** Seconds from the run's first step (or its submission) to its end, or to now. */
export function runDuration(run) {
  const start = run.steps.length ? run.steps[0].started : run.created;
  const end = FINAL.has(run.status) ? run.updated : Date.now() / 1000;
  return end - start;
}

/** What a run is about: its title, else its task's first line. */
export function runTitle(run) {
  const task = (run.request.task ?? "").trim().split("\n")[0];
  return run.title || task || run.request.issue || "(no task)";
}

function runLink(run) {
  return h("a", { href: `#/runs/${encodeURIComponent(run.id)}`, class: "run-link" },
    h("span", { class: "title" }, runTitle(run)),
    h("span", { class: "id" }, run.id));
}

const COLUMNS = [
  ["Run", runLink],
  ["Status", (run) => badge(run.status)],
  ["Repository", (run) => h("span", { class: "mono clip" }, run.request.repo)],
  ["Cost", (run) => money(run.cost_usd)],
  ["Duration", (run) => duration(runDuration(run))],
  ["PR", (run) => (run.pr ? `#${run.pr.number}` : "–")],
  ["Submitted", (run) => when(run.created)],
];

export async function runsView(main, signal) {
  const body = h("div", { "data-testid": "runs" }, empty("Loading runs…"));
  fill(main, h("section", { class: "page" },
    h("div", { class: "page-head" }, h("h1", {}, "Runs")),
    body));
  while (!signal.aborted) {
    try {
      const runs = await api("/v1/runs?limit=200", { signal });
      if (signal.aborted) return;
      fill(body, runs.length
        ? table(COLUMNS, runs, (run) => ({ "data-run": run.id }))
        : empty("No runs yet. Submit one with POST /v1/runs; it shows up here."));
      notify("");
    } catch (error) {
      if (signal.aborted || (error instanceof ApiError && error.status === 401)) return;
      notify(`Could not load the runs: ${error.message}. Retrying…`);
    }
    await pause(REFRESH_SECONDS, signal);
  }
}
