"""Slack's Web API as golem calls it: the official SDK's ``AsyncWebClient`` pointed at
``[server.slack] api_url``, with the app's bot token. Every message golem sends passes
through ``_masked`` here, the one way out to Slack: each string of its text and blocks is
masked with every secret the server knows (the bot token, the signing secret, forge
tokens, model keys, brokered credentials) and the tenant's. What Slack answers is cleaned
(``golem.core.ansi``) where it enters. The SDK's errors become ``SlackError``."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError, SlackClientError
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient
from slack_sdk.web.async_slack_response import AsyncSlackResponse

from golem.core.ansi import clean_json
from golem.core.errors import SlackError
from golem.core.masking import SecretMasker, mask_fields
from golem.core.slack_config import SlackConfig

__all__ = ["SlackWeb"]

log = logging.getLogger("golem.service.slack")
TIMEOUT = 8  # seconds a call may take: Slack waits 3 s for our answer, then retries
PAGE = 200  # messages per conversations.replies page


class SlackWeb:
    """The Web API methods golem calls, with the app's bot token."""

    def __init__(self, config: SlackConfig, token: str, secrets: Sequence[str]) -> None:
        self.client = AsyncWebClient(
            token=token,
            base_url=config.api_url,
            timeout=TIMEOUT,
            retry_handlers=[
                AsyncConnectionErrorRetryHandler(max_retry_count=1),
                AsyncRateLimitErrorRetryHandler(max_retry_count=1),
            ],
        )
        self.secrets = [token, *secrets]
        self._installed: dict[str, Any] | None = None

    async def _auth(self) -> dict[str, Any]:
        """``auth.test``'s answer, asked once."""
        if self._installed is None:
            answer = await self._call("auth.test", self.client.auth_test)
            user = answer.get("user_id")
            if not isinstance(user, str) or not user:
                raise SlackError("auth.test named no user: is the token a bot token (xoxb-)?")
            self._installed = answer
        return self._installed

    async def bot_user(self) -> str:
        """The user id of golem's app (``auth.test``), asked once."""
        return str((await self._auth())["user_id"])

    async def installation(self) -> tuple[str | None, str | None]:
        """The workspace (``T…``) and, on an Enterprise Grid, the organisation (``E…``)
        golem's app is installed in (``auth.test``)."""
        answer = await self._auth()
        team, enterprise = answer.get("team_id"), answer.get("enterprise_id")
        return (
            team if isinstance(team, str) and team else None,
            enterprise if isinstance(enterprise, str) and enterprise else None,
        )

    async def user(self, user: str) -> dict[str, Any]:
        """A user's record (``users.info``: SlackError ``user_not_found`` for no one)."""
        answer = await self._call("users.info", lambda: self.client.users_info(user=user))
        found = answer.get("user")
        if not isinstance(found, dict):
            raise SlackError("users.info answered without the user", error="no_user")
        return found

    async def group_members(self, group: str) -> frozenset[str]:
        """The user ids of a user group's members (``usergroups.users.list``)."""
        answer = await self._call(
            "usergroups.users.list", lambda: self.client.usergroups_users_list(usergroup=group)
        )
        found = answer.get("users")
        return (
            frozenset(u for u in found if isinstance(u, str))
            if isinstance(found, list)
            else frozenset()
        )

    async def react(self, channel: str, ts: str, name: str) -> None:
        """React to a message with the emoji ``name`` (once: a second is no error)."""
        try:
            await self._call(
                "reactions.add",
                lambda: self.client.reactions_add(channel=channel, timestamp=ts, name=name),
            )
        except SlackError as exc:
            if exc.error != "already_reacted":
                raise

    async def post(
        self,
        channel: str,
        text: str,
        *,
        thread_ts: str | None = None,
        blocks: list[dict[str, Any]] | None = None,
        secrets: Sequence[str] = (),
    ) -> str:
        """Post a message (in a thread, with ``thread_ts``); its ts."""
        message = self._masked({"text": text, "blocks": blocks}, secrets)
        answer = await self._call(
            "chat.postMessage",
            lambda: self.client.chat_postMessage(
                channel=channel,
                thread_ts=thread_ts,
                unfurl_links=False,
                unfurl_media=False,
                **message,
            ),
        )
        ts = answer.get("ts")
        if not isinstance(ts, str):
            raise SlackError("chat.postMessage answered without the message's ts")
        return ts

    async def update(
        self,
        channel: str,
        ts: str,
        text: str,
        *,
        blocks: list[dict[str, Any]] | None = None,
        secrets: Sequence[str] = (),
    ) -> None:
        """Edit a message golem posted."""
        message = self._masked({"text": text, "blocks": blocks or []}, secrets)
        await self._call(
            "chat.update", lambda: self.client.chat_update(channel=channel, ts=ts, **message)
        )

    async def ephemeral(
        self,
        channel: str,
        user: str,
        text: str,
        *,
        thread_ts: str | None = None,
        secrets: Sequence[str] = (),
    ) -> None:
        """Tell ``user`` alone something, in ``channel`` (or its thread)."""
        message = self._masked({"text": text}, secrets)
        await self._call(
            "chat.postEphemeral",
            lambda: self.client.chat_postEphemeral(
                channel=channel, user=user, thread_ts=thread_ts, **message
            ),
        )

    async def replies(self, channel: str, ts: str, limit: int) -> list[dict[str, Any]]:
        """The messages of the thread ``ts`` starts, oldest first, at most ``limit``."""
        messages: list[dict[str, Any]] = []
        cursor: str | None = None
        while len(messages) < limit:
            page = functools.partial(
                self.client.conversations_replies,
                channel=channel,
                ts=ts,
                limit=min(PAGE, limit - len(messages)),
                cursor=cursor,
            )
            answer = await self._call("conversations.replies", page)
            found = answer.get("messages")
            messages += [m for m in found if isinstance(m, dict)] if isinstance(found, list) else []
            meta = answer.get("response_metadata")
            cursor = meta.get("next_cursor") if isinstance(meta, dict) else None
            if not cursor or not answer.get("has_more"):
                break
        return messages[:limit]

    def _masked(self, message: dict[str, Any], secrets: Sequence[str]) -> dict[str, Any]:
        masker = SecretMasker([*self.secrets, *secrets])
        kept = {key: value for key, value in message.items() if value is not None}
        return mask_fields(kept, masker.mask_text)

    async def _call(
        self, method: str, call: Callable[[], Awaitable[AsyncSlackResponse]]
    ) -> dict[str, Any]:
        try:
            answer = await call()
        except SlackApiError as exc:
            error = exc.response.get("error") if isinstance(exc.response.data, dict) else None
            code = str(error or exc.response.status_code)
            raise SlackError(f"Slack refused {method}: {code}", error=code) from None
        except (SlackClientError, aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise SlackError(
                f"Slack's Web API could not be reached for {method} ({type(exc).__name__}): "
                "check [server.slack] api_url and the network"
            ) from None
        data = answer.data
        return clean_json(dict(data)) if isinstance(data, dict) else {}
