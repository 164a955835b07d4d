// One line of the event log per run event: a label, a sentence, a tone. Plain strings
// only; the log turns them into text nodes.

import { clock, duration, money } from "./dom.js";

const LIMIT = 400;

function cut(text, limit = LIMIT) {
  const value = String(text ?? "");
  return value.length > limit ? `${value.slice(0, limit)}…` : value;
}

function firstLine(text) {
  return cut(String(text ?? "").trim().split("\n")[0]);
}

function args(call) {
  const value = call?.arguments ?? {};
  const text = Object.entries(value).map(([k, v]) => `${k}=${typeof v === "string" ? v : JSON.stringify(v)}`).join(" ");
  return cut(text, 160);
}

function agent(inner) {
  switch (inner.type) {
    case "agent_start":
      return ["agent", `starts with ${inner.model} (${inner.tools.length} tools)`];
    case "model_request":
      return ["model", `turn ${inner.turn}: asking the model`];
    case "model_wait": {
      const header = inner.header ? ` (${inner.header})` : "";
      return ["model", `turn ${inner.turn}: waited ${duration(inner.seconds)} for the provider: ${firstLine(inner.reason)}${header}`, "wait"];
    }
    case "model_response": {
      const message = inner.response?.message ?? {};
      const calls = (message.tool_calls ?? []).map((c) => c.name).join(", ");
      const said = firstLine(message.content);
      const tail = calls ? ` → ${calls}` : "";
      return ["model", `turn ${inner.turn}: ${said || "(no text)"}${tail} · ${money(inner.cost_so_far)} so far`];
    }
    case "tool_call":
      return ["tool", `${inner.call.name} ${args(inner.call)}`];
    case "tool_result":
      return [inner.is_error ? "tool error" : "tool", `${inner.name} → ${firstLine(inner.output) || "(no output)"}`, inner.is_error ? "bad" : ""];
    case "external_output":
      return [inner.stream, cut(inner.line)];
    case "agent_outcome": {
      const outcome = inner.outcome;
      return ["agent", `${outcome.status}: ${firstLine(outcome.summary)}`, outcome.status === "done" ? "good" : "bad"];
    }
    default:
      return [inner.type, ""];
  }
}

/** What isolation a box got, as golem says it (golem.core.isolation.Isolation's str):
 * "microvm (TCG)", "gvisor (docker+runsc, kvm)", "gvisor (ptrace)". */
export function isolationText(isolation) {
  if (!isolation) return "unknown";
  const backend = isolation.runtime ? `${isolation.backend}+${isolation.runtime}` : isolation.backend;
  const how = backend === isolation.tier ? [] : [backend];
  if (isolation.accel) how.push(String(isolation.accel).toUpperCase());
  if (isolation.platform) how.push(isolation.platform);
  return how.length ? `${isolation.tier} (${how.join(", ")})` : isolation.tier;
}

/** [label, text, tone] for an event, or null for events the log leaves out. */
export function describe(type, event) {
  switch (type) {
    case "run_start":
      return ["run", `${event.resumed ? "resumed" : "started"} (blueprint ${event.blueprint})`];
    case "node_start":
      return ["node", `${event.node} (${event.kind}) starts`];
    case "node_end": {
      const detail = event.detail ? `: ${firstLine(event.detail)}` : "";
      const tone = ["success", "approved"].includes(event.outcome) ? "good" : "bad";
      return ["node", `${event.node} → ${event.outcome}${detail} (${duration(event.duration)})`, tone];
    }
    case "box_start":
      return ["box", `${event.purpose} box ${event.box_id} started · isolation: ${isolationText(event.isolation)}`];
    case "check_output":
      return [`${event.node} · ${event.check}`, event.text, event.stream === "golem" ? "wait" : ""];
    case "check": {
      const check = event.check;
      const result = check.passed ? "passed" : `failed (exit ${check.exit_code})`;
      return ["check", `${check.name}: ${result} · ${check.command}`, check.passed ? "good" : "bad"];
    }
    case "gate_wait":
      return ["gate", `${event.node} waits for a person: ${event.message}`, "wait"];
    case "gate_decision":
      return ["gate", `${event.node} ${event.decision} (by ${event.decided_by})`, event.decision === "approved" ? "good" : "bad"];
    case "run_paused":
      return ["run", `paused at ${event.node}, resumes by itself at ${clock(event.resume_at)}: ${firstLine(event.reason)}`, "wait"];
    case "note":
      return ["note", cut(event.message)];
    case "agent": {
      if (event.event.type === "model_delta") return null; // the reply follows whole
      const [label, text, tone] = agent(event.event);
      return [`${event.node} · ${label}`, text, tone];
    }
    case "run_end": {
      const pr = event.pr ? ` · PR #${event.pr.number}` : "";
      return ["run", `ended ${event.status} · ${money(event.cost_usd)} · ${duration(event.duration)}${pr}`, event.status === "succeeded" ? "good" : "bad"];
    }
    default:
      return [type, ""];
  }
}

/** The check a piece of live output belongs to: its pieces in a row share one block. */
export function outputOf(type, event) {
  return type === "check_output" ? `${event.node}|${event.round}|${event.command}` : null;
}

/** Events after which the run's state (status, steps, checks, gate, PR) has changed. */
export const CHANGES_STATE = new Set(["run_start", "box_start", "node_start", "node_end", "check", "gate_wait", "gate_decision", "run_paused", "run_end"]);
