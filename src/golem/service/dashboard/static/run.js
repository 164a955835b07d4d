// A run's page: its state, its gate, its pull request, its checks and diff, and its live
// event log (the SSE stream, resumed after a drop with Last-Event-ID).

import { api, ApiError, follow } from "./api.js";
import { clock, duration, empty, fill, h, notify, pause } from "./dom.js";
import { CHANGES_STATE, describe, outputOf } from "./events.js";
import { drawAttempts, drawChecks, drawCI, drawDiff, drawGate, drawHeader, drawPullRequest, drawSteps } from "./runparts.js";
import { FINAL, runDuration } from "./runs.js";

function section(title, body, attrs = {}) {
  return h("section", { class: "card", ...attrs }, h("h2", {}, title), body);
}

function layout(main) {
  const ui = {
    title: h("h1", { "data-testid": "run-title" }),
    status: h("span", { "data-testid": "run-status" }),
    actions: h("div", { class: "actions" }),
    facts: h("dl", { class: "facts" }),
    task: h("pre", { class: "task", "data-testid": "run-task" }),
    error: h("p", { class: "alert", "data-testid": "run-error", hidden: true }),
    summary: h("section", { class: "card", "data-testid": "run-summary", hidden: true }),
    gate: h("section", { class: "card gate", "data-testid": "gate", hidden: true }),
    pr: h("section", { class: "card", "data-testid": "pr" }),
    steps: h("div", { "data-testid": "steps" }),
    checks: h("div", { "data-testid": "checks" }),
    ci: h("section", { class: "card", "data-testid": "ci", hidden: true }, h("h2", {}, "CI"), h("div")),
    attempts: h("section", { class: "card", "data-testid": "attempts", hidden: true },
      h("h2", {}, "Attempts"), h("div")),
    diff: h("div", {}, empty("Loading the diff…")),
    log: eventLog(),
  };
  ui.taskBox = h("details", { class: "task-box" }, h("summary", {}, "Task"), ui.task);
  fill(main, h("div", { class: "page run" },
    h("a", { href: "#/runs", class: "back" }, "← Runs"),
    h("div", { class: "page-head" }, h("div", { class: "heading" }, ui.title, ui.status), ui.actions),
    ui.facts, ui.taskBox, ui.error, ui.gate,
    h("div", { class: "columns" },
      section("Events", [ui.log.state, ui.log.list], { class: "card events" }),
      h("div", { class: "side" }, ui.pr, section("Steps", ui.steps), ui.ci, section("Checks", ui.checks))),
    ui.attempts,
    ui.summary,
    section("Diff", ui.diff)));
  return ui;
}

function eventLog() {
  const list = h("ol", { class: "log", "data-testid": "events", "aria-live": "polite" });
  const state = h("p", { class: "stream", "data-testid": "stream-state" }, "connecting…");
  const seen = new Set();
  let output = null; // the block a check's live output is growing in: { key, item, text }
  return {
    list,
    state,
    add(event) {
      if (event.id !== null) {
        if (seen.has(event.id)) return;
        seen.add(event.id);
      }
      const described = describe(event.type, event.data);
      if (!described) return;
      const [label, text, tone = ""] = described;
      const atBottom = list.scrollTop + list.clientHeight >= list.scrollHeight - 24;
      const key = outputOf(event.type, event.data);
      if (key !== null && tone === "" && output?.key === key && list.lastElementChild === output.item) {
        const pre = output.text;
        const following = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 8;
        pre.append(text); // the next piece of the same check's output
        if (following) pre.scrollTop = pre.scrollHeight;
      } else {
        const body = key !== null ? h("pre", { class: "text output live" }, text) : h("span", { class: "text" }, text);
        const item = h("li", { class: `event ${tone}`, "data-type": event.type, "data-seq": event.id },
          h("span", { class: "seq" }, event.id ?? ""),
          h("time", {}, event.data.time ? clock(event.data.time) : ""),
          h("span", { class: "what", title: label }, label),
          body);
        list.append(item);
        output = key !== null ? { key, item, text: body } : null;
      }
      if (atBottom) list.scrollTop = list.scrollHeight;
    },
    say(text, tone) {
      fill(state, text);
      state.className = `stream ${tone}`;
    },
  };
}

/** Run `work` now, or once more after the run in flight when asked during it. */
function coalesced(work) {
  let running = null;
  let again = false;
  return () => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      try {
        let result;
        do {
          again = false;
          result = await work();
        } while (again);
        return result;
      } finally {
        running = null;
      }
    })();
    return running;
  };
}

async function followEvents(runId, log, refresh, signal) {
  let last = null;
  let failures = 0;
  const path = `/v1/runs/${encodeURIComponent(runId)}/events`;
  const onEvent = (event) => {
    if (event.id !== null) last = event.id;
    log.add(event);
    if (CHANGES_STATE.has(event.type)) refresh().catch(() => {});
  };
  while (!signal.aborted) {
    try {
      const resumed = last;
      const onOpen = () => log.say(resumed === null ? "● live" : `● live (resumed after event ${resumed})`, "live");
      await follow(path, { lastId: last, signal, onEvent, onOpen });
      failures = 0;
      const run = await refresh();
      if (FINAL.has(run.status)) {
        log.say(`The run ended (${run.status}).`, "ended");
        return;
      }
      await pause(1, signal); // the stream ended early (a restart?): go on where it left
    } catch (error) {
      if (signal.aborted || (error instanceof ApiError && [401, 403, 404].includes(error.status))) return;
      failures += 1;
      const wait = Math.min(30, 2 ** failures);
      log.say(`Connection lost (${error.message}); reconnecting in ${wait}s…`, "lost");
      await pause(wait, signal);
    }
  }
}

export async function runView(main, runId, signal) {
  const ui = layout(main);
  const base = `/v1/runs/${encodeURIComponent(runId)}`;
  let run = null;
  let diffFor = null;
  const act = async (path, body) => {
    try {
      await api(`${base}/${path}`, { method: "POST", body, signal });
      notify("");
    } catch (error) {
      notify(`The server refused: ${error.message}`);
      throw error;
    } finally {
      refresh().catch(() => {});
    }
  };
  const handlers = {
    onCancel: () => act("cancel").catch(() => {}),
    onDecide: (decision) => act("gate", { decision }),
  };
  const refresh = coalesced(async () => {
    run = await api(base, { signal });
    drawHeader(ui, run, handlers);
    drawGate(ui.gate, run, handlers);
    drawPullRequest(ui.pr, run);
    drawSteps(ui.steps, run);
    drawCI(ui.ci, run);
    drawAttempts(ui.attempts, run);
    drawChecks(ui.checks, run);
    const changeKey = `${run.pr?.number ?? ""}|${run.commit ?? ""}|${FINAL.has(run.status)}`;
    if (changeKey !== diffFor) {
      diffFor = changeKey;
      drawDiff(ui.diff, await api(`${base}/diff`, { signal }));
    }
    return run;
  });
  try {
    await refresh();
  } catch (error) {
    if (signal.aborted) return;
    if (error instanceof ApiError && error.status === 404) {
      fill(main, h("div", { class: "page" }, h("a", { href: "#/runs", class: "back" }, "← Runs"),
        h("p", { class: "alert", role: "alert" }, `No run ${runId} in your tenant.`)));
      return;
    }
    throw error;
  }
  const ticker = setInterval(() => {
    if (run && !FINAL.has(run.status)) fill(ui.duration, duration(runDuration(run)));
  }, 1000);
  signal.addEventListener("abort", () => clearInterval(ticker), { once: true });
  await followEvents(runId, ui.log, refresh, signal);
}
