// What runs by itself for this key's tenant: its automations (what starts each, its last
// run and how that run stands, its next one) and its goal loops (status, iterations,
// dollars spent, why it stands where it does), refreshed every few seconds.

import { api, ApiError } from "./api.js";
import { badge, empty, fill, h, money, notify, pause, safeLink, table, when } from "./dom.js";

const REFRESH_SECONDS = 5;

function startedBy(automation) {
  const definition = automation.definition;
  if (definition.cron !== null) return `cron ${definition.cron} (${definition.timezone})`;
  if (definition.event !== null) return `${definition.event} on ${definition.watch}`;
  return "webhook";
}

function lastRun(automation) {
  const last = automation.last_run;
  if (!last) return "–";
  return h("span", {},
    h("a", { href: `#/runs/${encodeURIComponent(last.run_id)}`, class: "mono" }, last.run_id),
    " ", badge(automation.last_run_status || "unknown"), " ", when(last.at));
}

const AUTOMATIONS = [
  ["Automation", (automation) => h("span", { class: "mono" }, automation.name)],
  ["Started by", (automation) => h("span", { class: "mono clip" }, startedBy(automation))],
  ["Repository", (automation) => h("span", { class: "mono clip" }, automation.definition.repo || "the event's")],
  ["Last run", lastRun],
  ["Next run", (automation) => (automation.next_run ? when(automation.next_run) : "–")],
  ["Enabled", (automation) => (automation.definition.enabled ? "yes" : "no")],
];

function pullRequest(loop) {
  return loop.pr ? safeLink(loop.pr.url, `#${loop.pr.number}`) : "–";
}

const LOOPS = [
  ["Loop", (loop) => h("span", { class: "mono" }, loop.id)],
  ["Goal", (loop) => h("span", { class: "clip" }, loop.request.goal)],
  ["Until", (loop) => h("span", { class: "mono clip" }, loop.request.until)],
  ["Status", (loop) => badge(loop.status)],
  ["Iterations", (loop) => `${loop.iterations.length} / ${loop.request.max_iterations}`],
  ["Spent", (loop) => money(loop.spent_usd)],
  ["Pull request", pullRequest],
  ["Why", (loop) => h("span", { class: "clip" }, loop.reason || "–")],
];

export async function automationsView(main, signal) {
  const automations = h("div", { "data-testid": "automations" }, empty("Loading automations…"));
  const loops = h("div", { "data-testid": "loops" }, empty("Loading goal loops…"));
  fill(main, h("section", { class: "page" },
    h("div", { class: "page-head" }, h("h1", {}, "Automations")), automations,
    h("div", { class: "page-head" }, h("h1", {}, "Goal loops")), loops));
  while (!signal.aborted) {
    try {
      const [listed, looped] = await Promise.all([
        api("/v1/automations", { signal }),
        api("/v1/loops", { signal }),
      ]);
      if (signal.aborted) return;
      fill(automations, listed.length
        ? table(AUTOMATIONS, listed, (automation) => ({ "data-automation": automation.name }))
        : empty("No automations. [[automations]] in golem.toml, or PUT /v1/automations/<name>."));
      fill(loops, looped.length
        ? table(LOOPS, looped, (loop) => ({ "data-loop": loop.id }))
        : empty("No goal loops. golem loop, or POST /v1/loops."));
      notify("");
    } catch (error) {
      if (signal.aborted || (error instanceof ApiError && error.status === 401)) return;
      notify(`Could not load the automations: ${error.message}. Retrying…`);
    }
    await pause(REFRESH_SECONDS, signal);
  }
}
