// The sections of a run's page, each drawn from the run's state (GET /v1/runs/<id>) or
// its diff (GET /v1/runs/<id>/diff).

import { badge, clock, duration, empty, fill, h, money, safeLink, table, when } from "./dom.js";
import { isolationText } from "./events.js";
import { FINAL, runDuration, runTitle } from "./runs.js";

function fact(label, ...value) {
  return h("div", { class: "fact" }, h("dt", {}, label), h("dd", {}, ...value));
}

/** A follow-up's link to the run that opened its pull request, and the pull request. */
function followUpFact(run) {
  const follow = run.request.follow_up;
  if (!follow) return null;
  const parent = follow.parent_run
    ? h("a", { href: `#/runs/${encodeURIComponent(follow.parent_run)}` }, follow.parent_run)
    : "a run not known here";
  const where = run.pr ? safeLink(run.pr.url, run.pr.url) : `${follow.repo}#${follow.number}`;
  return fact("Follow-up of", h("span", { "data-testid": "run-follow-up" }, parent, " on ", where));
}

/** Why a paused run waits (its model provider is down) and when it resumes by itself. */
function pauseFact(run) {
  const pause = run.pause;
  if (!pause || FINAL.has(run.status)) return null;
  const again = pause.count > 1 ? ` (pause ${pause.count} in a row)` : "";
  return fact("Paused", h("span", { "data-testid": "run-pause" },
    `at ${pause.node}${again}, resumes by itself at ${clock(pause.resume_at)}: ${pause.reason}`));
}

/** Title, status and the facts of the run; a Cancel button while it is not over. */
export function drawHeader(ui, run, { onCancel }) {
  fill(ui.title, runTitle(run));
  document.title = `${runTitle(run)} · ${run.status} · golem`;
  fill(ui.status, badge(run.status));
  ui.duration = h("span", { "data-testid": "run-duration" }, duration(runDuration(run)));
  const branch = run.branch ? `${run.branch} → ${run.base || "?"}` : "–";
  fill(ui.facts,
    fact("Run", h("span", { class: "mono" }, run.id)),
    fact("Repository", h("span", { class: "mono clip" }, run.request.repo)),
    fact("Branch", h("span", { class: "mono" }, branch)),
    fact("Blueprint", run.blueprint),
    fact("Isolation", h("span", { "data-testid": "run-isolation" },
      run.isolation ? isolationText(run.isolation) : `${run.tier ?? "default tier"} (no box yet)`)),
    followUpFact(run),
    fact("Model", run.request.model ?? "server default"),
    fact("Cost", h("span", { "data-testid": "run-cost" }, money(run.cost_usd))),
    fact("Duration", ui.duration),
    fact("Turns", `${run.turns} · ${run.rounds} fix round${run.rounds === 1 ? "" : "s"}`),
    fact("Submitted", when(run.created)),
    run.current && !FINAL.has(run.status) ? fact("Now at", run.current) : null,
    pauseFact(run),
    run.unverified ? fact("Not verified", h("span", { "data-testid": "run-unverified" }, run.unverified)) : null,
  );
  const cancel = h("button", { type: "button", class: "danger quiet" }, "Cancel run");
  cancel.addEventListener("click", () => { cancel.disabled = true; onCancel(); });
  fill(ui.actions, FINAL.has(run.status) ? null : cancel);
  fill(ui.task, run.task_text || run.request.task || run.request.issue || "");
  ui.taskBox.hidden = !ui.task.textContent;
  fill(ui.error, run.error ?? "");
  ui.error.hidden = !run.error;
  fill(ui.summary, h("h2", {}, "Summary"), h("p", { class: "prose" }, run.summary));
  ui.summary.hidden = !run.summary;
}

