"""A loopback Slack Web API for tests: the methods golem calls, with Slack's request and
response shapes (``{"ok": true, ...}``, ``{"ok": false, "error": "..."}``), its bearer token
check, and channels whose messages and threads it keeps. It records every call, so a test
asserts what golem said and where::

    with SlackServer(token="xoxb-test") as slack:
        slack.add_message("C0GENERAL", "the build is red", user="U0ALICE")
        ...  # golem serve with [server.slack] api_url = slack.api_url
        [status] = slack.calls("chat.postMessage")

Methods: ``auth.test``, ``chat.postMessage``, ``chat.update``, ``chat.postEphemeral``,
``reactions.add`` (``already_reacted`` the second time), ``conversations.replies`` (the
thread's root and replies, oldest first, ``limit`` and ``cursor`` pages), ``users.info``
(the people ``add_user`` made, with the flags Slack's user object has: ``deleted``,
``is_bot``, ``is_app_user``, ``is_restricted``, ``is_ultra_restricted``, ``team_id``;
``user_not_found`` for anyone else) and ``usergroups.users.list`` (``add_group``'s
members; ``no_such_subteam``). Arguments are
read from the query, a form body or a JSON body, as the SDK sends each method. ``fail``
makes the next calls of a method answer an error.
"""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from golem.testing.wire import RecordedRequest, Reply, WireServer

__all__ = ["BOT_ID", "BOT_USER", "TEAM_ID", "SlackCall", "SlackServer"]

BOT_USER = "U0GOLEMBOT"
BOT_ID = "B0GOLEMBOT"
TEAM_ID = "T0TEAM"
"""The workspace golem's app is installed in (``auth.test``'s ``team_id``)."""


@dataclass(frozen=True)
class SlackCall:
    """One Web API call golem made: the method and its arguments."""

    method: str
    args: dict[str, Any]
    token: str | None

    @property
    def text(self) -> str:
        """Everything the call said (text and blocks), as one string."""
        return json.dumps({k: self.args.get(k) for k in ("text", "blocks")})


