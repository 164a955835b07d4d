"""The store shared by several processes and connections at once, on SQLite and PostgreSQL:
opening a new database together, numbering events and pull requests together, and
migrating a database an older golem made."""

from __future__ import annotations

import multiprocessing
from multiprocessing.synchronize import Barrier

from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, insert, inspect, select, text

from golem.blueprint.events import RunNote
from golem.service.store import SqlStore
from golem.service.store.database import alembic_config
from golem.service.store.schema import runs
from tests.service.runs import at_once, new_run
from tests.service.test_store import pull_request

OPENERS = 4


def _open_when_released(url: str, barrier: Barrier) -> None:
    barrier.wait(60)
    SqlStore(url).close()


def test_processes_opening_a_new_database_at_once_migrate_it_once(db_url: str) -> None:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(OPENERS)
    openers = [
        context.Process(target=_open_when_released, args=(db_url, barrier)) for _ in range(OPENERS)
    ]
    for process in openers:
        process.start()
    for process in openers:
        process.join(90)
    assert [p.exitcode for p in openers] == [0] * OPENERS
    engine = create_engine(db_url)
    with engine.connect() as db:
        versions = db.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    engine.dispose()
    assert versions == [ScriptDirectory.from_config(alembic_config()).get_current_head()]


def test_events_appended_at_once_from_many_connections_get_distinct_numbers(
    store: SqlStore,
) -> None:
    store.create_run(new_run("run-1"))

    def append(writer: int) -> list[int]:
        own = SqlStore(store.url)  # a connection pool of its own, as another process has
        try:
            note = RunNote(run_id="run-1", message=f"writer {writer}")
            return [own.append_event("run-1", note) for _ in range(25)]
        finally:
            own.close()

    numbers = [seq for writer in at_once(4, append) for seq in writer]
    assert sorted(numbers) == list(range(1, 101))
    assert [seq for seq, _ in store.events("run-1")] == list(range(1, 101))


def test_pull_requests_added_at_once_get_distinct_numbers(store: SqlStore) -> None:
    def add(_: int) -> list[int]:
        own = SqlStore(store.url)
        try:
            return [own.add_pull_request(pull_request("a")).number for _ in range(5)]
        finally:
            own.close()

    numbers = [number for adder in at_once(4, add) for number in adder]
    assert sorted(numbers) == list(range(1, 21))


def test_a_database_at_an_older_revision_is_migrated_with_its_runs_kept(db_url: str) -> None:
    engine = create_engine(db_url)
    settings = alembic_config()
    with engine.begin() as db:
        settings.attributes["connection"] = db
        command.upgrade(settings, "0002")
        old = new_run("run-old")
        db.execute(
            insert(runs).values(
                id=old.id, tenant="default", status="queued", created=old.created,
                updated=old.updated, state=old.model_dump_json(),
            )
        )  # fmt: skip
    engine.dispose()

    store = SqlStore(db_url)
    claimed = store.claim_next_run("server-1")
    assert claimed is not None
    assert claimed.id == "run-old"
    assert "owner" in {c["name"] for c in inspect(store.engine).get_columns("runs")}
    with store.engine.connect() as db:
        assert db.execute(select(runs.c.owner)).scalar_one() == "server-1"
    store.close()