/** Approve and Reject when the run waits at a gate; what was decided, after. */
export function drawGate(el, run, { onDecide }) {
  const gate = run.gate;
  if (run.status !== "waiting" || !gate) {
    el.hidden = true;
    el.replaceChildren();
    return;
  }
  el.hidden = false;
  if (gate.decision) {
    fill(el, h("p", {}, `Gate ${gate.node}: ${gate.decision}. The run goes on shortly.`));
    return;
  }
  const approve = h("button", { type: "button", class: "primary" }, "Approve");
  const reject = h("button", { type: "button", class: "danger" }, "Reject");
  const decide = (decision) => () => {
    approve.disabled = true;
    reject.disabled = true;
    onDecide(decision).catch(() => { approve.disabled = false; reject.disabled = false; });
  };
  approve.addEventListener("click", decide("approved"));
  reject.addEventListener("click", decide("rejected"));
  const deadline = gate.deadline
    ? `Without an answer by ${when(gate.deadline)}, the blueprint's default decides.`
    : "It waits until someone answers.";
  fill(el,
    h("div", {},
      h("h2", {}, "Waiting for you"),
      h("p", { class: "gate-message", "data-testid": "gate-message" }, gate.message),
      h("p", { class: "muted" }, `Gate ${gate.node}, asked at ${clock(gate.asked)}. ${deadline}`)),
    h("div", { class: "buttons" }, approve, reject));
}

/** The pull request: number, title, link (http addresses only), branches, checks. */
export function drawPullRequest(el, run) {
  const pr = run.pr;
  if (!pr) {
    fill(el, h("h2", {}, "Pull request"),
      empty(FINAL.has(run.status) ? "This run opened no pull request." : "Not opened yet: the run opens it when it ships."));
    return;
  }
  const passed = pr.checks.filter((check) => check.passed).length;
  fill(el,
    h("h2", {}, pr.draft ? "Pull request (draft)" : "Pull request"),
    h("p", { class: "pr-title" },
      h("span", { class: "pr-number", "data-testid": "pr-number" }, `#${pr.number}`), " ",
      safeLink(pr.url, pr.title, { "data-testid": "pr-title" })),
    h("p", { class: "mono small" }, `${pr.head} → ${pr.base}`),
    h("p", { class: "mono small clip", "data-testid": "pr-url" }, pr.url),
    pr.labels.length ? h("p", {}, pr.labels.map((label) => h("span", { class: "label" }, label))) : null,
    pr.checks.length ? h("p", { class: "small" }, `${passed} of ${pr.checks.length} checks passed`) : null);
}

/** The steps that ran, with outcome, duration and what their agent steps cost. */
export function drawSteps(el, run) {
  if (!run.steps.length) {
    fill(el, empty(run.status === "queued" ? "Queued: no step has run yet." : "No step has ended yet."));
    return;
  }
  fill(el, h("ol", { class: "steps" }, run.steps.map((step) => {
    const tone = ["success", "approved"].includes(step.outcome) ? "good" : "bad";
    return h("li", { class: tone, title: step.detail },
      h("span", { class: "node" }, step.node),
      h("span", { class: "kind" }, step.kind),
      h("span", { class: "outcome" }, step.outcome),
      h("span", { class: "took" }, duration(step.ended - step.started)),
      h("span", { class: "cost" }, step.cost_usd ? money(step.cost_usd) : ""));
  })));
}

/** Each wait for the forge's CI after ship: its commit, verdict, failing jobs, how long CI
 * took and what the fix after it cost; hidden while there is none. */
export function drawCI(el, run) {
  const rounds = run.ci || [];
  el.hidden = !rounds.length;
  fill(el.lastChild, table([
    ["Round", (ci) => String(ci.round)],
    ["Commit", (ci) => h("code", {}, ci.commit.slice(0, 12))],
    ["Verdict", (ci) => h("span", { class: `verdict ${ci.verdict}`, title: ci.note }, ci.verdict)],
    ["Failing", (ci) => ci.failing.join(", ") || "–"],
    ["Time", (ci) => (ci.ended === null ? "waiting" : duration(ci.ended - ci.started))],
    ["Fix cost", (ci) => (ci.cost_usd ? money(ci.cost_usd) : "–")],
  ], rounds, (ci) => ({ "data-testid": `ci-round-${ci.round}` })));
}

