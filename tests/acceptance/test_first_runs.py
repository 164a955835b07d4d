"""A team's first runs of golem on its own repository, with no golem configuration: one
fixture repository per ecosystem (tests/acceptance/repos), the minion blueprint, a scripted
agent, the local forge, real boxes, and the ecosystems' registries served locally.

- a first run reaches a pull request whose checks ran the repository's own tests, after
  installing its dependencies the ecosystem's way;
- a second run of the same repository skips the install (its dependencies are cached), and
  its wrong fix escalates after the configured two fix rounds;
- a repository with nothing to check ends unverified (a draft PR saying why), never
  succeeded;
- a formatter among the checks: its edits are part of what ships.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from golem.blueprint import Runner, RunRequest, RunState
from golem.core import GolemConfig, load_config
from golem.forge import LocalForge, PullRequest
from golem.sandbox import Engine, LocalEngine
from golem.store import SqlStore, Store
from tests.acceptance.ecosystems import (
    FORMATTER_LINT,
    NOTHING_TO_CHECK,
    VERIFIED,
    Ecosystem,
    make_remote,
    scripted_model,
    serve_python_wheels,
)
from tests.acceptance.explained import explain
from tests.blueprint.registries import LocalRegistries

pytestmark = pytest.mark.bwrap


@pytest.fixture(scope="module")
def registries(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRegistries]:
    """A package index (PyPI's simple API, real wheels) and an npm registry on this
    machine, reached the way a box reaches the real ones: through golem's egress proxy."""
    with LocalRegistries.started(tmp_path_factory.mktemp("registries")) as registries:
        serve_python_wheels(registries)
        yield registries


@pytest.fixture
def config(tmp_path: Path, registries: LocalRegistries) -> GolemConfig:
    """Defaults, with the package managers pointed at the local registries (an operator's
    mirror is configured the same way)."""
    return load_config(registries.engine_config(tmp_path / "state", redirect=True), files=[])


@pytest.fixture
async def store(config: GolemConfig) -> AsyncIterator[Store]:
    store = await SqlStore.open(config)
    yield store
    await store.close()


@pytest.fixture
async def engine(config: GolemConfig) -> AsyncIterator[Engine]:
    async with LocalEngine(config) as engine:
        yield engine


async def run(
    config: GolemConfig, engine: Engine, store: Store, remote: Path, task: str, model: str
) -> RunState:
    runner = Runner(config, engine=engine, store=store)
    return await runner.start(RunRequest(repo=str(remote), task=task, model=model))


async def the_pull_request(store: Store, state: RunState) -> PullRequest:
    [pr] = [pr for pr in await LocalForge(store).pull_requests() if pr.head == state.branch]
    return pr


@pytest.mark.parametrize("ecosystem", VERIFIED, ids=lambda ecosystem: ecosystem.name)
async def test_a_first_run_reaches_a_verified_pull_request_and_a_second_reuses_its_install(
    ecosystem: Ecosystem,
    config: GolemConfig,
    engine: Engine,
    store: Store,
    reachable_dir: Path,
    registries: LocalRegistries,
) -> None:
    remote = make_remote(reachable_dir, ecosystem, registries)
    fix = scripted_model(reachable_dir, ecosystem)
    first = await run(config, engine, store, remote, ecosystem.task, fix)

    assert first.status == "succeeded", explain(first)
    assert any(ecosystem.test_command in check.command for check in first.checks), explain(first)
    assert all(check.passed for check in first.checks), explain(first)
    installs = [check for check in first.prepared if check.name == "install"]
    assert bool(installs) == ecosystem.installs, explain(first)
    assert all(check.passed for check in installs)
    assert not first.dependencies_cached
    pr = await the_pull_request(store, first)
    assert not pr.draft
    for path in ecosystem.added():
        assert f"b/{path}" in pr.diff

    wrong = scripted_model(reachable_dir, ecosystem, wrong=True)
    second = await run(config, engine, store, remote, ecosystem.task, wrong)

    assert second.status == "escalated", explain(second)
    assert second.rounds == 2
    assert not all(check.passed for check in second.checks)
    assert [c.name for c in second.prepared if c.name == "install"] == [], explain(second)
    assert second.dependencies_cached == ecosystem.installs


async def test_a_repository_with_nothing_to_check_ends_unverified_never_succeeded(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    reachable_dir: Path,
    registries: LocalRegistries,
) -> None:
    remote = make_remote(reachable_dir, NOTHING_TO_CHECK, registries)
    model = scripted_model(reachable_dir, NOTHING_TO_CHECK)
    state = await run(config, engine, store, remote, NOTHING_TO_CHECK.task, model)

    assert state.status == "unverified", explain(state)
    assert state.unverified
    assert state.checks == []
    pr = await the_pull_request(store, state)
    assert pr.draft
    assert "unverified" in pr.labels
    assert state.unverified in pr.body


async def test_what_a_formatter_check_changes_is_part_of_what_ships(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    reachable_dir: Path,
    registries: LocalRegistries,
) -> None:
    remote = make_remote(reachable_dir, FORMATTER_LINT, registries)
    model = scripted_model(reachable_dir, FORMATTER_LINT)
    state = await run(config, engine, store, remote, FORMATTER_LINT.task, model)

    assert state.status == "succeeded", explain(state)
    assert [c.command for c in state.checks] == ["make lint", "make test"]
    pr = await the_pull_request(store, state)
    assert '+    return "Hello, " + name\n' in pr.diff
    assert '+    return "Hello, " + name   \n' not in pr.diff  # the agent's trailing spaces
