"""``/healthz``: whether the server answers, and whether its store does.

The route needs no key, so a flood of it must not become a flood of the database: one ping
is in flight at a time for every caller, and a store that answered is taken to be well for
``FRESH`` seconds (one that did not is pinged again by the next caller, so its return is
seen at once)."""

from __future__ import annotations

import asyncio
import time
from typing import Literal

from pydantic import BaseModel

from golem import __version__
from golem.core.errors import GolemError
from golem.store import Store

__all__ = ["Health", "StoreProbe"]

TIMEOUT = 2.0  # seconds a ping may take before the store counts as away
FRESH = 1.0  # seconds a ping's answer is reused


class Health(BaseModel):
    """The server answers; ``degraded`` (still 200) when its store does not, with why."""

    status: Literal["ok", "degraded"]
    server: str
    version: str
    reason: str | None = None


class StoreProbe:
    """The store's health: one ping in flight whoever asks, an answer of well reused."""

    def __init__(self, store: Store, server: str) -> None:
        self._store = store
        self._server = server
        self._ping: asyncio.Task[str | None] | None = None
        self._checked = float("-inf")

    async def health(self) -> Health:
        """The server's health now (a ping in flight or a fresh one's answer reused)."""
        if self._ping is None or (self._ping.done() and not self._fresh()):
            self._ping = asyncio.ensure_future(self._reason())
        reason = await asyncio.shield(self._ping)  # a caller that leaves leaves it to others
        status: Literal["ok", "degraded"] = "ok" if reason is None else "degraded"
        return Health(status=status, server=self._server, version=__version__, reason=reason)

    def _fresh(self) -> bool:
        assert self._ping is not None
        well = not self._ping.cancelled() and self._ping.result() is None
        return well and time.monotonic() - self._checked <= FRESH

    async def _reason(self) -> str | None:
        """Why the store is not well (None: it answered)."""
        try:
            async with asyncio.timeout(TIMEOUT):
                await self._store.ping()
        except GolemError as exc:
            return exc.message
        except TimeoutError:
            return "the store did not answer"
        finally:
            self._checked = time.monotonic()
        return None
