"""Every call of the SQL store is bounded in time, and retried where that is safe.

A call runs as a task of its own: when the database does not answer within the store's
timeout (``database_timeout``) the caller gets ``StoreUnavailable`` at once, and the task
is cancelled and left to end in the background (a driver may take seconds to give up on a
frozen server; nobody waits for that). A call that failed because the database could not be
reached is tried again, within the same deadline, when trying again cannot do a thing twice:
reads, and the writes each repository lists as ``retried`` (each of them idempotent).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, TypeVar

from golem.core.errors import StoreUnavailable

__all__ = ["RETRY_AFTER", "StoreDeadline", "bounded"]

log = logging.getLogger("golem.store")
T = TypeVar("T")
RETRY_AFTER = 5  # seconds a client told the store is away waits before it tries again
FIRST_PAUSE, LAST_PAUSE = 0.1, 1.0  # between tries of a retried call (doubling)


class StoreDeadline:
    """The deadline of a store's calls (shared by a store and its ``for_tenant`` ones)."""

    def __init__(self, timeout: float, where: str) -> None:
        self.timeout = timeout
        self.where = where
        self._abandoned: set[asyncio.Future[Any]] = set()

    async def settle(self) -> None:
        """Wait, at most ``timeout`` seconds, for the calls given up on to end: closing the
        connections under one that still runs can leave it waiting for ever (and a process
        that waits for its tasks at exit with it)."""
        if self._abandoned:
            _, left = await asyncio.wait(self._abandoned, timeout=self.timeout)
            if left:
                log.warning("%d abandoned store calls still run at close", len(left))

    async def call(self, attempt: Callable[[], Awaitable[T]], *, retried: bool, what: str) -> T:
        """``attempt()`` within the deadline (tried again while ``retried`` and time is
        left); StoreUnavailable when the database is away."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout
        pause = FIRST_PAUSE
        while True:
            try:
                return await self._within(attempt(), deadline - loop.time(), what)
            except StoreUnavailable:
                if not retried or loop.time() + pause >= deadline:
                    raise
            await asyncio.sleep(pause)  # a back-off between tries, not a wait for a state
            pause = min(pause * 2, LAST_PAUSE)

    async def _within(self, attempt: Awaitable[T], seconds: float, what: str) -> T:
        task = asyncio.ensure_future(attempt)
        try:
            done, _ = await asyncio.wait({task}, timeout=max(seconds, 0.0))
        except asyncio.CancelledError:
            self._abandon(task)
            raise
        if not done:
            self._abandon(task)
            raise StoreUnavailable(
                f"the database {self.where} did not answer within {self.timeout:g}s "
                f"({what}; database_timeout)",
                retry_after=RETRY_AFTER,
            )
        return task.result()

    def _abandon(self, task: asyncio.Future[Any]) -> None:
        """Cancel a call nobody waits for any more; it ends in the background (``settle``
        waits for it before the store closes)."""
        task.cancel()
        self._abandoned.add(task)
        task.add_done_callback(self._abandoned.discard)
        task.add_done_callback(_forget)


def _forget(task: asyncio.Future[Any]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.debug("an abandoned store call ended: %s", task.exception())


def bounded(*, retried: Iterable[str], once: Iterable[str]) -> Callable[[type[T]], type[T]]:
    """Bound every call of a SQL repository (its ``deadline`` attribute is a StoreDeadline):
    the ``retried`` ones are tried again after the database could not be reached (reads,
    and writes whose second try changes nothing the first one made), the ``once`` ones are
    not (a second try could act twice or answer differently). Each public coroutine of the
    class is in exactly one of them: a new call must say which."""
    again, single = frozenset(retried), frozenset(once)

    def bound_all(cls: type[T]) -> type[T]:
        calls = {
            name
            for name, member in vars(cls).items()
            if inspect.iscoroutinefunction(member) and not name.startswith("_")
        }
        if calls != again | single or again & single:
            raise TypeError(f"{cls.__name__}: each call is either retried or once, not {calls}")
        for name in calls:
            setattr(cls, name, _bound(getattr(cls, name), retried=name in again))
        return cls

    return bound_all


def _bound(method: Callable[..., Awaitable[Any]], *, retried: bool) -> Callable[..., Any]:
    @functools.wraps(method)
    async def call(self: Any, *args: Any, **kwargs: Any) -> Any:
        deadline: StoreDeadline = self.deadline
        return await deadline.call(
            lambda: method(self, *args, **kwargs), retried=retried, what=method.__qualname__
        )

    return call
