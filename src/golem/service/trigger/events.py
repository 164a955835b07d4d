"""What a GitHub webhook delivery asks of golem: a run for an issue, or nothing, and why.

Only two deliveries start runs: an issue given the trigger's label (``issues``,
``labeled``) and a new comment on an issue that mentions the trigger's handle
(``issue_comment``, ``created``). Everything else is ignored with a reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from golem.core.server_config import GitHubTriggerConfig
from golem.service.trigger.comments import MARKER

__all__ = ["TRUSTED_AUTHORS", "Ignored", "IssueCall", "is_bot", "mentions", "read_delivery"]

TRUSTED_AUTHORS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
"""Whose mentions start runs (GitHub's ``author_association``): people with a say in the
repository, never any passer-by of a public one."""
REPO_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}/[A-Za-z0-9_.-]{1,100}$")
_FENCED = re.compile(r"^(```|~~~).*?^\1", re.MULTILINE | re.DOTALL)
_INLINE = re.compile(r"`[^`\n]*`")
_QUOTED = re.compile(r"^[ \t]*>.*$", re.MULTILINE)


@dataclass(frozen=True)
class IssueCall:
    """A delivery that asks for a run on an issue."""

    repo: str
    """owner/name"""
    number: int
    sender: str
    why: str
    """What asked, in words: ``labelled golem``, ``mentioned @golem``."""

    @property
    def ref(self) -> str:
        """The issue as a run request names it: ``owner/name#N``."""
        return f"{self.repo}#{self.number}"


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


def is_bot(user: Mapping[str, Any]) -> bool:
    """Whether a GitHub user is a bot (an app's account)."""
    login = str(user.get("login") or "")
    return user.get("type") == "Bot" or login.endswith("[bot]")


def read_delivery(
    event: str, payload: Mapping[str, Any], config: GitHubTriggerConfig, own_login: str | None
) -> IssueCall | Ignored:
    """What the ``event`` delivery with ``payload`` asks for; ``own_login`` is the account
    golem comments as (its comments never start runs), when known."""
    if event not in ("issues", "issue_comment"):
        return Ignored(f"{event!r} events start no runs (only issues and issue_comment)")
    issue = _mapping(payload.get("issue"))
    repo = str(_mapping(payload.get("repository")).get("full_name") or "")
    number = issue.get("number")
    if not REPO_NAME.match(repo) or not isinstance(number, int) or isinstance(number, bool):
        return Ignored(f"the {event} delivery names no issue (repository.full_name, issue.number)")
    if "pull_request" in issue:
        return Ignored("pull requests start no runs: label or mention golem on an issue")
    if issue.get("state") == "closed":
        return Ignored(f"{repo}#{number} is closed")
    sender = str(_mapping(payload.get("sender")).get("login") or "")
    if event == "issues":
        why = _labelled(payload, config)
    else:
        why = _mentioned(payload, config, own_login)
    if isinstance(why, Ignored):
        return why
    return IssueCall(repo=repo, number=number, sender=sender, why=why)


def _labelled(payload: Mapping[str, Any], config: GitHubTriggerConfig) -> str | Ignored:
    action = payload.get("action")
    if action != "labeled":
        return Ignored(f"issues/{action} starts no run (only labeled, with {config.label!r})")
    name = str(_mapping(payload.get("label")).get("name") or "")
    if name.casefold() != config.label.casefold():
        return Ignored(f"the label {name!r} is not the trigger's ({config.label!r})")
    return f"labelled {config.label}"


def _mentioned(
    payload: Mapping[str, Any], config: GitHubTriggerConfig, own_login: str | None
) -> str | Ignored:
    action = payload.get("action")
    if action != "created":
        return Ignored(f"issue_comment/{action} starts no run (only new comments)")
    comment = _mapping(payload.get("comment"))
    login = str(_mapping(comment.get("user")).get("login") or "")
    body = str(comment.get("body") or "")
    machine = _machine_made(payload, own_login)
    if machine is not None:
        return machine
    if not mentions(body, config.handle):
        return Ignored(f"the comment does not mention {config.handle}")
    association = str(comment.get("author_association") or "NONE")
    if association not in TRUSTED_AUTHORS:
        return Ignored(
            f"{login}'s association with the repository is {association}: only its owners, "
            "members and collaborators start runs by a mention"
        )
    return f"mentioned {config.handle}"


def _machine_made(payload: Mapping[str, Any], own_login: str | None) -> Ignored | None:
    """Why a comment is a bot's or golem's own (which never start runs: no loops)."""
    comment = _mapping(payload.get("comment"))
    author = _mapping(comment.get("user"))
    login = str(author.get("login") or "")
    if is_bot(author) or is_bot(_mapping(payload.get("sender"))):
        return Ignored(f"{login or 'a bot'} is a bot: bots' comments start no runs")
    if own_login is not None and login.casefold() == own_login.casefold():
        return Ignored(f"{login} is golem's own account: its comments start no runs")
    if MARKER in str(comment.get("body") or ""):
        return Ignored("the comment is golem's own")
    return None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
