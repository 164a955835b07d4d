"""What a Linear webhook delivery asks of golem (docs/linear.md): a run for an issue
assigned (or delegated) to golem's user, given the trigger's label, or commented on with a
mention of its handle; or, where the workspace has golem as an agent, an agent session
created on an issue. Anything else, and what golem itself or a bot did, asks for nothing.
Who asked is checked against the workspace afterwards (the trigger's)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from golem.core.linear_config import LinearConfig
from golem.service.linear.reports import MARK
from golem.service.trigger.calls import Ignored, mentions

__all__ = ["LINEAR_ID", "LinearCall", "read_delivery"]

LINEAR_ID = re.compile(r"^[A-Za-z0-9-]{1,64}$")
"""An id Linear gives (a UUID); anything else in a delivery is refused as a name."""
NO_PERSON = "a comment by no person of the workspace (an integration's) starts no run"


@dataclass(frozen=True)
class LinearCall:
    """A delivery that asks for a run on a Linear issue."""

    issue_id: str
    why: str
    """What asked, in words: ``assigned to golem``, ``labelled golem``."""
    actor_id: str | None
    """The user who asked (checked as a member of the workspace); None: Linear itself."""
    actor: str = ""
    session_id: str | None = None
    """The agent session the delivery belongs to: golem reports through its activities."""
    request: str = ""
    """What a comment that mentions golem asks, as written (a follow-up's request once the
    issue's last run opened a pull request)."""


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _id(value: object) -> str | None:
    text = value if isinstance(value, str) else ""
    return text if LINEAR_ID.match(text) else None


def read_delivery(
    payload: Mapping[str, Any], config: LinearConfig, agent_id: str | None
) -> LinearCall | Ignored:
    """What the delivery asks for; ``agent_id`` is golem's user in Linear, when known."""
    kind, action = payload.get("type"), payload.get("action")
    if kind == "AgentSessionEvent":
        return _session(payload, action)
    actor = _mapping(payload.get("actor"))
    data = _mapping(payload.get("data"))
    if kind not in ("Issue", "Comment"):
        return Ignored(f"{kind} deliveries start no runs (only Issue, Comment, AgentSessionEvent)")
    actor_id = _id(actor.get("id")) or _id(data.get("userId"))
    if agent_id is not None and actor_id == agent_id:
        return Ignored("golem's own changes start no runs")
    if str(actor.get("type") or "user") != "user":
        return Ignored(f"a {actor.get('type')} (not a person) starts no runs")
    name = str(actor.get("name") or _mapping(data.get("user")).get("name") or "")
    if kind == "Comment":
        return _comment(data, action, config, actor_id, name)
    return _issue(payload, data, action, config, agent_id, actor_id, name)


def _issue(
    payload: Mapping[str, Any],
    data: Mapping[str, Any],
    action: object,
    config: LinearConfig,
    agent_id: str | None,
    actor_id: str | None,
    name: str,
) -> LinearCall | Ignored:
    if action not in ("create", "update"):
        return Ignored(f"Issue/{action} starts no run (only create and update)")
    issue_id = _id(data.get("id"))
    if issue_id is None:
        return Ignored("the delivery names no issue")
    before = _mapping(payload.get("updatedFrom"))
    if "assigned" in config.start_on and agent_id is not None:
        assigned = data.get("assigneeId") == agent_id or data.get("delegateId") == agent_id
        newly = action == "create" or "assigneeId" in before or "delegateId" in before
        if assigned and newly:
            return LinearCall(issue_id, "assigned to golem", actor_id, name)
    if "labelled" in config.start_on:
        added = _labels_added(data, before, action)
        if config.label.casefold() in added:
            return LinearCall(issue_id, f"labelled {config.label}", actor_id, name)
    return Ignored(
        f"the issue was neither newly assigned to golem nor given the label {config.label!r}"
    )


def _labels_added(data: Mapping[str, Any], before: Mapping[str, Any], action: object) -> set[str]:
    """The names (casefolded) of the labels the delivery added to the issue."""
    labels = [_mapping(label) for label in data.get("labels") or [] if isinstance(label, Mapping)]
    if action == "update":
        if "labelIds" not in before:
            return set()
        earlier = {str(one) for one in before.get("labelIds") or []}
        labels = [label for label in labels if str(label.get("id")) not in earlier]
    return {str(label.get("name") or "").casefold() for label in labels}


def _comment(
    data: Mapping[str, Any],
    action: object,
    config: LinearConfig,
    actor_id: str | None,
    name: str,
) -> LinearCall | Ignored:
    if action != "create":
        return Ignored(f"Comment/{action} starts no run (only new comments)")
    if "mentioned" not in config.start_on:
        return Ignored("mentions start no runs (server.linear.start_on)")
    body = str(data.get("body") or "")
    if MARK in body:
        return Ignored("the comment is golem's own")
    if not mentions(body, config.handle):
        return Ignored(f"the comment does not mention {config.handle}")
    issue_id = _id(data.get("issueId")) or _id(_mapping(data.get("issue")).get("id"))
    if issue_id is None or actor_id is None:  # no person: as a bot's on a forge or Slack
        return Ignored("the comment names no issue" if issue_id is None else NO_PERSON)
    return LinearCall(issue_id, f"mentioned {config.handle}", actor_id, name, request=body)


def _session(payload: Mapping[str, Any], action: object) -> LinearCall | Ignored:
    if action != "created":
        return Ignored(f"AgentSessionEvent/{action} starts no run (only created sessions)")
    session = _mapping(payload.get("agentSession"))
    session_id = _id(session.get("id"))
    issue_id = _id(session.get("issueId")) or _id(_mapping(session.get("issue")).get("id"))
    if session_id is None or issue_id is None:
        return Ignored("the agent session names no issue")
    creator = _mapping(session.get("creator"))
    actor_id = _id(session.get("creatorId")) or _id(creator.get("id"))
    name = str(creator.get("name") or "")
    return LinearCall(issue_id, "asked in an agent session", actor_id, name, session_id)
