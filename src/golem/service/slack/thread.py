"""A Slack thread as a run's task: what was asked (the message that mentions golem, its
mention and ``repo:`` taken out) and the thread it was asked in (its messages, the links in
them, the snippets attached to them), as plain text, oldest first, the newest kept when
the thread is longer than the run may read. Who wrote it counts too: a message by anyone
``[server.slack] users`` does not name (a guest, another workspace's member, a bot) makes
the run an outsider's (``server.trust.outsiders``), and so does one by a person it names
whose Slack record would refuse them (``SlackPeople.outsider``, asked by the trigger).

Everything here came from Slack: cleaned of control characters where it entered, and
masked with the secrets the server knows before it becomes a task."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from golem.service.slack import mrkdwn

__all__ = ["ASKED", "Ask", "ThreadText", "read_ask", "render_thread"]

REPO = re.compile(r"(?:^|(?<=\s))repo:\s*(?P<name>[^\s`*_~]+)", re.IGNORECASE)
MENTION = re.compile(r"<@[UW][A-Z0-9]{2,20}(?:\|[^>]*)?>")
SNIPPET_CHARS = 4000  # of one snippet's preview
ASKED = "A request from Slack"


@dataclass(frozen=True)
class Ask:
    """What a message asks of golem: its words (mentions out) and the repository it names."""

    text: str
    repo: str | None


@dataclass(frozen=True)
class ThreadText:
    """A thread as a run reads it."""

    text: str
    outsiders: tuple[str, ...]
    """Who wrote in it without being one of golem's users (their ids; ``bot`` for a bot)."""
    authors: tuple[str, ...]
    """golem's users who wrote in it (their records may still make them outsiders)."""
    dropped: int
    """Messages left out (the oldest) to keep within the run's share."""


def read_ask(text: str, bot_user: str | None) -> Ask:
    """What a message says to golem: without the mention of golem's app (``bot_user``)
    and with its ``repo: NAME``, if any, taken out."""
    if bot_user is not None:
        text = text.replace(f"<@{bot_user}>", " ")
    found = REPO.search(text)
    repo = found["name"] if found is not None else None
    if found is not None:
        text = text[: found.start()] + text[found.end() :]
    return Ask(" ".join(mrkdwn.read(text).split()), repo)


def render_thread(
    messages: Iterable[Mapping[str, Any]],
    *,
    bot_user: str | None,
    users: Mapping[str, object],
    limit: int,
    mask: Callable[[str], str],
) -> ThreadText:
    """The thread's messages (golem's own left out) as plain text, masked, the newest
    that fit in ``limit`` characters."""
    rendered: list[str] = []
    outsiders: list[str] = []
    authors: list[str] = []
    for message in messages:
        author = _author(message)
        if author == bot_user:
            continue
        (authors if author in users else outsiders).append(author)
        rendered.append(mask(_message(author, message)))
    kept: list[str] = []
    size = 0
    for part in reversed(rendered):
        size += len(part) + 2
        if size > limit and kept:
            break
        kept.append(part[-limit:])
    dropped = len(rendered) - len(kept)
    head = f"({dropped} earlier messages left out)\n\n" if dropped else ""
    text = head + "\n\n".join(reversed(kept))
    return ThreadText(text, tuple(dict.fromkeys(outsiders)), tuple(dict.fromkeys(authors)), dropped)


def _author(message: Mapping[str, Any]) -> str:
    if message.get("bot_id") or message.get("subtype") == "bot_message":
        return str(message.get("user") or "bot")
    return str(message.get("user") or "unknown")


def _message(author: str, message: Mapping[str, Any]) -> str:
    raw = str(message.get("text") or "")
    lines = [f"{author} wrote:", mrkdwn.read(raw).strip() or "(no text)"]
    addresses = mrkdwn.links(raw)
    for attachment in _dicts(message.get("attachments")):
        link = attachment.get("from_url") or attachment.get("title_link")
        if isinstance(link, str) and link not in addresses:
            addresses.append(link)
        said = " ".join(str(attachment.get(k) or "") for k in ("title", "text")).strip()
        if said:
            lines.append(f"(attached: {mrkdwn.read(said)})")
    lines += [f"(link: {address})" for address in addresses]
    for file in _dicts(message.get("files")):
        name = str(file.get("title") or file.get("name") or "a file")
        preview = file.get("preview") or file.get("plain_text")
        if isinstance(preview, str) and preview.strip():
            more = " (it goes on)" if file.get("lines_more") else ""
            lines.append(f"(snippet {name}{more}):\n{preview[:SNIPPET_CHARS].rstrip()}")
        else:
            lines.append(f"(file {name}, not read)")
    return "\n".join(lines)


def _dicts(value: object) -> list[Mapping[str, Any]]:
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []
