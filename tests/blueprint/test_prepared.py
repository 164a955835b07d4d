"""Prepared repositories in whole runs (docs/snapshots.md#prepared-repositories): `golem
prepare`'s blueprint keeps a box after the install and the setup as its tenant's snapshot
of the repository's base branch; a run starts its box from it, the host's `.git` placed
and the tree moved to the run's commit, and reaches the same pull request as without it.
A box that planted a `.git`, a setuid file or a changed tracked file gets none of it into
the snapshot's runs or the host's repository; one tenant's snapshot never serves another."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from golem.blueprint import RunState
from golem.blueprint.book import RunBook
from golem.blueprint.prepared import PreparedRecord, PreparedRepos
from golem.checks import RepoConventions
from golem.core import GolemConfig, load_config
from golem.forge import LocalForge
from golem.sandbox import Engine
from golem.store import SqlStore, Store
from tests.blueprint.install_runs import change_on_main, python_conventions, python_repo, run
from tests.blueprint.registries import LocalRegistries
from tests.blueprint.repos import git
from tests.conftest import QUICK_START_BACKENDS, backend_settings

pytestmark = pytest.mark.bwrap

SETUP = "mkdir -p /tmp/golem/warm && echo set-up > /tmp/golem/warm/setup"
WARMUP = "echo warm > /tmp/golem/warm/cache"


@pytest.fixture
def registries(reachable_dir: Path) -> Iterator[LocalRegistries]:
    with LocalRegistries.started(reachable_dir / "registries") as registries:
        registries.add_wheel("golemdemo", "1.0", {"golemdemo/__init__.py": "VALUE = 42\n"})
        registries.add_wheel("golemdemo", "2.0", {"golemdemo/__init__.py": "VALUE = 42\n"})
        yield registries


@pytest.fixture
def config(tmp_path: Path, registries: LocalRegistries, backend: str) -> GolemConfig:
    data = registries.engine_config(tmp_path / "state")
    settings = backend_settings(backend)
    if settings is not None:
        engine = data["engine"]
        assert isinstance(engine, dict)
        engine["backend"] = settings
    data["prepared"] = {"warmup": WARMUP}
    return load_config(data, files=[])


def warming(config: GolemConfig, planted: str) -> GolemConfig:
    """``config`` whose warm-up also runs ``planted`` (what a hostile repository's build
    would do in the box about to be kept)."""
    prepared = config.prepared.model_copy(update={"warmup": f"{WARMUP} && {planted}"})
    return config.model_copy(update={"prepared": prepared})


@pytest.fixture
async def store(config: GolemConfig) -> AsyncIterator[Store]:
    store = await SqlStore.open(config)
    yield store
    await store.close()


def conventions_of(registries: LocalRegistries, setup: str = SETUP) -> RepoConventions:
    return python_conventions(
        registries,
        setup=[setup],
        test=["python3 -m unittest -v", "test -s /tmp/golem/warm/setup"],
    )


async def prepare(
    config: GolemConfig, engine: Engine, store: Store, remote: Path, conventions: RepoConventions
) -> RunState:
    return await run(config, engine, store, remote, conventions, blueprint="prepare")


async def checks_of(store: Store, state: RunState, node: str) -> int:
    events = await RunBook(store).events(state.id)
    return sum(1 for _, e in events if e.type == "check" and e.node == node)


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
    record = _record(config, "default")
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
    assert _hunks(second.diff) == _hunks(first.diff)
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
    record = _record(config, "default")
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
    assert _files(pr.diff) == ["calculator.py"]  # neither README.md nor AGENTS.md moved back

    change_on_main(remote, "requirements.txt", "golemdemo==2.0\n")
    asked = len(registries.requests)
    relocked = await run(config, engine, store, remote, conventions)
    assert relocked.status == "succeeded", relocked.error
    assert relocked.started_from is not None
    assert relocked.dependencies not in (None, record.dependencies)
    assert await checks_of(store, relocked, "install") == 2
    assert any("golemdemo-2.0" in path for path in registries.requests[asked:])
    assert [c.passed for c in relocked.checks] == [True, True]


@pytest.mark.parametrize(
    "planted",
    [
        "mkdir -p deep/.git/hooks && echo '#!/bin/sh' > deep/.git/hooks/pre-commit",
        "mkdir -p sub && mkdir sub/.GIT",
        "cp /bin/true /tmp/golem/suid && chmod 4755 /tmp/golem/suid",
    ],
    ids=["a-git-directory-with-hooks", "a-git-of-another-spelling", "a-setuid-file"],
)
async def test_a_prepare_box_that_planted_a_git_or_setuid_file_keeps_nothing(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    registries: LocalRegistries,
    reachable_dir: Path,
    planted: str,
) -> None:
    remote = python_repo(reachable_dir)
    good = await prepare(config, engine, store, remote, conventions_of(registries))
    assert good.status == "succeeded", good.error
    before = _record(config, "default")
    assert before is not None

    bad = await prepare(warming(config, planted), engine, store, remote, conventions_of(registries))
    assert bad.status == "failed"
    assert bad.error is not None
    assert "not kept" in bad.error
    assert _record(config, "default") == before
    assert [s.name for s in engine.snapshots.all()] == [before.name]  # type: ignore[attr-defined]
    hooks = Path(bad.workspace) / ".git" / "hooks"
    assert not (hooks / "pre-commit").exists()


async def test_tracked_files_and_links_a_prepare_box_changed_never_reach_a_run(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    registries: LocalRegistries,
    reachable_dir: Path,
) -> None:
    remote = python_repo(reachable_dir)
    tamper = (
        "echo 'BACKDOOR = 1' >> calculator.py && echo planted > planted.txt "
        "&& ln -s /etc/passwd README.md.link && rm AGENTS.md && ln -s /etc/passwd AGENTS.md"
    )
    conventions = conventions_of(registries)
    prepared = await prepare(warming(config, tamper), engine, store, remote, conventions)
    assert prepared.status == "succeeded", prepared.error

    state = await run(config, engine, store, remote, conventions)
    assert state.status == "succeeded", state.error
    assert state.started_from is not None
    [pr] = await LocalForge(store).pull_requests()
    assert "BACKDOOR" not in pr.diff
    assert _files(pr.diff) == ["calculator.py"]
    shipped = git("show", "--stat", "--format=", state.branch, cwd=remote)
    assert "planted" not in shipped
    assert "AGENTS.md" not in shipped


async def test_one_tenants_prepared_snapshot_never_serves_another(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    registries: LocalRegistries,
    reachable_dir: Path,
) -> None:
    remote = python_repo(reachable_dir)
    conventions = conventions_of(registries)
    ours = store.for_tenant("ours")
    prepared = await prepare(config, engine, ours, remote, conventions)
    assert prepared.status == "succeeded", prepared.error
    assert _record(config, "ours") is not None

    theirs = await run(config, engine, store.for_tenant("theirs"), remote, conventions)
    assert theirs.status == "succeeded", theirs.error
    assert theirs.started_from is None
    again = await run(config, engine, ours, remote, conventions)
    assert again.started_from is not None


def _record(config: GolemConfig, tenant: str) -> PreparedRecord | None:
    """The tenant's one prepared record (a test prepares one repository)."""
    records = PreparedRepos(config).of_tenant(tenant)
    assert len(records) <= 1
    return records[0] if records else None


def _files(diff: str) -> list[str]:
    return sorted(
        line.split(" b/", 1)[1] for line in diff.splitlines() if line.startswith("diff --git ")
    )


def _hunks(diff: str) -> list[str]:
    return [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in "+++---"]
