"""PostgreSQL's LISTEN side of change notification: one connection per process that
hands the changes other processes announce (``NOTIFY``) to this process's hub."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import psycopg
from sqlalchemy.engine import make_url

from golem.store.notify import CHANNEL, RECHECK, Hub

__all__ = ["PostgresListener", "libpq_url"]

log = logging.getLogger("golem.store.listener")
RECONNECT = 5.0  # seconds between tries to remake a lost listening connection


def libpq_url(url: str) -> str:
    """A SQLAlchemy PostgreSQL URL as libpq takes it."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


class PostgresListener:
    """Listens on ``CHANNEL`` and notifies ``hub`` of each key it hears."""

    def __init__(self, url: str, hub: Hub) -> None:
        self._conninfo = libpq_url(url)
        self._hub = hub
        self._task: asyncio.Task[None] | None = None
        self.listening = asyncio.Event()

    async def start(self) -> None:
        """Listen from now on (returns once the first connection listens)."""
        connection = await self._connect()
        self._task = asyncio.ensure_future(self._listen(connection))

    async def close(self) -> None:
        """Stop listening."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _connect(self) -> psycopg.AsyncConnection[tuple[object, ...]]:
        connection = await psycopg.AsyncConnection.connect(self._conninfo, autocommit=True)
        await connection.execute(f"LISTEN {CHANNEL}")
        self.listening.set()
        return connection

    async def _listen(self, connection: psycopg.AsyncConnection[tuple[object, ...]]) -> None:
        while True:
            try:
                async with connection:
                    async for notification in connection.notifies():
                        self._hub.notify(notification.payload)
            except psycopg.Error as exc:
                log.warning("lost the change listener's connection (%s); waiters re-read", exc)
            self.listening.clear()
            self._hub.notify_all()  # what came meanwhile is lost: everyone reads again
            connection = await self._reconnect()

    async def _reconnect(self) -> psycopg.AsyncConnection[tuple[object, ...]]:
        while True:
            try:
                connection = await self._connect()
            except psycopg.Error as exc:
                log.warning(
                    "cannot listen for changes (%s); waiters re-read every %ss", exc, RECHECK
                )
                await asyncio.sleep(RECONNECT)
                continue
            self._hub.notify_all()
            return connection
