"""The SQL store shared by several processes and connections at once, on SQLite and
PostgreSQL: opening a new database together, numbering events and pull requests together,
and migrating a database an older golem made."""

from __future__ import annotations

import asyncio
import multiprocessing
import subprocess
import sys
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, insert, select, text

from golem.core import load_config
from golem.core.errors import ConfigError, StoreError
from golem.store import SqlStore, database_url
from golem.store.database import alembic_config, head_revision
from golem.store.schema import runs
from tests.store.conftest import Database, run

OPENERS = 4


def _open_when_released(url: str, barrier: Barrier) -> None:
    barrier.wait(60)

    async def open_and_close() -> None:
        await (await SqlStore.connect(url)).close()

    asyncio.run(open_and_close())


def test_processes_opening_a_new_database_at_once_migrate_it_once(sql: Database) -> None:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(OPENERS)
    openers = [
        context.Process(target=_open_when_released, args=(sql.url, barrier)) for _ in range(OPENERS)
    ]
    for process in openers:
        process.start()
    for process in openers:
        process.join(90)
    assert [p.exitcode for p in openers] == [0] * OPENERS
    engine = create_engine(sql.url)
    with engine.connect() as db:
        versions = db.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    engine.dispose()
    assert versions == [ScriptDirectory.from_config(alembic_config()).get_current_head()]


async def test_events_appended_at_once_from_many_connections_get_distinct_numbers(
    sql: Database,
) -> None:
    await (await sql.open()).runs.create(run("run-1"))

    async def append(writer: int) -> list[int]:
        own = await sql.open()  # a connection pool of its own, as another process has
        data = [f'{{"writer": {writer}, "n": {n}}}' for n in range(25)]  # each an event
        return [await own.runs.append_event("run-1", time=1.0, kind="note", data=d) for d in data]

    numbers = [seq for writer in await asyncio.gather(*map(append, range(4))) for seq in writer]
    assert sorted(numbers) == list(range(1, 101))
    assert [e.seq for e in await (await sql.open()).runs.events("run-1")] == list(range(1, 101))


async def test_pull_requests_added_at_once_get_distinct_numbers(sql: Database) -> None:
    async def add(_: int) -> list[int]:
        own = await sql.open()
        return [
            (await own.forge.add_pull_request("a", 1.0, lambda n: "{}")).number for _ in range(5)
        ]

    numbers = [number for adder in await asyncio.gather(*map(add, range(4))) for number in adder]
    assert sorted(numbers) == list(range(1, 21))


async def test_a_database_at_an_older_revision_is_migrated_with_its_runs_kept(
    sql: Database,
) -> None:
    engine = create_engine(sql.url)
    settings = alembic_config()
    with engine.begin() as db:
        settings.attributes["connection"] = db
        command.upgrade(settings, "0002")
        old = run("run-old")
        db.execute(
            insert(runs).values(
                id=old.id, tenant="default", status="queued", created=old.created,
                updated=old.updated, state=old.document,
            )
        )  # fmt: skip
    engine.dispose()

    store = await sql.open()
    claimed = await store.queue.claim_next("server-1")
    assert claimed is not None
    assert (claimed.id, claimed.document) == ("run-old", old.document)
    engine = create_engine(sql.url)
    with engine.connect() as db:
        assert db.execute(select(runs.c.owner)).scalar_one() == "server-1"
    engine.dispose()


async def test_the_default_database_is_a_file_in_the_state_dir(tmp_path: Path) -> None:
    config = load_config({"state_dir": str(tmp_path / "state")}, files=[])
    assert database_url(config) == f"sqlite:///{tmp_path / 'state' / 'golem.db'}"


async def test_an_unusable_database_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="cannot prepare database"):
        await SqlStore.connect(f"sqlite:///{tmp_path / 'missing-dir' / 'golem.db'}")


async def test_an_unreachable_postgresql_is_a_clear_error_without_its_password() -> None:
    url = "postgresql+psycopg://golem:s3cret@127.0.0.1:1/golem?connect_timeout=5"
    with pytest.raises(StoreError, match="cannot prepare database") as caught:
        await SqlStore.connect(url)
    assert "s3cret" not in str(caught.value)
    assert "127.0.0.1:1" in str(caught.value)


async def test_a_database_that_is_neither_sqlite_nor_postgresql_is_refused() -> None:
    with pytest.raises(ConfigError, match="SQLite or PostgreSQL"):
        await SqlStore.connect("mysql://golem@127.0.0.1/golem")


def test_the_head_revision_read_from_file_names_is_alembics() -> None:
    script = ScriptDirectory.from_config(alembic_config())
    assert head_revision() == script.get_current_head()
    for revision in script.walk_revisions():
        assert Path(revision.path).name.startswith(f"{revision.revision}_"), revision.path


def test_a_database_at_the_head_revision_opens_without_importing_alembic(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'golem.db'}"

    async def make() -> None:
        await (await SqlStore.connect(url)).close()

    asyncio.run(make())
    script = (
        "import asyncio, sys\nfrom golem.store import SqlStore\n"
        f"async def main():\n    await (await SqlStore.connect({url!r})).close()\n"
        "asyncio.run(main())\nprint(sorted(m for m in sys.modules if m.startswith('alembic')))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "[]", done.stderr
