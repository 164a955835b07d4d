"""A pull request's review discussion as the task of a follow-up run: what was asked, every
open thread (with its id, for the ``reply`` tool), the reviews, the conversation, resolved
threads in brief, the pull request's diff and the earlier run's summary.

The parts are written in that order, which is also their priority within the budget: each
gets what is left, cut on a line boundary when that is not enough, dropped (and listed)
when less than ``MIN_SECTION_TOKENS`` would remain. Within a part the newest comes first,
so a cut loses the oldest.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from golem.context.hydrate import MIN_SECTION_TOKENS
from golem.context.tokens import estimate_tokens, truncate_to_tokens
from golem.forge import IssueComment, PullRequest
from golem.forge.reviews import Review, ReviewDiscussion, ReviewThread

__all__ = ["ReviewAsk", "ReviewContext", "render_review"]

REVIEW_STATES = {
    "approved": "approved",
    "changes_requested": "requested changes",
    "commented": "commented",
    "dismissed": "dismissed",
}


@dataclass(frozen=True)
class ReviewAsk:
    """Who started the follow-up, where, and with which words."""

    request: str = ""
    requested_by: str = ""
    thread: str | None = None


@dataclass
class ReviewContext:
    """The rendered review, and the parts (or their ends) the budget left out."""

    text: str
    tokens: int
    dropped: list[str] = field(default_factory=list)


def render_review(
    pr: PullRequest,
    discussion: ReviewDiscussion,
    *,
    ask: ReviewAsk,
    diff: str = "",
    parent_summary: str = "",
    budget_tokens: int,
) -> ReviewContext:
    """The follow-up's task: ``pr`` and everything its reviewers said, within
    ``budget_tokens`` estimated tokens."""
    fit = _Fit(budget_tokens)
    fit.add("request", _request(pr, discussion, ask))
    for thread in _newest_first([t for t in discussion.threads if not t.resolved]):
        fit.add(f"thread {thread.id}", _thread(thread))
    if discussion.reviews:
        fit.add("reviews", _reviews(discussion.reviews))
    if discussion.comments:
        fit.add("conversation", _conversation(discussion.comments))
    resolved = [t for t in discussion.threads if t.resolved]
    if resolved:
        fit.add("resolved threads", _resolved(resolved))
    if diff.strip():
        fit.add("diff", f"## The pull request's diff against {pr.base}\n\n```diff\n{diff}\n```")
    if parent_summary.strip():
        fit.add("earlier run", f"## What the run that opened it said\n\n{parent_summary.strip()}")
    text = "\n\n".join(fit.parts)
    return ReviewContext(text=text, tokens=estimate_tokens(text), dropped=fit.dropped)


def _request(pr: PullRequest, discussion: ReviewDiscussion, ask: ReviewAsk) -> str:
    lines = [f"# Follow-up on pull request {pr.url}: {pr.title}", ""]
    lines.append(
        f"You work on its branch {pr.head} (into {pr.base}). Answer its review: change what "
        "the reviewers ask, reply to each thread you addressed (where you have the reply "
        "tool: it takes a thread's id, or none for the conversation), and say why where you "
        "disagree."
    )
    if ask.request.strip():
        who = ask.requested_by or "a reviewer"
        where = ""
        if ask.thread is not None:
            thread = next((t for t in discussion.threads if t.id == ask.thread), None)
            where = f" in thread {ask.thread}" + (f" ({_place(thread)})" if thread else "")
        lines += ["", f"## What {who} asked{where}", "", ask.request.strip()]
    return "\n".join(lines)


def _newest_first(threads: list[ReviewThread]) -> list[ReviewThread]:
    """Threads by their newest comment, newest first (forge order, reversed, when the
    forge gives no times)."""
    ordered = list(reversed(threads))
    return sorted(
        ordered, key=lambda t: max((c.created or "" for c in t.comments), default=""), reverse=True
    )


def _place(thread: ReviewThread) -> str:
    where = thread.path or "the pull request"
    if thread.path and thread.line is not None:
        where += f":{thread.line}"
    return where + (", outdated" if thread.outdated else "")


def _thread(thread: ReviewThread) -> str:
    lines = [f"## Open thread {thread.id} on {_place(thread)}", ""]
    lines += [f"- {note.author or 'someone'}: {_indent(note.body)}" for note in thread.comments]
    return "\n".join(lines)


def _reviews(reviews: list[Review]) -> str:
    lines = ["## Reviews (newest first)", ""]
    for review in reversed(reviews):
        said = f": {_indent(review.body)}" if review.body.strip() else ""
        lines.append(f"- {review.author or 'someone'} {REVIEW_STATES[review.state]}{said}")
    return "\n".join(lines)


def _conversation(comments: list[IssueComment]) -> str:
    lines = ["## Conversation (newest first)", ""]
    lines += [f"- {c.author or 'someone'}: {_indent(c.body)}" for c in reversed(comments)]
    return "\n".join(lines)


def _resolved(threads: list[ReviewThread]) -> str:
    lines = ["## Resolved threads (settled: for reference only)", ""]
    for thread in _newest_first(threads):
        first = thread.comments[0] if thread.comments else None
        gist = f"{first.author or 'someone'}: {_first_line(first.body)}" if first else ""
        lines.append(f"- thread {thread.id} on {_place(thread)}, resolved: {gist}")
    return "\n".join(lines)


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _indent(text: str) -> str:
    return text.strip().replace("\n", "\n  ")


@dataclass
class _Fit:
    left: int
    parts: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)

    def add(self, label: str, text: str) -> None:
        room = self.left - 1  # the blank line between parts
        if estimate_tokens(text) > room:
            total = text.count("\n") + 1
            text, kept = truncate_to_tokens(text, room) if room >= MIN_SECTION_TOKENS else ("", 0)
            if not text or estimate_tokens(text) < MIN_SECTION_TOKENS:
                self.dropped.append(label)
                return
            self.dropped.append(f"{label}: the last {total - kept} of {total} lines")
        self.parts.append(text)
        self.left -= estimate_tokens(text) + 1
