"""What a GitHub webhook delivery asks of golem (see docs/github-trigger.md).

Issues: an issue given the trigger's label (``issues``/``labeled``), or a new comment on
it that mentions the handle (``issue_comment``/``created``) asks for a run. Pull requests:
a submitted review (``pull_request_review``) that mentions the handle or requests changes,
a new review comment (``pull_request_review_comment``) or comment on the conversation
(``issue_comment`` on a pull request) that mentions it asks for a follow-up run; whether
golem opened the pull request, and whether the person may ask, is the trigger's to check.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from golem.core.server_config import TriggerConfig
from golem.forge import is_repo_name
from golem.service.trigger.calls import Ignored, IssueCall, ReviewCall, mentions
from golem.service.trigger.comments import MARKER

__all__ = ["TRUSTED_AUTHORS", "is_bot", "read_delivery"]

TRUSTED_AUTHORS = frozenset({"OWNER", "MEMBER", "COLLABORATOR"})
"""Whose mentions start runs on issues (GitHub's ``author_association``): people with a say
in the repository, never any passer-by of a public one."""
EVENTS = ("issues", "issue_comment", "pull_request_review", "pull_request_review_comment")


def is_bot(user: Mapping[str, Any]) -> bool:
    """Whether a GitHub user is a bot (an app's account)."""
    login = str(user.get("login") or "")
    return user.get("type") == "Bot" or login.endswith("[bot]")


def read_delivery(
    event: str, payload: Mapping[str, Any], config: TriggerConfig, own_login: str | None
) -> IssueCall | ReviewCall | Ignored:
    """What the ``event`` delivery with ``payload`` asks for; ``own_login`` is the account
    golem comments as (its comments never start runs), when known."""
    if event not in EVENTS:
        return Ignored(f"{event!r} events start no runs (only {', '.join(EVENTS)})")
    item = _mapping(payload.get("pull_request") or payload.get("issue"))
    repo = str(_mapping(payload.get("repository")).get("full_name") or "")
    number = item.get("number")
    if not is_repo_name(repo) or not isinstance(number, int) or isinstance(number, bool):
        return Ignored(f"the {event} delivery names no issue or pull request")
    on_pull = event != "issues" and ("pull_request" in item or "pull_request" in payload)
    if item.get("state") == "closed":
        return Ignored(f"{repo}#{number} is closed")
    if on_pull:
        return _review(event, payload, config, own_login, (repo, number))
    by = _mapping(payload.get("sender"))
    sender = str(by.get("login") or "")
    why = (
        _labelled(payload, config) if event == "issues" else _mentioned(payload, config, own_login)
    )
    if isinstance(why, Ignored):
        return why
    labelled = event == "issues"
    body = None if labelled else str(_mapping(payload.get("comment")).get("body") or "")
    unasked = _unasked(by, sender) if labelled else None  # a mention's author is checked
    return IssueCall(
        repo=repo, number=number, sender=sender, why=why, request=body, unasked=unasked
    )


def _unasked(sender: Mapping[str, Any], login: str) -> str | None:
    """Why a label's ``sender`` is no person (a bot, an app, nobody named), or None."""
    if not login:
        return "the label was set by no one GitHub names"
    if is_bot(sender):
        return f"the label was set by {login}, a bot, not a person"
    return None


def _labelled(payload: Mapping[str, Any], config: TriggerConfig) -> str | Ignored:
    action = payload.get("action")
    if action != "labeled":
        return Ignored(f"issues/{action} starts no run (only labeled, with {config.label!r})")
    name = str(_mapping(payload.get("label")).get("name") or "")
    if name.casefold() != config.label.casefold():
        return Ignored(f"the label {name!r} is not the trigger's ({config.label!r})")
    return f"labelled {config.label}"


def _mentioned(
    payload: Mapping[str, Any], config: TriggerConfig, own_login: str | None
) -> str | Ignored:
    action = payload.get("action")
    if action != "created":
        return Ignored(f"issue_comment/{action} starts no run (only new comments)")
    comment = _mapping(payload.get("comment"))
    login = str(_mapping(comment.get("user")).get("login") or "")
    machine = _machine_made(payload, comment, own_login)
    if machine is not None:
        return machine
    if not mentions(str(comment.get("body") or ""), config.handle):
        return Ignored(f"the comment does not mention {config.handle}")
    association = str(comment.get("author_association") or "NONE")
    if association not in TRUSTED_AUTHORS:
        return Ignored(
            f"{login}'s association with the repository is {association}: only its owners, "
            "members and collaborators start runs by a mention"
        )
    return f"mentioned {config.handle}"


def _review(
    event: str,
    payload: Mapping[str, Any],
    config: TriggerConfig,
    own_login: str | None,
    where: tuple[str, int],
) -> ReviewCall | Ignored:
    """A follow-up asked by a review, a review comment or a comment on a pull request."""
    expected = "submitted" if event == "pull_request_review" else "created"
    action = payload.get("action")
    if action != expected:
        return Ignored(f"{event}/{action} starts no follow-up (only {expected})")
    said = _mapping(
        payload.get("review") if event == "pull_request_review" else payload.get("comment")
    )
    machine = _machine_made(payload, said, own_login)
    if machine is not None:
        return machine
    body = str(said.get("body") or "")
    why = _asked(event, said, body, config)
    if isinstance(why, Ignored):
        return why
    login = str(_mapping(said.get("user")).get("login") or "")
    repo, number = where
    return ReviewCall(
        repo=repo,
        number=number,
        sender=login,
        user=login,
        why=why,
        thread=_thread(event, said),
        request=body,
    )


def _asked(event: str, said: Mapping[str, Any], body: str, config: TriggerConfig) -> str | Ignored:
    """Why the review or comment asks for a follow-up, as ``follow_up_on`` says."""
    if "mention" in config.follow_up_on and mentions(body, config.handle):
        return f"mentioned {config.handle}"
    state = str(said.get("state") or "").lower()
    if event == "pull_request_review" and state == "changes_requested":
        if "changes_requested" in config.follow_up_on:
            return "requested changes"
        return Ignored("a review requesting changes starts no follow-up (server follow_up_on)")
    if "mention" not in config.follow_up_on:
        return Ignored("mentions start no follow-up (server follow_up_on)")
    return Ignored(f"the {event} does not mention {config.handle}")


def _thread(event: str, said: Mapping[str, Any]) -> str | None:
    """The review thread of a review comment: its first comment's id."""
    if event != "pull_request_review_comment":
        return None
    root = said.get("in_reply_to_id") or said.get("id")
    return str(root) if isinstance(root, int) and not isinstance(root, bool) else None


def _machine_made(
    payload: Mapping[str, Any], said: Mapping[str, Any], own_login: str | None
) -> Ignored | None:
    """Why a comment or review is a bot's or golem's own (which never start runs: no loops)."""
    author = _mapping(said.get("user"))
    login = str(author.get("login") or "")
    if is_bot(author) or is_bot(_mapping(payload.get("sender"))):
        return Ignored(f"{login or 'a bot'} is a bot: bots' comments start no runs")
    if own_login is not None and login.casefold() == own_login.casefold():
        return Ignored(f"{login} is golem's own account: its comments start no runs")
    if MARKER in str(said.get("body") or ""):
        return Ignored("the comment is golem's own")
    return None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
