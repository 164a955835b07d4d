"""What a request from Slack asks of golem, read from the payloads Slack documents: an Events
API callback (``app_mention``; ``message`` in a thread) that mentions golem's app, a slash
command (``/golem``), or a click on a button of a run's status message (``block_actions``).
Each names who asked (their Slack user id), where (the channel, the thread), and its ids,
by which a repeated delivery is known. Every string was cleaned where it entered
(``golem.core.ansi``); ids are checked against Slack's forms here, and a request whose ids
are not ids is ignored, so nothing unchecked reaches the Web API or the store."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from golem.core.slack_config import SLACK_CHANNEL, SLACK_TEAM, SLACK_USER

__all__ = [
    "ACTIONS",
    "Action",
    "Command",
    "Ignored",
    "Mention",
    "read_actions",
    "read_command",
    "read_event",
]

TS = re.compile(r"[0-9]{1,12}\.[0-9]{1,9}")
"""A message's timestamp (its id in its channel): ``1700000000.000100``."""
EVENT_ID = re.compile(r"Ev[A-Z0-9]{4,40}")
TRIGGER_ID = re.compile(r"[0-9A-Za-z.]{4,100}")
RUN_ID = re.compile(r"run-[A-Za-z0-9_-]{1,60}")
ACTIONS: dict[str, Literal["approved", "rejected", "cancel"]] = {
    "golem.approve": "approved",
    "golem.reject": "rejected",
    "golem.cancel": "cancel",
}
"""The buttons of a status message: their ``action_id`` and what each asks."""
MAX_TEXT = 40_000


@dataclass(frozen=True)
class Mention:
    """A message that mentions golem's app: a run, or a follow-up in its thread."""

    team: str
    channel: str
    user: str
    text: str
    ts: str
    thread_ts: str
    """The thread it is in (its own ts when it starts one)."""
    event_id: str

    @property
    def thread(self) -> str:
        """The thread's name in the store: ``team:channel:thread_ts``."""
        return f"{self.team}:{self.channel}:{self.thread_ts}"

    @property
    def ids(self) -> tuple[str, ...]:
        """The delivery's ids: its event's, and the message's (``app_mention`` and
        ``message`` are two events of one message)."""
        return (self.event_id, f"{self.channel}:{self.ts}")


@dataclass(frozen=True)
class Command:
    """``/golem TEXT`` in a channel: a run, reported in a thread golem starts there."""

    team: str
    channel: str
    user: str
    text: str
    trigger_id: str


@dataclass(frozen=True)
class Action:
    """A click on a button of a run's status message."""

    team: str
    channel: str
    user: str
    message_ts: str
    run_id: str
    ask: Literal["approved", "rejected", "cancel"]
    trigger_id: str


@dataclass(frozen=True)
class Ignored:
    """A request that asks nothing of golem, and why."""

    reason: str


def read_event(
    payload: Mapping[str, Any], bot_user: str | None
) -> Mention | Ignored | Mapping[str, Any]:
    """What an Events API callback asks: a mention of ``bot_user`` (golem's app's user
    id), or nothing. ``url_verification`` comes back as the payload, to answer."""
    kind = payload.get("type")
    if kind == "url_verification":
        return payload
    if kind != "event_callback":
        return Ignored(f"{kind!r} requests start no runs (only event_callback)")
    event = _mapping(payload.get("event"))
    etype = event.get("type")
    if etype not in ("app_mention", "message"):
        return Ignored(f"{etype!r} events start no runs (only app_mention, message)")
    if event.get("subtype") or event.get("bot_id") or event.get("bot_profile"):
        return Ignored("a bot's message, or an edit or other subtype: no run")
    return _mention(payload, event, bot_user)


def _mention(
    payload: Mapping[str, Any], event: Mapping[str, Any], bot_user: str | None
) -> Mention | Ignored:
    team = _text(payload.get("team_id"))
    channel, user, ts = (
        _text(event.get("channel")),
        _text(event.get("user")),
        _text(event.get("ts")),
    )
    thread_ts = _text(event.get("thread_ts")) or ts
    event_id = _text(payload.get("event_id"))
    if not _all_ids(team=team, channel=channel, user=user, ts=ts, thread_ts=thread_ts):
        return Ignored("the event's team, channel, user or ts is not one of Slack's ids")
    if not EVENT_ID.fullmatch(event_id):
        return Ignored("the event has no event_id")
    text = _text(event.get("text"))[:MAX_TEXT]
    mentioned = bot_user is not None and f"<@{bot_user}>" in text
    if user == bot_user or (event.get("type") == "message" and not mentioned):
        return Ignored("golem's own message, or one that does not mention golem")
    return Mention(team, channel, user, text, ts, thread_ts, event_id)


def read_command(form: Mapping[str, str], command: str) -> Command | Ignored:
    """What a slash command's form asks: a run for its text."""
    if form.get("command") != command:
        return Ignored(f"the command is not {command}")
    team, channel, user = (
        form.get("team_id", ""),
        form.get("channel_id", ""),
        form.get("user_id", ""),
    )
    trigger = form.get("trigger_id", "")
    if not _all_ids(team=team, channel=channel, user=user) or not TRIGGER_ID.fullmatch(trigger):
        return Ignored("the command's team, channel, user or trigger_id is not one of Slack's")
    return Command(team, channel, user, form.get("text", "")[:MAX_TEXT], trigger)


def read_actions(payload: Mapping[str, Any]) -> list[Action] | Ignored:
    """The clicks a ``block_actions`` payload carries on golem's buttons."""
    if payload.get("type") != "block_actions":
        return Ignored(f"{payload.get('type')!r} interactions are not golem's (only block_actions)")
    team = _text(_mapping(payload.get("team")).get("id"))
    user = _text(_mapping(payload.get("user")).get("id"))
    container = _mapping(payload.get("container"))
    channel = _text(_mapping(payload.get("channel")).get("id")) or _text(
        container.get("channel_id")
    )
    message_ts = _text(container.get("message_ts")) or _text(
        _mapping(payload.get("message")).get("ts")
    )
    trigger = _text(payload.get("trigger_id"))
    if not _all_ids(team=team, channel=channel, user=user, ts=message_ts):
        return Ignored("the interaction's team, channel, user or message is not one of Slack's")
    if not TRIGGER_ID.fullmatch(trigger):
        return Ignored("the interaction has no trigger_id")
    found = []
    for action in _list(payload.get("actions")):
        item = _mapping(action)
        ask = ACTIONS.get(_text(item.get("action_id")))
        run_id = _text(item.get("value"))
        if ask is not None and RUN_ID.fullmatch(run_id):
            found.append(Action(team, channel, user, message_ts, run_id, ask, trigger))
    return found or Ignored("no button of golem's was clicked")


def _all_ids(
    *, team: str, channel: str, user: str, ts: str | None = None, thread_ts: str | None = None
) -> bool:
    stamps = [stamp for stamp in (ts, thread_ts) if stamp is not None]
    return (
        bool(SLACK_TEAM.fullmatch(team))
        and bool(SLACK_CHANNEL.fullmatch(channel))
        and bool(SLACK_USER.fullmatch(user))
        and all(TS.fullmatch(stamp) for stamp in stamps)
    )


def _text(value: object) -> str:
    return value if isinstance(value, str) else ""


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []
