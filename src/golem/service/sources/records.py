"""What a chat or tracker workspace said of its people (a Slack user's record, a group's
members, a Linear user), kept for ``[server.<source>.people] record_ttl`` seconds and at
most ``records`` of them: every request of a busy thread need not ask again, and a record
that changed (a person deactivated, made a guest) is read again once its time is up."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Generic, TypeVar

__all__ = ["RecordCache"]

V = TypeVar("V")


class RecordCache(Generic[V]):
    """Records by key, each kept ``ttl`` seconds, the least recently used dropped past
    ``size``. Only what was read is kept: a failed read is asked again next time."""

    def __init__(self, ttl: float, size: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl
        self.size = size
        self._clock = clock
        self._kept: OrderedDict[str, tuple[float, V]] = OrderedDict()

    async def get(self, key: str, read: Callable[[], Awaitable[V]]) -> V:
        """The record of ``key``: kept, or read now (and kept)."""
        now = self._clock()
        kept = self._kept.get(key)
        if kept is not None and kept[0] > now:
            self._kept.move_to_end(key)
            return kept[1]
        value = await read()
        self._kept[key] = (self._clock() + self.ttl, value)
        self._kept.move_to_end(key)
        while len(self._kept) > self.size:
            self._kept.popitem(last=False)
        return value

    def __len__(self) -> int:
        return len(self._kept)
