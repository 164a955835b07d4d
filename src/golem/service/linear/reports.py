"""What golem says on a Linear issue: that its run started, and how it ended (its pull
request, its checks and cost, or why a person must take over). Linear's own strings and
the box's go in as code, and every text is masked with the secrets golem knows before it
leaves. Each comment ends with a mark naming the run (comments marked so never start a
run)."""

from __future__ import annotations

from collections.abc import Iterable

from golem.blueprint import RunState
from golem.core.masking import mask_text
from golem.forge import markdown
from golem.service.linear.client import LinearIssue

__all__ = ["acknowledgement", "completion", "issue_task"]

REASON_LIMIT = 1500


def issue_task(issue: LinearIssue, secrets: Iterable[str]) -> str:
    """The task a Linear issue asks for: its identifier and title, its description, its
    labels and comments, masked."""
    lines = [f"{issue.identifier}: {issue.title.strip()}", f"Linear issue {issue.identifier}"]
    if issue.url:
        lines[-1] += f" <{issue.url}>"
    if issue.labels:
        lines.append("Labels: " + ", ".join(label.name for label in issue.labels))
    lines += ["", (issue.description or "").strip() or "(no description)"]
    for number, comment in enumerate(issue.comments, start=1):
        if "<!-- golem:" in comment.body:
            continue  # golem's own reports are not the task
        author = comment.user.name if comment.user is not None else "someone"
        date = f" on {comment.created}" if comment.created else ""
        lines += ["", f"### Comment {number}, by {author}{date}", "", comment.body.strip()]
    return mask_text("\n".join(lines), secrets)


def acknowledgement(run_id: str, why: str, who: str) -> str:
    """The comment that says a run started (the person is named, never mentioned)."""
    by = f" by {markdown.code(who)}" if who else ""
    return (
        f"golem started run `{run_id}` for this issue ({why}{by}). It will say here how the "
        f"run ends.\n\n<!-- golem:run {run_id} -->"
    )


def completion(state: RunState, secrets: Iterable[str]) -> str:
    """How the run ended: its pull request with its checks and cost, or why not."""
    pr = state.pr
    cost = f"cost ${state.cost_usd:.2f}"
    checks = _checks(state)
    if state.status == "succeeded" and pr is not None:
        did = "pushed to" if state.request.follow_up is not None else "opened"
        text = f"golem {did} {pr.url}: {_said(state.summary, secrets)}\n\n{checks} · {cost}"
    elif state.status == "unverified" and pr is not None:
        why = _said(state.unverified or "", secrets)
        text = f"golem opened {pr.url} as a draft: no check verified it ({why}).\n\n{cost}"
    elif state.status == "escalated" and pr is not None:
        text = (
            f"golem could not finish: {pr.url} is marked for a person to take over.\n\n"
            f"{_reason(state, secrets)}\n\n{checks} · {cost}"
        )
    elif state.status == "escalated":
        text = f"golem could not make a change for this issue.\n\n{_reason(state, secrets)}"
    elif state.status == "cancelled":
        text = (
            f"golem run `{state.id}` was cancelled ({_said(state.error or 'on request', secrets)})."
        )
    elif state.status == "succeeded":
        text = (
            f"golem run `{state.id}` ended without a pull request: {_said(state.summary, secrets)}"
        )
    else:
        text = f"golem run `{state.id}` failed:\n\n{_reason(state, secrets)}"
    return f"{text}\n\n<!-- golem:done {state.id} -->"


def _checks(state: RunState) -> str:
    if not state.checks:
        return "no check ran"
    passed = sum(1 for check in state.checks if check.passed)
    return f"checks: {passed} of {len(state.checks)} passed"


def _said(text: str, secrets: Iterable[str]) -> str:
    return mask_text(text.strip() or "no summary", secrets)


def _reason(state: RunState, secrets: Iterable[str]) -> str:
    reason = state.error or state.unverified or "no reason was recorded"
    masked = mask_text(reason, secrets)
    clipped = masked if len(masked) <= REASON_LIMIT else masked[: REASON_LIMIT - 1] + "…"
    return markdown.block(clipped)
