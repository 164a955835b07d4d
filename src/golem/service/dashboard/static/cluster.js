// The Ray cluster the server's boxes run on (admin keys, servers with [cluster]
// ray_address): each node, its box slots and use, and the sessions and runs it holds.

import { api, ApiError } from "./api.js";
import { badge, empty, fill, h, notify, pause, table } from "./dom.js";

const REFRESH_SECONDS = 5;

/** Whether this key sees a cluster (GET /v1/cluster answers): the nav shows the page. */
export async function hasCluster() {
  try {
    await api("/v1/cluster");
    return true;
  } catch (error) {
    if (error instanceof ApiError) return false; // 403: not admin; 404: one machine
    throw error;
  }
}

function ids(list) {
  if (list === null) return h("span", { class: "muted" }, "unknown (no answer)");
  if (!list.length) return "–";
  return list.map((id) => h("div", { class: "mono" }, id));
}

const COLUMNS = [
  ["Node", (node) => h("span", {}, node.name)],
  ["Id", (node) => h("span", { class: "mono clip" }, node.node_id.slice(0, 12))],
  ["Address", (node) => h("span", { class: "mono" }, node.address)],
  ["State", (node) => badge(node.alive ? "alive" : "dead")],
  ["Slots taken", (node) => `${node.taken} / ${node.slots}`],
  ["Box host", (node) => (node.box_host ? "up" : "–")],
  ["Sessions", (node) => ids(node.sessions)],
  ["Runs", (node) => ids(node.runs)],
];

export async function clusterView(main, signal) {
  const body = h("div", { "data-testid": "cluster" }, empty("Loading the cluster…"));
  fill(main, h("section", { class: "page" },
    h("div", { class: "page-head" }, h("h1", {}, "Cluster")),
    body));
  while (!signal.aborted) {
    try {
      const status = await api("/v1/cluster", { signal });
      if (signal.aborted) return;
      fill(body, status.nodes.length
        ? table(COLUMNS, status.nodes, (node) => ({ "data-node-name": node.name }))
        : empty("The cluster has no nodes."));
      notify("");
    } catch (error) {
      if (signal.aborted || (error instanceof ApiError && error.status === 401)) return;
      notify(`Could not load the cluster: ${error.message}. Retrying…`);
    }
    await pause(REFRESH_SECONDS, signal);
  }
}
