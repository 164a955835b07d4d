"""Retention: the events and directory of a run that ended long ago are pruned, its
trajectories archived, kept or deleted as configured; newer runs and runs in progress are
untouched; with no age configured nothing is pruned. On the in-memory store and SQLite."""

from __future__ import annotations

import tarfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from golem.blueprint import RunBook, RunRequest, RunState, RunStatus
from golem.blueprint.events import RunFinished, RunNote
from golem.blueprint.retention import prune_runs
from golem.core import GolemConfig, load_config
from golem.store import DeliveryRecord, MemoryStore, SqlStore, Store

DAY = 86400.0
NOW = 1_800_000_000.0


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Store]:
    if request.param == "memory":
        yield MemoryStore(tenant=None)
        return
    sql = await SqlStore.connect(f"sqlite:///{tmp_path / 'golem.db'}", tenant=None)
    yield sql
    await sql.close()


def configured(tmp_path: Path, **retention: object) -> GolemConfig:
    return load_config(
        {"state_dir": str(tmp_path / "state"), "server": {"retention": retention}}, files=[]
    )


async def keep_run(
    store: Store, config: GolemConfig, run_id: str, status: RunStatus, ended: float
) -> RunState:
    """A run of tenant acme that ended (or was last saved) at ``ended``, with an event, a
    checkout and a trajectory on disk."""
    run_dir = config.state_dir / "runs" / run_id
    (run_dir / "repo").mkdir(parents=True)
    (run_dir / "repo" / "file.py").write_text("x = 1\n")
    trajectory = run_dir / "trajectory-implement-1-1.jsonl"
    trajectory.write_text('{"turn": 1}\n')
    state = RunState(
        id=run_id, status=status, request=RunRequest(repo="/srv/repo", task="t"),
        blueprint="minion", blueprint_source="", trajectories=[str(trajectory)],
    )  # fmt: skip
    book = RunBook(store.for_tenant("acme"))
    await book.create(state)
    await book.append(RunNote(run_id=run_id, message="kept until pruned"))
    if state.finished:
        await book.append(RunFinished(run_id=run_id, status=status))
    await store.for_tenant("acme").runs.save(
        run_id, status=status, updated=ended, document=state.model_dump_json()
    )
    return state


async def test_an_old_finished_run_loses_its_events_and_directory_and_keeps_an_archive(
    store: Store, tmp_path: Path
) -> None:
    config = configured(tmp_path, days=30)
    await keep_run(store, config, "run-old", "succeeded", NOW - 31 * DAY)
    await keep_run(store, config, "run-new", "succeeded", NOW - 29 * DAY)
    await keep_run(store, config, "run-busy", "running", NOW - 90 * DAY)

    assert await prune_runs(store, config, now=NOW) == ["run-old"]

    runs = config.state_dir / "runs"
    assert sorted(p.name for p in runs.iterdir()) == ["run-busy", "run-new"]
    book = RunBook(store)
    # how it ended is kept, so a follower of the run still learns it
    assert [event.type for _, event in await book.events("run-old")] == ["run_end"]
    assert [len(await book.events(r)) for r in ("run-new", "run-busy")] == [2, 1]
    old = await book.load("run-old")
    assert old is not None
    assert old.status == "succeeded"  # still listed, with its outcome
    assert old.updated == NOW - 31 * DAY  # and with when it ended
    archive = config.state_dir / "archive" / "run-old.tar.gz"
    assert old.trajectories == [str(archive)]
    with tarfile.open(archive) as packed:
        member = packed.extractfile("trajectory-implement-1-1.jsonl")
        assert member is not None
        assert member.read() == b'{"turn": 1}\n'
    assert await prune_runs(store, config, now=NOW) == []  # once
    await RunBook(store.for_tenant("acme")).append(RunNote(run_id="run-old", message="late"))
    later = await prune_runs(store, config, now=NOW + 60 * DAY)
    assert sorted(later) == ["run-new", "run-old"]
    again = await book.load("run-old")
    assert again is not None
    assert again.trajectories == [str(archive)]  # a second pass keeps the archive it made


async def test_trajectories_can_be_kept_or_deleted(store: Store, tmp_path: Path) -> None:
    kept = configured(tmp_path / "kept", days=1, trajectories="keep")
    await keep_run(store, kept, "run-kept", "failed", NOW - 2 * DAY)
    assert await prune_runs(store, kept, now=NOW) == ["run-kept"]
    state = await RunBook(store).load("run-kept")
    assert state is not None
    moved = kept.state_dir / "trajectories" / "run-kept" / "trajectory-implement-1-1.jsonl"
    assert state.trajectories == [str(moved)]
    assert moved.read_text() == '{"turn": 1}\n'

    gone = configured(tmp_path / "gone", days=1, trajectories="delete")
    await keep_run(store, gone, "run-gone", "cancelled", NOW - 2 * DAY)
    assert await prune_runs(store, gone, now=NOW) == ["run-gone"]
    deleted = await RunBook(store).load("run-gone")
    assert deleted is not None
    assert deleted.trajectories == []
    assert not (gone.state_dir / "runs" / "run-gone").exists()


async def test_without_an_age_nothing_is_pruned(store: Store, tmp_path: Path) -> None:
    config = configured(tmp_path)
    await keep_run(store, config, "run-old", "succeeded", time.time() - 3650 * DAY)
    assert await prune_runs(store, config) == []
    assert (config.state_dir / "runs" / "run-old").is_dir()
    assert len(await RunBook(store).events("run-old")) == 2


async def test_a_pruned_runs_events_go_on_numbered_after_its_run_end(
    store: Store, tmp_path: Path
) -> None:
    config = configured(tmp_path, days=30)
    await keep_run(store, config, "run-old", "succeeded", NOW - 31 * DAY)
    assert await prune_runs(store, config, now=NOW) == ["run-old"]
    book = RunBook(store.for_tenant("acme"))
    assert [seq for seq, _ in await book.events("run-old")] == [2]
    assert [seq for seq, _ in await book.events("run-old", after=1)] == [2]
    await book.append(RunNote(run_id="run-old", message="late"))
    assert [seq for seq, _ in await book.events("run-old", after=2)] == [3]


async def test_webhook_deliveries_kept_longer_ago_than_the_age_are_forgotten(
    store: Store, tmp_path: Path
) -> None:
    config = configured(tmp_path, days=30)
    book = RunBook(store.for_tenant("acme"))
    for run_id, created in (("run-old", NOW - 31 * DAY), ("run-new", NOW - 29 * DAY)):
        state = RunState(
            id=run_id, request=RunRequest(repo="/srv/repo", task="t"), blueprint="minion",
            blueprint_source="", created=created,
        )  # fmt: skip
        await book.create(state, delivery=DeliveryRecord(source="github", ids=(f"d-{run_id}",)))
    await prune_runs(store, config, now=NOW)
    acme = store.for_tenant("acme")
    assert await acme.deliveries.find("github", ("d-run-old",)) is None  # asked again, if ever
    assert await acme.deliveries.find("github", ("d-run-new",)) == "run-new"
