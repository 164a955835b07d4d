"""What golem says in Slack: a run's status message (its step, checks, cost, the gate it
waits at, with buttons to approve or reject the gate and to cancel the run), the reply
when it ends, and the answers to requests it does not take. Whatever a run or a person
wrote goes in escaped or as code (``mrkdwn``); the Web API client masks every message."""

from __future__ import annotations

from typing import Any

from golem.service.slack import mrkdwn
from golem.service.sources import RunProgress

__all__ = [
    "answering",
    "busy",
    "ended",
    "no_repository",
    "nothing_asked",
    "queued",
    "status_blocks",
    "status_text",
    "status_text_prefix",
    "stranger",
    "unknown_repository",
]

MARKS = {
    "queued": ":hourglass_flowing_sand:",
    "running": ":gear:",
    "waiting": ":raised_hand:",
    "succeeded": ":white_check_mark:",
    "unverified": ":warning:",
    "escalated": ":sos:",
    "failed": ":x:",
    "cancelled": ":no_entry_sign:",
}


def status_text(progress: RunProgress) -> str:
    """The status message in one line (notifications, and clients without blocks)."""
    step = f", at {progress.step}" if progress.step else ""
    return f"{status_text_prefix(progress.run_id)} {progress.status}{step}"


def status_text_prefix(run_id: str) -> str:
    """How a run's status message's text begins (a restarted server finds it by it)."""
    return f"golem run {run_id}:"


def status_blocks(progress: RunProgress) -> list[dict[str, Any]]:
    """The status message: what the run does now, its checks and cost; its buttons."""
    mark = MARKS.get(progress.status, "")
    head = f"{mark} *golem run* {mrkdwn.code(progress.run_id)}: *{progress.status}*"
    if progress.step:
        head += f", at {mrkdwn.code(progress.step)}"
    if progress.title:
        head += f"\n{mrkdwn.escape(progress.title)}"
    blocks: list[dict[str, Any]] = [_section(head), _context(_facts(progress))]
    if progress.gate is not None:
        blocks.append(
            _section(f":raised_hand: Waiting for a person: {mrkdwn.escape(progress.gate)}")
        )
    if progress.paused is not None:
        blocks.append(_section(f":pause_button: Paused: {mrkdwn.escape(progress.paused)}"))
    if progress.pr_url is not None:
        blocks.append(_section(f"Pull request: {_pr(progress)}"))
    buttons = _buttons(progress)
    if buttons:
        blocks.append({"type": "actions", "block_id": "golem.run", "elements": buttons})
    return blocks


def ended(progress: RunProgress, requester: str | None) -> str:
    """The reply in the thread when the run has ended."""
    who = f"<@{requester}> " if requester else ""
    run = mrkdwn.code(progress.run_id)
    facts = _facts(progress)
    if progress.status == "succeeded" and progress.pr_url is not None:
        did = "pushed to" if progress.follow_up else "opened"
        return f"{who}golem run {run} {did} {_pr(progress)}. {facts}"
    if progress.status == "succeeded":
        said = mrkdwn.escape(progress.summary or "it changed nothing")
        return f"{who}golem run {run} ended without a pull request: {said}. {facts}"
    why = mrkdwn.block(progress.reason or "no reason was recorded")
    if progress.status == "cancelled":
        return f"{who}golem run {run} was cancelled: {mrkdwn.escape(progress.reason or '')}"
    pr = f" Its pull request: {_pr(progress)}." if progress.pr_url is not None else ""
    verdict = {
        "escalated": "needs a person",
        "unverified": "opened a draft no check verified",
    }.get(progress.status, "failed")
    return f"{who}golem run {run} {verdict}.{pr} {facts}\n{why}"


def stranger(user: str) -> str:
    """The one refusal a person golem does not know gets (privately)."""
    return (
        f"Sorry <@{user}>, golem starts runs only for the people its operators named "
        "([server.slack] users). Ask one of them to add you, or to ask golem for you."
    )


def refused(user: str, why: str) -> str:
    """The one refusal a person named in ``[server.slack] users`` gets (privately) when
    their Slack record does not let them ask (``why``)."""
    return f"Sorry <@{user}>: {why}"


def nothing_asked() -> str:
    """The answer to a mention that asks nothing, outside a thread."""
    return "Tell golem what to do: mention it with the task, or in a thread that describes it."


def no_repository(names: list[str]) -> str:
    """The answer when a message names no repository and none is the channel's."""
    known = ", ".join(mrkdwn.code(name) for name in names) or "none is configured"
    return f"Which repository? Say `repo: NAME` in your message ({known})."


def unknown_repository(name: str, names: list[str]) -> str:
    """The answer when ``repo:`` names a repository golem was not given."""
    known = ", ".join(mrkdwn.code(n) for n in names) or "none is configured"
    return f"golem knows no repository {mrkdwn.code(name)}: it knows {known}."


def queued(user: str, run_id: str) -> str:
    """The answer, in the thread, to a mention made while the thread's run goes on."""
    return (
        f"<@{user}>'s request is queued: golem starts it once run {mrkdwn.code(run_id)} "
        "has ended, on the same branch (a later mention of theirs replaces it)."
    )


def answering(run_id: str, user: str, waited_for: str) -> str:
    """Said in the thread as a queued request's run starts."""
    return (
        f"golem run {mrkdwn.code(run_id)} answers <@{user}>'s request, queued while run "
        f"{mrkdwn.code(waited_for)} went on."
    )


def busy(why: str) -> str:
    """The answer when a run could not start (the server full, a policy refused it)."""
    return f"golem could not start a run: {mrkdwn.escape(why)}"


def _facts(progress: RunProgress) -> str:
    checks = " · ".join(
        f"{':white_check_mark:' if c.passed else ':x:'} {mrkdwn.escape(c.name)}"
        + (" (flaky)" if c.flaky else "")
        for c in progress.checks
    )
    return f"Checks: {checks or 'none yet'} · cost ${progress.cost_usd:.4f}"


def _pr(progress: RunProgress) -> str:
    assert progress.pr_url is not None
    label = f"pull request #{progress.pr_number}" if progress.pr_number else "its pull request"
    return mrkdwn.link(progress.pr_url, label)


def _buttons(progress: RunProgress) -> list[dict[str, Any]]:
    if progress.finished:
        return []
    run = progress.run_id
    buttons = []
    if progress.gate is not None:
        buttons += [
            _button("golem.approve", "Approve", run, "primary"),
            _button("golem.reject", "Reject", run, "danger"),
        ]
    return [*buttons, _button("golem.cancel", "Cancel run", run, None)]


def _button(action: str, label: str, run_id: str, style: str | None) -> dict[str, Any]:
    button: dict[str, Any] = {
        "type": "button",
        "action_id": action,
        "text": {"type": "plain_text", "text": label},
        "value": run_id,
    }
    if style is not None:
        button["style"] = style
    return button


def _section(text: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:3000]}}


def _context(text: str) -> dict[str, Any]:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text[:3000]}]}
