"""Automations' schedules, fired by the server's scheduler with its clock driven by the test
(no waiting for a minute to pass), on real stores: a SQLite file and PostgreSQL, each shared
by two "servers" (a scheduler and a run queue apiece, on their own connections). Each slot
fires exactly once between them; a server that starts after slots passed fires the latest
once and records the others as missed; a slot while the last run is still in progress is
skipped and recorded; a firing a dead server left half done is finished once."""

from __future__ import annotations

import asyncio
import time
from datetime import datetime
from pathlib import Path

import pytest

from golem.core.automation_config import AutomationConfig
from golem.core.config import GolemConfig
from golem.sandbox import LocalEngine
from golem.service.automations import Automation, Firings, Scheduler
from golem.service.automations.model import Firing
from golem.service.health import StoreProbe
from golem.service.keys import KeyStore
from golem.service.queue import RunQueue
from golem.service.sessions import SessionRegistry
from golem.service.state import ServerState
from golem.store import Store
from tests.store.conftest import Database, sql

__all__ = ["sql"]  # a fixture

DAILY = AutomationConfig(
    name="nightly", cron="0 3 * * *", timezone="Europe/Berlin", repo="https://example.invalid/r.git",
    task="Nightly chores of {date} ({automation}, {time})", tenant="acme",
)  # fmt: skip
DAY = 86400.0


def at(text: str) -> float:
    """An ISO time (with its zone) as epoch seconds."""
    return datetime.fromisoformat(text).timestamp()


class Server:
    """One server's scheduler and queue on a store (its workers never started: the runs
    its automations start stay queued)."""

    def __init__(self, store: Store, config: GolemConfig, now: list[float]) -> None:
        engine = LocalEngine(config)
        self.state = ServerState(
            config=config, engine=engine, store=store, keys=KeyStore(store),
            sessions=SessionRegistry(config, engine), queue=RunQueue(config, engine, store, "t"),
            health=StoreProbe(store, "t"),
        )  # fmt: skip
        self.firings = Firings(self.state)
        self.scheduler = Scheduler(self.firings, clock=lambda: now[0])


@pytest.fixture
async def servers(sql: Database, tmp_path: Path) -> tuple[Server, Server, list[float]]:
    config = GolemConfig(state_dir=tmp_path / "state", automations=[DAILY])
    now = [at("2030-03-30T12:00:00+01:00")]
    first = Server(await sql.open(None), config, now)
    second = Server(await sql.open(None), config, now)
    await first.scheduler.sync(config.automations)
    await second.scheduler.sync(config.automations)
    return first, second, now


async def kept(server: Server) -> Automation:
    found = await server.firings.shelf.load("nightly")
    assert found is not None
    return found.model


async def runs(server: Server) -> list[str]:
    return [record.id for record in await server.state.store.runs.newest(100)]


async def test_each_slot_fires_exactly_once_between_two_servers(
    servers: tuple[Server, Server, list[float]],
) -> None:
    first, second, now = servers
    assert await first.scheduler.tick(now[0]) == at("2030-03-31T03:00:00+02:00")  # DST began
    assert await runs(first) == []  # no slot passed since the store had it
    now[0] = at("2030-03-31T03:00:30+02:00")
    await asyncio.gather(first.scheduler.tick(now[0]), second.scheduler.tick(now[0]))
    await asyncio.gather(first.scheduler.tick(now[0]), second.scheduler.tick(now[0]))
    started = await runs(first)
    assert len(started) == 1
    automation = await kept(second)
    assert [fired.run_id for fired in automation.fired] == started
    assert automation.fired[0].key == "2030-03-31T01:00Z"
    assert automation.last_slot == at("2030-03-31T03:00:00+02:00")
    run = await first.state.store.runs.load(started[0])
    assert run is not None
    assert "Nightly chores of 2030-03-31 (nightly, 2030-03-31T01:00:00Z)" in run.document


async def test_a_server_starting_after_missed_slots_fires_the_latest_once(
    servers: tuple[Server, Server, list[float]],
) -> None:
    first, second, now = servers
    now[0] += 5 * DAY  # five 03:00 slots passed while no server ran
    await first.scheduler.tick(now[0])
    await second.scheduler.tick(now[0] + 60)
    assert len(await runs(first)) == 1
    automation = await kept(first)
    assert automation.fired[0].key == "2030-04-04T01:00Z"  # the latest of them
    [missed] = automation.skipped
    assert missed.why.startswith("4 earlier slot(s) since")
    assert "only the latest runs, once" in missed.why


async def test_a_slot_while_the_last_run_is_in_progress_is_skipped_and_recorded(
    servers: tuple[Server, Server, list[float]],
) -> None:
    first, _, now = servers
    now[0] += DAY
    await first.scheduler.tick(now[0])
    [running] = await runs(first)  # still queued: nobody runs it
    now[0] += DAY
    await first.scheduler.tick(now[0])
    assert await runs(first) == [running]
    automation = await kept(first)
    [skipped] = automation.skipped
    assert skipped.why == (f"its run {running} is still in progress (queued): runs never overlap")
    assert automation.last_slot == at("2030-04-01T03:00:00+02:00")  # that slot is spent
    await first.state.store.for_tenant("acme").queue.cancel_queued(running, "{}")
    now[0] += DAY
    await first.scheduler.tick(now[0])
    assert len(await runs(first)) == 2  # the next slot, the last run over, fires


async def test_a_firing_a_dead_server_left_half_done_is_finished_once(
    servers: tuple[Server, Server, list[float]],
) -> None:
    first, second, now = servers
    left = Firing(key="2030-03-31T01:00Z", at=time.time() - 600, fields={
        "automation": "nightly", "date": "2030-03-31", "time": "2030-03-31T01:00:00Z",
    }, how="schedule")  # fmt: skip

    def half_done(automation: Automation) -> Automation:
        automation.firing = left
        automation.last_slot = at("2030-03-31T03:00:00+02:00")
        return automation

    await first.firings.shelf.change("nightly", half_done)
    await asyncio.gather(first.scheduler.tick(now[0]), second.scheduler.tick(now[0]))
    started = await runs(first)
    assert len(started) == 1
    automation = await kept(first)
    assert automation.firing is None
    assert [(f.key, f.run_id) for f in automation.fired] == [(left.key, started[0])]
