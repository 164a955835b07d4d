"""What a forge's trigger says on an issue or a pull request, and the marks it leaves there.

Every comment the trigger posts ends with an HTML comment (invisible on GitHub and GitLab)
naming its run: ``<!-- golem:run RUN delivery ID -->`` when a run starts, ``<!-- golem:done
RUN -->`` when it has reported the end, ``<!-- golem:refused WHO -->`` when it told someone
they may not start a follow-up. The discussion is thus the trigger's record:
a restarted server finds the runs it still has to report, and any server finds a run in
progress there. (Which delivery started which run is the store's record: a redelivery is
told by it, not by a mark anyone could write.)
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from golem.blueprint import RunState
from golem.core.masking import mask_text
from golem.forge import IssueComment, markdown

__all__ = [
    "MARKER",
    "Started",
    "acknowledgement",
    "answering",
    "busy",
    "completion",
    "refusal",
    "refused",
    "reported",
    "started",
]

MARKER = "<!-- golem:"
_STARTED = re.compile(r"<!-- golem:run (?P<run>[\w.:-]+) delivery (?P<delivery>[\w.:-]+) -->")
_DONE = re.compile(r"<!-- golem:done (?P<run>[\w.:-]+) -->")
_REFUSED = re.compile(r"<!-- golem:refused (?P<who>[\w.:-]+) -->")
_UNSAFE = re.compile(r"[^\w.:-]")
REASON_LIMIT = 1500


@dataclass(frozen=True)
class Started:
    """A run the trigger acknowledged on an issue, and the delivery that started it."""

    run_id: str
    delivery: str


def acknowledgement(
    run_id: str,
    delivery: str,
    why: str,
    sender: str,
    noun: str = "issue",
    unasked: str | None = None,
) -> str:
    """The comment that says a run started for this ``noun`` (the sender is named, never
    @-mentioned), and, with ``unasked`` (why no person asked), that it runs as an
    outsider's."""
    who = f" by {sender}" if sender else ""
    outsider = f" It runs as an outsider's: {unasked}." if unasked else ""
    return (
        f"golem started run `{run_id}` for this {noun} ({why}{who}).{outsider} It will say "
        f"here how the run ends.\n\n<!-- golem:run {run_id} delivery {delivery} -->"
    )


def answering(ack: str, waited_for: str, delivery: str, sender: str) -> str:
    """``ack`` saying which queued request its run answers: ``sender``'s, delivery
    ``delivery``, kept while run ``waited_for`` ran."""
    text, mark = ack.rsplit("\n\n", 1)
    answers = (
        f"It answers the request {sender} made while run `{waited_for}` ran (delivery "
        f"`{delivery}`), queued until that run ended."
    )
    return f"{text}\n\n{answers}\n\n{mark}"


def refusal(who: str, handle: str) -> str:
    """The comment that tells ``who`` (named, never @-mentioned) they may not start a
    follow-up, said once per person and pull request."""
    return (
        f"Thanks, {who}. golem answers reviews on its pull requests only when someone who "
        f"may push to this repository asks; ask a maintainer to mention {handle} if this "
        f"should be followed up.\n\n<!-- golem:refused {_UNSAFE.sub('_', who)} -->"
    )


def refused(comments: Iterable[IssueComment], who: str) -> bool:
    """Whether ``who`` was refused in these comments already."""
    name = _UNSAFE.sub("_", who)
    return any(found["who"] == name for c in comments for found in _REFUSED.finditer(c.body))


def busy(why: str, noun: str = "issue") -> str:
    """The comment that says no run could start because the server is full (``why``)."""
    return (
        f"golem could not start a run for this {noun}: {why}. "
        f"Ask again later (add the label again, or mention golem again).\n\n{MARKER}busy -->"
    )


def completion(state: RunState, secrets: Iterable[str] = ()) -> str | None:
    """The comment that reports how ``state`` ended, or None when the run's own ship step
    has said it already (a pull request opened or pushed to, or an escalation)."""
    follow_up = state.request.follow_up is not None
    if state.status == "escalated" or (state.status == "succeeded" and state.pr is not None):
        return None
    pr = f"\n\nIts pull request: {state.pr.url}" if state.pr is not None else ""
    if state.status == "succeeded" and follow_up:
        summary = f": {state.summary}" if state.summary else "."
        text = f"golem run `{state.id}` pushed nothing{summary}"
    elif state.status == "succeeded":
        summary = f": {state.summary}" if state.summary else "."
        text = f"golem run `{state.id}` ended without a pull request{summary}"
    elif state.status == "cancelled":
        text = f"golem run `{state.id}` was cancelled ({state.error or 'on request'})."
    else:
        reason = markdown.block(_clip(_masked(state.error or "no reason was recorded", secrets)))
        text = f"golem run `{state.id}` failed:\n\n{reason}{pr}"
        pr = ""
    return f"{text}{pr}\n\n<!-- golem:done {state.id} -->"


def started(comments: Iterable[IssueComment]) -> list[Started]:
    """The runs acknowledged in an issue's comments, oldest first."""
    return [
        Started(found["run"], found["delivery"])
        for comment in comments
        for found in _STARTED.finditer(comment.body)
    ]


def reported(comments: Iterable[IssueComment]) -> set[str]:
    """The runs whose end was reported in an issue's comments."""
    return {found["run"] for comment in comments for found in _DONE.finditer(comment.body)}


def _masked(text: str, secrets: Iterable[str]) -> str:
    return mask_text(text, secrets)


def _clip(text: str) -> str:
    return text if len(text) <= REASON_LIMIT else text[: REASON_LIMIT - 1] + "…"
