"""The CLI's way to golem's store: open it, do one thing, close it, in one asyncio.run."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from golem.core.config import GolemConfig
from golem.store import SqlStore, Store

__all__ = ["using_store"]

T = TypeVar("T")


def using_store(
    config: GolemConfig, work: Callable[[Store], Awaitable[T]], *, tenant: str | None = "default"
) -> T:
    """``work(store)``'s result, on the store the configuration names (``tenant``'s)."""

    async def main() -> T:
        store = await SqlStore.open(config, tenant=tenant)
        try:
            return await work(store)
        finally:
            await store.close()

    return asyncio.run(main())
