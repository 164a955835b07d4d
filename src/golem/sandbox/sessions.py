"""What every engine (this machine's, a server's, a Ray cluster's) does alike with the
sessions it makes, written once: ``async with engine.session(spec) as box`` on top of the
engine's own ``create_session`` and ``remove_session``, and ``async with engine`` closing
it. One-shot calls (``execute``, ``stream``) stay each engine's: a local one is a session
and a call, a server's one request, a cluster's a leased slot on a node."""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator
from typing import Generic, Self, TypeVar

from golem.core.events import EventSink, ExecEvent
from golem.sandbox.contracts import Box, SpecLike

__all__ = ["BoxSessions"]

B = TypeVar("B", bound=Box)


class BoxSessions(ABC, Generic[B]):
    """An engine's sessions of boxes ``B``: opened and always ended by ``session``."""

    @abstractmethod
    async def create_session(
        self, spec: SpecLike = None, *, on_event: EventSink[ExecEvent] | None = None
    ) -> B:
        """A box that stays until ``remove_session``; ``on_event`` gets its setup's events."""

    @abstractmethod
    async def remove_session(self, box_id: str) -> None:
        """End a session."""

    @abstractmethod
    async def close(self) -> None:
        """End what the engine holds."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *_exc: object) -> None:
        await self.close()

    @contextlib.asynccontextmanager
    async def session(
        self, spec: SpecLike = None, *, on_event: EventSink[ExecEvent] | None = None
    ) -> AsyncIterator[B]:
        """``async with engine.session(spec) as box:`` one box for many calls, ended when
        the block ends, however it ends."""
        box = await self.create_session(spec, on_event=on_event)
        try:
            yield box
        finally:
            await self.remove_session(box.id)
