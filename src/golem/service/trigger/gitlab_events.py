"""What a GitLab webhook delivery asks of golem (see docs/gitlab-trigger.md).

Issue Hook: the trigger's label newly on an issue (opened with it, or added by an update)
asks for a run. Note Hook: a new note mentioning the handle on an issue asks for a run; on
a merge request, for a follow-up (whether golem opened it, and whether the person may ask,
is the trigger's to check). A Pipeline Hook fires automations (golem.service.automations),
never a trigger's run: golem reads a run's own CI by polling. The rest start nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from golem.core.server_config import TriggerConfig
from golem.forge import is_project_path
from golem.service.trigger.calls import Ignored, IssueCall, ReviewCall, mentions
from golem.service.trigger.comments import MARKER

__all__ = ["read_delivery"]

EVENTS = ("Issue Hook", "Note Hook")
"""What starts runs: ``X-Gitlab-Event`` (a group's hook sends the same names)."""


def read_delivery(
    event: str, payload: Mapping[str, Any], config: TriggerConfig, own_login: str | None
) -> IssueCall | ReviewCall | Ignored:
    """What the ``event`` delivery with ``payload`` asks for; ``own_login`` is the username
    golem comments as (its notes never start runs), when known."""
    if event not in EVENTS:
        return Ignored(
            f"{event!r} deliveries start no runs (only {' and '.join(EVENTS)}; golem reads "
            "pipelines by polling)"
        )
    project = str(_mapping(payload.get("project")).get("path_with_namespace") or "")
    if not is_project_path(project):
        return Ignored(f"the {event} delivery names no project (project.path_with_namespace)")
    if event == "Issue Hook":
        return _labelled(payload, config, project)
    return _noted(payload, config, own_login, project)


def _labelled(
    payload: Mapping[str, Any], config: TriggerConfig, project: str
) -> IssueCall | Ignored:
    issue = _mapping(payload.get("object_attributes"))
    iid = _number(issue.get("iid"))
    if iid is None:
        return Ignored("the Issue Hook names no issue (object_attributes.iid)")
    if issue.get("state") == "closed":
        return Ignored(f"{project}#{iid} is closed")
    action = issue.get("action")
    if action not in ("open", "update", "reopen"):
        return Ignored(f"issue/{action} starts no run (only open or update, adding the label)")
    if action == "open":
        added = _titles(payload.get("labels"))
    else:
        changed = _mapping(_mapping(payload.get("changes")).get("labels"))
        added = _titles(changed.get("current")) - _titles(changed.get("previous"))
    if config.label.casefold() not in added:
        return Ignored(f"the label {config.label!r} was not added")
    sender = str(_mapping(payload.get("user")).get("username") or "")
    unasked = None if sender else "the label was set by no one GitLab names"
    why = f"labelled {config.label}"
    return IssueCall(repo=project, number=iid, sender=sender, why=why, unasked=unasked)


def _noted(
    payload: Mapping[str, Any], config: TriggerConfig, own_login: str | None, project: str
) -> IssueCall | ReviewCall | Ignored:
    note = _mapping(payload.get("object_attributes"))
    user = _mapping(payload.get("user"))
    username = str(user.get("username") or "")
    body = str(note.get("note") or "")
    unasked = _not_asking(note, username, own_login)
    if unasked is not None:
        return unasked
    on = _noted_on(payload, note, project)
    if isinstance(on, Ignored):
        return on
    kind, iid = on
    if kind == "MergeRequest" and "mention" not in config.follow_up_on:
        return Ignored("mentions start no follow-up (server follow_up_on)")
    if not mentions(body, config.handle):
        return Ignored(f"the note does not mention {config.handle}")
    why = f"mentioned {config.handle}"
    user_id = _number(user.get("id") if user.get("id") is not None else note.get("author_id"))
    if kind == "Issue":
        member = str(user_id or username)
        return IssueCall(
            repo=project, number=iid, sender=username, why=why, member=member, request=body
        )
    discussion = note.get("discussion_id")
    return ReviewCall(
        repo=project,
        number=iid,
        sender=username,
        user=str(user_id or username),
        why=why,
        thread=str(discussion) if discussion else None,
        request=body,
    )


def _noted_on(
    payload: Mapping[str, Any], note: Mapping[str, Any], project: str
) -> tuple[str, int] | Ignored:
    """What the note is on: an open issue or merge request (its kind and iid)."""
    kind = str(note.get("noteable_type"))
    if kind not in ("Issue", "MergeRequest"):
        return Ignored(f"notes on a {kind} start no runs (only on issues and merge requests)")
    item = _mapping(payload.get("issue" if kind == "Issue" else "merge_request"))
    iid = _number(item.get("iid"))
    if iid is None:
        return Ignored(f"the Note Hook names no {kind} (its iid)")
    if item.get("state") in ("closed", "merged"):
        return Ignored(f"{project}{'#' if kind == 'Issue' else '!'}{iid} is {item.get('state')}")
    return kind, iid


def _not_asking(note: Mapping[str, Any], username: str, own_login: str | None) -> Ignored | None:
    """Why a note asks nothing whatever it says: not new, or GitLab's or golem's own."""
    if note.get("action") not in (None, "create"):
        return Ignored(f"note/{note.get('action')} starts no run (only new notes)")
    if note.get("system") is True or MARKER in str(note.get("note") or ""):
        return Ignored("the note is GitLab's or golem's own")
    if own_login is not None and username.casefold() == own_login.casefold():
        return Ignored(f"{username} is golem's own account: its notes start no runs")
    return None


def _titles(labels: object) -> set[str]:
    if not isinstance(labels, list):
        return set()
    return {str(_mapping(label).get("title") or "").casefold() for label in labels}


def _number(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
