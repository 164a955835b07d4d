// Pull requests the local forge opened for this tenant (each linked to the run that opened
// it), refreshed every few seconds.

import { api, ApiError } from "./api.js";
import { empty, fill, h, notify, pause, safeLink, table, when } from "./dom.js";

const REFRESH_SECONDS = 5;

function checks(pr) {
  if (!pr.checks.length) return "–";
  const passed = pr.checks.filter((check) => check.passed).length;
  const tone = passed === pr.checks.length ? "good" : "bad";
  return h("span", { class: tone }, `${passed}/${pr.checks.length} passed`);
}

function title(runs) {
  return (pr) => {
    const run = runs.get(`${pr.repo}#${pr.number}`);
    const text = `#${pr.number} ${pr.title}`;
    if (run) return h("a", { href: `#/runs/${encodeURIComponent(run)}`, class: "clip" }, text);
    return safeLink(pr.url, text, { class: "clip" });
  };
}

const columns = (runs) => [
  ["Pull request", title(runs)],
  ["Repository", (pr) => h("span", { class: "mono clip" }, pr.repo)],
  ["Branch", (pr) => h("span", { class: "mono" }, `${pr.head} → ${pr.base}`)],
  ["State", (pr) => (pr.draft ? "draft" : "open")],
  ["Checks", checks],
  ["Opened", (pr) => when(pr.created)],
];

export async function prsView(main, signal) {
  const body = h("div", { "data-testid": "prs" }, empty("Loading pull requests…"));
  fill(main, h("section", { class: "page" },
    h("div", { class: "page-head" }, h("h1", {}, "Pull requests")),
    body));
  while (!signal.aborted) {
    try {
      const [prs, runs] = await Promise.all([
        api("/v1/prs", { signal }),
        api("/v1/runs?limit=500", { signal }),
      ]);
      if (signal.aborted) return;
      const opened = new Map(runs.filter((run) => run.pr).map((run) => [`${run.pr.repo}#${run.pr.number}`, run.id]));
      fill(body, prs.length
        ? table(columns(opened), prs)
        : empty("No pull requests yet. Runs on the local forge keep theirs here."));
      notify("");
    } catch (error) {
      if (signal.aborted || (error instanceof ApiError && error.status === 401)) return;
      notify(`Could not load the pull requests: ${error.message}. Retrying…`);
    }
    await pause(REFRESH_SECONDS, signal);
  }
}
