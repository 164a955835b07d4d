"""What golem says on a Linear issue: the status comment of its run (who asked and why,
the step it is at, its checks and cost, the gate it waits at), the step an agent session
is told, and how the run ended (its pull request, its checks and cost, or why a person
must take over), all from ``golem.service.sources.RunProgress``. Linear's own strings and
the box's go in as code; the reporter masks every text with the secrets golem knows before
it leaves. Each comment ends with a mark naming the run (comments marked so never start a
run, and a restarted server finds its status comment by it)."""

from __future__ import annotations

from collections.abc import Iterable

from golem.core.masking import mask_text
from golem.forge import markdown
from golem.service.linear.client import LinearIssue
from golem.service.sources import RunProgress

__all__ = ["completion", "issue_task", "session_start", "status", "status_mark", "step"]

MARK = "<!-- golem:"
"""How golem's own comments are marked (they are never a task, and start no run)."""


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
        if MARK in comment.body:
            continue  # golem's own reports are not the task
        author = comment.user.name if comment.user is not None else "someone"
        date = f" on {comment.created}" if comment.created else ""
        lines += ["", f"### Comment {number}, by {author}{date}", "", comment.body.strip()]
    return mask_text("\n".join(lines), secrets)


def status_mark(run_id: str) -> str:
    """The mark that ends the run's status comment (or session thought)."""
    return f"{MARK}run {run_id} -->"


def status(progress: RunProgress, why: str, who: str) -> str:
    """The run's status: that it started, for whom and why (the person named, never
    mentioned), and where it is now."""
    by = f" by {markdown.code(who)}" if who else ""
    lines = [
        f"golem started run `{progress.run_id}` for this issue ({why}{by}). It keeps this "
        "comment up to date and says below how the run ends.",
        "",
        f"**{progress.status}**" + (f" at {markdown.code(progress.step)}" if progress.step else ""),
        f"{_checks(progress)} · {_cost(progress)}",
    ]
    if progress.gate is not None:
        lines.append(f"Waiting for a person: {markdown.code(progress.gate)}")
    if progress.paused is not None:
        lines.append(f"Paused: {markdown.code(progress.paused)}")
    if progress.pr_url is not None:
        lines.append(f"Pull request: {progress.pr_url}")
    return "\n".join([*lines, "", status_mark(progress.run_id)])


def session_start(progress: RunProgress, why: str, who: str) -> str:
    """The thought that says in an agent session that the run started."""
    by = f" by {markdown.code(who)}" if who else ""
    return (
        f"golem started run `{progress.run_id}` for this issue ({why}{by}). It tells this "
        f"session each step, and how the run ends.\n\n{status_mark(progress.run_id)}"
    )


def step(progress: RunProgress) -> str:
    """What an agent session is told of the run's step (an ephemeral thought)."""
    if progress.gate is not None:
        return f"golem waits for a person: {markdown.code(progress.gate)}"
    if progress.paused is not None:
        return f"golem is paused: {markdown.code(progress.paused)}"
    return f"golem: {progress.step or progress.status}"


def completion(progress: RunProgress) -> str:
    """How the run ended: its pull request with its checks and cost, or why not."""
    pr, run, facts = progress.pr_url, progress.run_id, f"{_checks(progress)} · {_cost(progress)}"
    if progress.status == "succeeded" and pr is not None:
        did = "pushed to" if progress.follow_up else "opened"
        text = f"golem {did} {pr}: {_said(progress.summary)}\n\n{facts}"
    elif progress.status == "unverified" and pr is not None:
        text = (
            f"golem opened {pr} as a draft: no check verified it ({_said(progress.reason)})."
            f"\n\n{_cost(progress)}"
        )
    elif progress.status == "escalated" and pr is not None:
        text = (
            f"golem could not finish: {pr} is marked for a person to take over.\n\n"
            f"{_reason(progress)}\n\n{facts}"
        )
    elif progress.status == "escalated":
        text = f"golem could not make a change for this issue.\n\n{_reason(progress)}"
    elif progress.status == "cancelled":
        text = f"golem run `{run}` was cancelled ({_said(progress.reason or 'on request')})."
    elif progress.status == "succeeded":
        text = f"golem run `{run}` ended without a pull request: {_said(progress.summary)}"
    else:
        text = f"golem run `{run}` failed:\n\n{_reason(progress)}"
    return f"{text}\n\n{MARK}done {run} -->"


def _checks(progress: RunProgress) -> str:
    if not progress.checks:
        return "no check ran"
    passed = sum(1 for check in progress.checks if check.passed)
    return f"checks: {passed} of {len(progress.checks)} passed"


def _cost(progress: RunProgress) -> str:
    return f"cost ${progress.cost_usd:.2f}"


def _said(text: str | None) -> str:
    return (text or "").strip() or "no summary"


def _reason(progress: RunProgress) -> str:
    return markdown.block(progress.reason or "no reason was recorded")
