"""A run's status message in its Slack thread, and the reply at its end: Slack's side of
``golem.service.sources.StatusKeeper`` (its ``Reporter``)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from golem.service.slack import messages
from golem.service.sources import RunProgress
from golem.store import ThreadRecord

if TYPE_CHECKING:
    from golem.service.slack.web import SlackWeb

__all__ = ["SOURCE", "SlackReporter", "place"]

THREAD_LOOKUP = 1000  # messages of a thread looked through for a run's status message
SOURCE = "slack"
"""Slack's name in the store (its deliveries, its threads) and in ``server.trust.sources``."""


def place(thread: ThreadRecord) -> tuple[str, str]:
    """The channel and thread ts of a thread's name (``team:channel:ts``)."""
    _, channel, thread_ts = thread.thread.split(":", 2)
    return channel, thread_ts


class SlackReporter:
    """Posts, edits and replies in a run's thread, each message masked with the secrets
    of the run's tenant."""

    source = SOURCE

    def __init__(
        self,
        web: Callable[[], SlackWeb],
        secrets: Callable[[str | None], Awaitable[list[str]]],
    ) -> None:
        self._web = web
        self._secrets = secrets

    async def post_status(self, thread: ThreadRecord, progress: RunProgress) -> str:
        """Post the run's status message in its thread."""
        channel, thread_ts = place(thread)
        return await self._web().post(
            channel,
            messages.status_text(progress),
            thread_ts=thread_ts,
            blocks=messages.status_blocks(progress),
            secrets=await self._secrets(thread.tenant),
        )

    async def update_status(self, thread: ThreadRecord, status: str, progress: RunProgress) -> None:
        """Show ``progress`` in the run's status message."""
        channel, _ = place(thread)
        await self._web().update(
            channel,
            status,
            messages.status_text(progress),
            blocks=messages.status_blocks(progress),
            secrets=await self._secrets(thread.tenant),
        )

    async def report_end(self, thread: ThreadRecord, progress: RunProgress) -> None:
        """Reply in the thread how the run ended, naming who asked."""
        channel, thread_ts = place(thread)
        await self._web().post(
            channel,
            messages.ended(progress, _requester(thread)),
            thread_ts=thread_ts,
            secrets=await self._secrets(thread.tenant),
        )

    async def find_status(self, thread: ThreadRecord) -> str | None:
        """golem's status message of the run in its thread, if one was posted."""
        channel, thread_ts = place(thread)
        web = self._web()
        own, prefix = await web.bot_user(), messages.status_text_prefix(thread.run_id)
        for message in await web.replies(channel, thread_ts, THREAD_LOOKUP):
            text = message.get("text")
            if message.get("user") == own and isinstance(text, str) and text.startswith(prefix):
                return str(message.get("ts"))
        return None


def _requester(thread: ThreadRecord) -> str | None:
    try:
        user = json.loads(thread.detail or "{}").get("user")
    except (ValueError, AttributeError):
        return None
    return user if isinstance(user, str) and user.isalnum() and user.isascii() else None
