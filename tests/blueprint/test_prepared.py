"""Prepared repositories in whole runs (docs/snapshots.md#prepared-repositories): `golem
prepare`'s blueprint keeps a box after the install, the setup and the warm-up as its
tenant's snapshot of the repository's base branch; a run starts its box from it, the
host's `.git` placed and the tree moved to the run's commit, and reaches the same pull
request as without it (process and docker); a push since moves the tree, a changed
lockfile installs again."""

from __future__ import annotations

from pathlib import Path

import pytest

from golem.core import GolemConfig
from golem.forge import LocalForge
from golem.sandbox import Engine
from golem.store import Store
from tests.blueprint import prepared_runs
from tests.blueprint.install_runs import change_on_main, python_repo, run
from tests.blueprint.prepared_runs import (
    checks_of,
    conventions_of,
    files_of,
    hunks_of,
    prepare,
    record_of,
)
from tests.blueprint.registries import LocalRegistries
from tests.blueprint.repos import git
from tests.conftest import QUICK_START_BACKENDS

pytestmark = pytest.mark.bwrap

registries, config, store = prepared_runs.registries, prepared_runs.config, prepared_runs.store


@pytest.mark.parametrize(
    "backend", [p for p in QUICK_START_BACKENDS if p.values[0] in ("process", "docker")]
)
async def test_a_run_from_the_prepared_snapshot_reaches_the_same_pull_request(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    registries: LocalRegistries,
    reachable_dir: Path,
) -> None:
    remote = python_repo(reachable_dir)
    conventions = conventions_of(registries)
    cold = await run(config, engine, store, remote, conventions)
    assert cold.status == "succeeded", cold.error
    assert cold.started_from is None

    prepared = await prepare(config, engine, store, remote, conventions)
    assert prepared.status == "succeeded", prepared.error
    record = record_of(config, "default")
    assert record is not None
    assert record.commit == git("rev-parse", "main", cwd=remote).strip()
    assert record.dependencies == cold.dependencies
    assert "requirements.txt" in record.lockfiles

    warm = await run(config, engine, store, remote, conventions)
    assert warm.status == "succeeded", warm.error
    assert warm.started_from is not None
    assert (warm.started_from.digest, warm.started_from.commit) == (record.digest, record.commit)
    assert warm.started_from.setup_skipped
    assert await checks_of(store, warm, "setup") == 0  # setup was the snapshot's
    assert [c.passed for c in warm.checks] == [c.passed for c in cold.checks] == [True, True]
    first, second = sorted(await LocalForge(store).pull_requests(), key=lambda pr: pr.number)
    assert hunks_of(second.diff) == hunks_of(first.diff)
    assert f"started from the prepared snapshot {record.name}" in second.body
    assert "prepared snapshot" not in first.body
    assert ".venv" not in second.diff


async def test_a_push_since_the_snapshot_moves_the_tree_and_a_changed_lockfile_installs_again(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    registries: LocalRegistries,
    reachable_dir: Path,
) -> None:
    remote = python_repo(reachable_dir)
    conventions = conventions_of(registries)
    prepared = await prepare(config, engine, store, remote, conventions)
    assert prepared.status == "succeeded", prepared.error
    record = record_of(config, "default")
    assert record is not None

    change_on_main(remote, "README.md", "moved on\n")
    work = remote.parent / "calculator-seed"
    git("rm", "-q", "AGENTS.md", cwd=work)
    git("commit", "-q", "-m", "drop AGENTS.md", cwd=work)
    git("push", "-q", "origin", "main", cwd=work)
    moved = await run(config, engine, store, remote, conventions)
    assert moved.status == "succeeded", moved.error
    assert moved.started_from is not None
    assert moved.started_from.commit == record.commit
    assert not moved.started_from.setup_skipped  # another commit: setup runs again
    assert await checks_of(store, moved, "setup") == 1
    [pr] = await LocalForge(store).pull_requests()
    assert files_of(pr.diff) == ["calculator.py"]  # neither README.md nor AGENTS.md moved back

    change_on_main(remote, "requirements.txt", "golemdemo==2.0\n")
    asked = len(registries.requests)
    relocked = await run(config, engine, store, remote, conventions)
    assert relocked.status == "succeeded", relocked.error
    assert relocked.started_from is not None
    assert relocked.dependencies not in (None, record.dependencies)
    assert await checks_of(store, relocked, "install") == 2
    assert any("golemdemo-2.0" in path for path in registries.requests[asked:])
    assert [c.passed for c in relocked.checks] == [True, True]