class SlackServer(WireServer):
    """Slack's Web API on 127.0.0.1 and a free port."""

    def __init__(self, token: str) -> None:
        super().__init__()
        self.token = token
        self._state = threading.Lock()
        self._messages: dict[str, list[dict[str, Any]]] = {}
        self._reactions: set[tuple[str, str, str]] = set()
        self._calls: list[SlackCall] = []
        self._failures: dict[str, list[str]] = {}
        self._clock = itertools.count(1)
        self._users: dict[str, dict[str, Any]] = {}
        self._groups: dict[str, list[str]] = {}
        self.otherwise(self.route)

    @property
    def api_url(self) -> str:
        """What golem's ``[server.slack] api_url`` is."""
        return f"{self.url}/api/"

    def next_ts(self) -> str:
        """A new message timestamp, later than every one before."""
        return f"1700000000.{next(self._clock):06d}"

    def add_message(
        self, channel: str, text: str, *, user: str, thread_ts: str | None = None, **extra: Any
    ) -> str:
        """A message someone wrote (in a thread, with ``thread_ts``); its ts."""
        ts = self.next_ts()
        message = {"type": "message", "user": user, "text": text, "ts": ts, **extra}
        if thread_ts is not None:
            message["thread_ts"] = thread_ts
        with self._state:
            self._messages.setdefault(channel, []).append(message)
        return ts

    def add_user(self, user: str, *, team: str = TEAM_ID, **flags: Any) -> None:
        """A person (or bot) ``users.info`` knows: a full member of ``team`` unless
        ``flags`` say otherwise (``is_restricted=True``: a guest, ``deleted=True``...)."""
        record: dict[str, Any] = {
            "id": user, "team_id": team, "name": user.lower(), "real_name": user,
            "deleted": False, "is_bot": False, "is_app_user": False, "is_admin": False,
            "is_restricted": False, "is_ultra_restricted": False, **flags,
        }  # fmt: skip
        with self._state:
            self._users[user] = record

    def add_group(self, group: str, members: list[str]) -> None:
        """A user group (``S…``) and its members."""
        with self._state:
            self._groups[group] = list(members)

    def fail(self, method: str, *errors: str) -> None:
        """Answer the next calls of ``method`` with these errors, one each."""
        with self._state:
            self._failures.setdefault(method, []).extend(errors)

    def calls(self, method: str | None = None) -> list[SlackCall]:
        """The calls made (of ``method``), oldest first."""
        with self._state:
            return [c for c in self._calls if method is None or c.method == method]

    def message(self, channel: str, ts: str) -> dict[str, Any]:
        """A message as it is now (edits applied)."""
        with self._state:
            return dict(next(m for m in self._messages[channel] if m["ts"] == ts))

    def thread(self, channel: str, ts: str) -> list[dict[str, Any]]:
        """A thread's messages, root first."""
        with self._state:
            return [
                dict(m)
                for m in self._messages.get(channel, [])
                if m["ts"] == ts or m.get("thread_ts") == ts
            ]

    def route(self, request: RecordedRequest) -> Reply:
        """Answer one Web API call."""
        method = urlsplit(request.path).path.removeprefix("/api/")
        args = _arguments(request)
        given = request.headers.get("authorization", "")
        token = given.removeprefix("Bearer ") if given.startswith("Bearer ") else None
        with self._state:
            self._calls.append(SlackCall(method, args, token))
            failures = self._failures.get(method)
            failed = failures.pop(0) if failures else None
        if token != self.token:
            return _error("invalid_auth")
        if failed is not None:
            return _error(failed)
        handler: Callable[[dict[str, Any]], Reply] | None = getattr(
            self, "_" + method.replace(".", "_").lower(), None
        )
        return handler(args) if handler is not None else _error("unknown_method")

    def _auth_test(self, args: dict[str, Any]) -> Reply:
        return _ok(user_id=BOT_USER, bot_id=BOT_ID, team_id=TEAM_ID, user="golem")

    def _users_info(self, args: dict[str, Any]) -> Reply:
        with self._state:
            found = self._users.get(str(args.get("user")))
        return _ok(user=dict(found)) if found is not None else _error("user_not_found")

    def _usergroups_users_list(self, args: dict[str, Any]) -> Reply:
        with self._state:
            members = self._groups.get(str(args.get("usergroup")))
        return _ok(users=list(members)) if members is not None else _error("no_such_subteam")

    def _chat_postmessage(self, args: dict[str, Any]) -> Reply:
        channel = str(args.get("channel"))
        ts = self.next_ts()
        message = {
            "type": "message",
            "user": BOT_USER,
            "bot_id": BOT_ID,
            "ts": ts,
            "text": args.get("text", ""),
            "blocks": args.get("blocks") or [],
        }
        if args.get("thread_ts"):
            message["thread_ts"] = str(args["thread_ts"])
        with self._state:
            self._messages.setdefault(channel, []).append(message)
        return _ok(channel=channel, ts=ts, message=message)

    def _chat_update(self, args: dict[str, Any]) -> Reply:
        channel, ts = str(args.get("channel")), str(args.get("ts"))
        with self._state:
            found = [m for m in self._messages.get(channel, []) if m["ts"] == ts]
            if not found:
                return _error("message_not_found")
            found[0].update(text=args.get("text", ""), blocks=args.get("blocks") or [])
        return _ok(channel=channel, ts=ts, text=args.get("text", ""))

    def _chat_postephemeral(self, args: dict[str, Any]) -> Reply:
        return _ok(message_ts=self.next_ts())

    def _reactions_add(self, args: dict[str, Any]) -> Reply:
        key = (str(args.get("channel")), str(args.get("timestamp")), str(args.get("name")))
        with self._state:
            if key in self._reactions:
                return _error("already_reacted")
            self._reactions.add(key)
        return _ok()

    def _conversations_replies(self, args: dict[str, Any]) -> Reply:
        channel, ts = str(args.get("channel")), str(args.get("ts"))
        limit = int(args.get("limit") or 100)
        start = int(args.get("cursor") or 0)
        thread = self.thread(channel, ts)
        if not thread:
            return _error("thread_not_found")
        page = thread[start : start + limit]
        more = start + limit < len(thread)
        meta = {"next_cursor": str(start + limit) if more else ""}
        return _ok(messages=page, has_more=more, response_metadata=meta)


def _arguments(request: RecordedRequest) -> dict[str, Any]:
    args: dict[str, Any] = dict(parse_qsl(urlsplit(request.path).query))
    kind = request.headers.get("content-type", "")
    if request.body and "json" in kind:
        args.update(json.loads(request.body))
    elif request.body:
        args.update(parse_qsl(request.body.decode()))
    if isinstance(args.get("blocks"), str):
        args["blocks"] = json.loads(args["blocks"])
    return args


def _ok(**fields: Any) -> Reply:
    return Reply.json({"ok": True, **fields})


def _error(error: str) -> Reply:
    return Reply.json({"ok": False, "error": error})
