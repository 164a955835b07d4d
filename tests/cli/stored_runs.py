"""Runs put in, and read from, the store of a `golem` process's state directory."""

from __future__ import annotations

import asyncio
from pathlib import Path

from golem.blueprint import RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.blueprint.events import RunEvent
from golem.store import SqlStore


def store_url(env: dict[str, str]) -> str:
    """The URL of the store in ``env``'s state directory."""
    return f"sqlite:///{Path(env['GOLEM_STATE_DIR']) / 'golem.db'}"


def keep(env: dict[str, str], state: RunState) -> None:
    """Put ``state`` in the store of ``golem``'s state directory."""

    async def create() -> None:
        Path(env["GOLEM_STATE_DIR"]).mkdir(parents=True, exist_ok=True)
        store = await SqlStore.connect(store_url(env))
        try:
            await RunBook(store).create(state)
        finally:
            await store.close()

    asyncio.run(create())


def kept(env: dict[str, str], run_id: str) -> tuple[RunState, list[RunEvent]]:
    """The run as the store has it now, and its events."""

    async def read() -> tuple[RunState, list[RunEvent]]:
        store = await SqlStore.connect(store_url(env))
        try:
            book = RunBook(store)
            state = await book.load(run_id)
            assert state is not None
            return state, [event for _, event in await book.events(run_id)]
        finally:
            await store.close()

    return asyncio.run(read())


def new_run(run_id: str, **fields: object) -> RunState:
    """A queued run of the minion blueprint with ``fields`` set."""
    request = RunRequest(repo="/srv/repo", task="fix it")
    base: dict[str, object] = {
        "id": run_id,
        "request": request,
        "blueprint": "minion",
        "blueprint_source": "",
    }
    return RunState.model_validate(base | fields)
