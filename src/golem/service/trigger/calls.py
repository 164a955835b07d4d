"""What a webhook delivery asks of golem, whichever forge sent it: a run for an issue, a
follow-up run on a pull request golem opened, or nothing (and why)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from golem.forge import Issue

__all__ = ["Call", "Ignored", "IssueCall", "ReviewCall", "mentions"]

_FENCED = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_INLINE = re.compile(r"`[^`\n]*`")
_QUOTED = re.compile(r"^[ \t]*>.*$", re.MULTILINE)


@dataclass(frozen=True)
class IssueCall:
    """A delivery that asks for a run on an issue."""

    repo: str
    """owner/name (GitHub), group/project (GitLab)"""
    number: int
    sender: str
    why: str
    """What asked, in words: ``labelled golem``, ``mentioned @golem``."""
    member: str | None = None
    """Who must be a member of the repository for this to count, as ``Forge.permission``
    takes them (GitLab's mentions; GitHub's delivery says it: ``author_association``)."""
    request: str | None = None
    """What a mention wrote (None: a label, which is never queued behind a run)."""
    unasked: str | None = None
    """Why no person asked (a label a bot or an app set, or one of no sender): the run then
    counts as an outsider's, as Linear's of no person does; None: a person asked."""

    @property
    def person(self) -> str:
        """Who asked, once per issue in the pending requests (GitLab: the user's id)."""
        return self.member or self.sender

    @property
    def ref(self) -> str:
        """The issue as a run request names it: ``owner/name#N``."""
        return f"{self.repo}#{self.number}"

    @property
    def key(self) -> str:
        """What one run at a time is counted per."""
        return self.ref

    @property
    def noun(self) -> str:
        """What the trigger's comments call the place they are on."""
        return "issue"

    def target(self) -> Issue:
        """The issue, as ``Forge.comment`` takes it."""
        return Issue(title="", repo=self.repo, number=self.number)


@dataclass(frozen=True)
class ReviewCall:
    """A delivery that asks for a follow-up run on a pull (merge) request."""

    repo: str
    number: int
    sender: str
    """Who asked, as the forge names them (a login, a username)."""
    user: str
    """Who asked, as ``Forge.permission`` takes them (GitHub: the login; GitLab: the id)."""
    why: str
    thread: str | None
    """The review thread it came from (``ReviewThread.id``); None: the conversation."""
    request: str
    """What they wrote."""

    @property
    def person(self) -> str:
        """Who asked, once per pull request in the pending requests."""
        return self.user

    @property
    def key(self) -> str:
        """What one run at a time is counted per: ``owner/name!N`` (GitLab's way of
        naming a merge request; its issues are numbered apart)."""
        return f"{self.repo}!{self.number}"

    @property
    def noun(self) -> str:
        """What the trigger's comments call the place they are on."""
        return "pull request"

    def target(self) -> Issue:
        """The pull request's conversation, as ``Forge.comment`` takes it."""
        return Issue(title="", repo=self.repo, number=self.number, pull_request=True)


Call = IssueCall | ReviewCall


@dataclass(frozen=True)
class Ignored:
    """A delivery that starts nothing, and why."""

    reason: str


def mentions(body: str, handle: str) -> bool:
    """Whether ``body`` mentions ``handle`` as a word of its own, outside quotes (``>``
    lines) and code, case-insensitively (a reply quoting a mention is not a new one)."""
    text = _QUOTED.sub("", _INLINE.sub("", _FENCED.sub("", body)))
    pattern = rf"(?<![\w@/.-]){re.escape(handle.strip())}(?![\w-])"
    return re.search(pattern, text, re.IGNORECASE) is not None
