// The tenant's sessions (boxes held open for many calls), refreshed every few seconds.

import { api, ApiError } from "./api.js";
import { bytes, empty, fill, h, notify, pause, table, when } from "./dom.js";
import { isolationText } from "./events.js";

const REFRESH_SECONDS = 5;

function runtimes(info) {
  const entries = Object.entries(info.runtimes ?? {});
  return entries.length ? entries.map(([name, version]) => `${name} ${version}`).join(", ") : "–";
}

function memory(value) {
  if (value === null || value === undefined) return "no cap";
  return typeof value === "number" ? bytes(value) : String(value);
}

const COLUMNS = [
  ["Session", (info) => h("span", { class: "mono" }, info.id)],
  ["Started", (info) => when(info.created)],
  ["Image", (info) => h("span", { class: "mono clip" }, info.spec.image ?? "host (read-only)")],
  ["Isolation", (info) => isolationText(info.isolation)],
  ["Network", (info) => info.spec.network],
  ["CPUs", (info) => info.spec.cpus ?? "no cap"],
  ["Memory", (info) => memory(info.spec.memory)],
  ["Runtimes", runtimes],
];

export async function sessionsView(main, signal) {
  const body = h("div", { "data-testid": "sessions" }, empty("Loading sessions…"));
  fill(main, h("section", { class: "page" },
    h("div", { class: "page-head" }, h("h1", {}, "Sessions")),
    body));
  while (!signal.aborted) {
    try {
      const sessions = await api("/v1/sessions", { signal });
      if (signal.aborted) return;
      fill(body, sessions.length
        ? table(COLUMNS, sessions)
        : empty("No open sessions. POST /v1/sessions opens one."));
      notify("");
    } catch (error) {
      if (signal.aborted || (error instanceof ApiError && error.status === 401)) return;
      notify(`Could not load the sessions: ${error.message}. Retrying…`);
    }
    await pause(REFRESH_SECONDS, signal);
  }
}