/** A best-of-N run's attempts side by side: each one's result, checks, diff size, cost
 * and why it won or lost (hidden for a run of one attempt). */
export function drawAttempts(el, run) {
  const attempts = run.attempts || [];
  el.hidden = !attempts.length;
  const passed = (attempt) => attempt.checks.filter((check) => check.passed).length;
  fill(el.lastChild, table([
    ["Attempt", (attempt) => String(attempt.number)],
    ["Result", (attempt) => h("span", { class: `verdict ${attempt.status}` }, attempt.status)],
    ["Checks passed", (attempt) => `${passed(attempt)} of ${attempt.checks.length}`],
    ["Lines changed", (attempt) => (attempt.diff_lines === null ? "–" : String(attempt.diff_lines))],
    ["Cost", (attempt) => money(attempt.cost_usd)],
    ["Why", (attempt) => (attempt.judged
      ? h("span", {}, attempt.verdict, "; the judge: ", h("q", { class: "judged" }, attempt.judged))
      : attempt.verdict || "–")],
  ], attempts, (attempt) => ({ "data-testid": `attempt-${attempt.number}` })));
}

/** A check's result in words, as `golem runs show` and the pull request say it. */
export function checkOutcome(check) {
  if (check.passed) return check.flaky ? "flaky (failed, then passed)" : "passed";
  const why = check.reason || (check.timed_out ? "timed out" : `exit ${check.exit_code}`);
  const outcome = check.flaky ? `flaky (failed, ${why})` : `failed (${why})`;
  if (check.preexisting) return `${outcome} · fails on the base commit too`;
  const progress = check.progress;
  return progress ? `${outcome} · ${progress.passing} of ${progress.of} now pass` : outcome;
}

function drawCheck(check) {
  const tone = check.passed && !check.flaky ? "good" : check.preexisting || check.flaky ? "warn" : "bad";
  const tests = (check.failures || []).map((failure) => h("li", {}, h("code", {}, failure.name),
    failure.message ? ` ${failure.message.split("\n")[0]}` : ""));
  return h("details", { class: `check ${tone}`, "data-testid": `check-${check.name}` },
    h("summary", {},
      h("span", { class: "mark" }, check.passed ? "✓" : "✗"), " ",
      h("strong", {}, check.name), " ",
      h("code", {}, check.command), " ",
      h("span", { class: "muted" }, `${checkOutcome(check)} · ${duration(check.duration)}`)),
    tests.length ? h("ul", { class: "failures" }, tests) : null,
    h("pre", { class: "output" }, check.output_tail || "(no output)"));
}

/** The box's preparation when a step of it failed, then the repository's checks as they
 * last ran, each with its result, its failing tests and its output's tail. */
export function drawChecks(el, run) {
  const prepared = (run.prepared || []).filter((result) => !result.passed);
  if (!run.checks.length && !prepared.length) {
    fill(el, empty("No checks have run yet."));
    return;
  }
  fill(el, [...prepared, ...run.checks].map(drawCheck));
}

function diffLine(line) {
  let tone = "";
  if (line.startsWith("diff --git") || line.startsWith("+++ ") || line.startsWith("--- ")) tone = "file";
  else if (line.startsWith("@@")) tone = "hunk";
  else if (line.startsWith("+")) tone = "add";
  else if (line.startsWith("-")) tone = "del";
  return h("span", { class: `line ${tone}` }, line);
}

/** The change as a unified diff, coloured per line. */
export function drawDiff(el, found) {
  if (found.source === "none" || !found.diff) {
    fill(el, empty(found.note || "No change to show."));
    return;
  }
  const source = found.source === "pull_request" ? "from the pull request" : "from the run's commit";
  fill(el,
    h("p", { class: "muted small" }, found.stat ? `${found.stat} · ${source}` : source,
      found.truncated ? " · cut short, it is too long to show whole" : ""),
    h("pre", { class: "diff", "data-testid": "diff" }, found.diff.replace(/\n$/, "").split("\n").map(diffLine)));
}
