"""Whole runs for prepared-repository tests: the fixtures (local registries, a config whose
`[prepared] warmup` fills a cache, a store), the calculator's conventions with a setup, and
what a test reads of a run (its prepared record, its pull request's files)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from golem.blueprint import RunState
from golem.blueprint.book import RunBook
from golem.blueprint.prepared import PreparedRecord, PreparedRepos
from golem.checks import RepoConventions
from golem.core import GolemConfig
from golem.sandbox import Engine
from golem.store import SqlStore, Store
from tests.blueprint.install_runs import install_config, python_conventions, run
from tests.blueprint.registries import LocalRegistries, demo_registries

pytestmark = pytest.mark.bwrap

SETUP = "mkdir -p /tmp/golem/warm && echo set-up > /tmp/golem/warm/setup"
WARMUP = "echo warm > /tmp/golem/warm/cache"


@pytest.fixture
def registries(reachable_dir: Path) -> Iterator[LocalRegistries]:
    with demo_registries(reachable_dir / "registries", versions=("1.0", "2.0")) as registries:
        yield registries


@pytest.fixture
def config(tmp_path: Path, registries: LocalRegistries, backend: str) -> GolemConfig:
    return install_config(registries, tmp_path / "state", backend, prepared={"warmup": WARMUP})


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


def record_of(config: GolemConfig, tenant: str) -> PreparedRecord | None:
    """The tenant's one prepared record (a test prepares one repository)."""
    records = PreparedRepos(config).of_tenant(tenant)
    assert len(records) <= 1
    return records[0] if records else None


def files_of(diff: str) -> list[str]:
    return sorted(
        line.split(" b/", 1)[1] for line in diff.splitlines() if line.startswith("diff --git ")
    )


def hunks_of(diff: str) -> list[str]:
    return [line for line in diff.splitlines() if line[:1] in "+-" and line[:3] not in "+++---"]
