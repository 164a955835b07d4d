"""Attacks on what one run leaves for the next through golem's caches: a tenant's baseline
results never answer another tenant's run, and a run based on an attacker's branch never
writes the dependency archive the default branch's runs unpack."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from golem.blueprint import Runner, RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.blueprint.events import CheckFinished
from golem.core import GolemConfig, load_config
from golem.sandbox import Engine, LocalEngine
from golem.store import SqlStore, Store
from tests.blueprint.install_runs import TASK, python_conventions, python_repo
from tests.blueprint.registries import LocalRegistries
from tests.blueprint.repos import EXAMPLES, git
from tests.blueprint.verify_repos import UNITTEST, golem_toml, make_repo

pytestmark = pytest.mark.bwrap

FIX = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"


@pytest.fixture
async def store(config: GolemConfig) -> AsyncIterator[Store]:
    store = await SqlStore.open(config)
    yield store
    await store.close()


def calculator_with_broken_lint(parent: Path) -> Path:
    """The calculator with a lint that fails on its base commit: every run needs a baseline."""
    files = {p.name: p.read_text() for p in (EXAMPLES / "calculator").glob("*.py")}
    files["lint.py"] = "print('legacy.py:12: E501 line too long')\nraise SystemExit(1)\n"
    files[".golem.toml"] = golem_toml(lint="python3 lint.py", test=UNITTEST)
    return make_repo(parent, "calculator", files)


async def baseline_ran(
    config: GolemConfig, engine: Engine, store: Store, remote: Path
) -> tuple[RunState, bool]:
    """A run of ``remote`` for ``store``'s tenant, and whether it ran the baseline itself."""
    runner = Runner(config, engine=engine, store=store)
    state = await runner.start(RunRequest(repo=str(remote), task=TASK, model=FIX))
    events = [event for _, event in await RunBook(store).events(state.id)]
    return state, any(isinstance(e, CheckFinished) and e.node == "baseline" for e in events)


async def test_a_tenants_baseline_results_never_answer_another_tenants_run(
    config: GolemConfig, engine: Engine, store: Store, reachable_dir: Path
) -> None:
    remote = calculator_with_broken_lint(reachable_dir)
    acme, ran = await baseline_ran(config, engine, store.for_tenant("acme"), remote)
    assert (acme.status, ran) == ("succeeded", True), acme.error
    globex, ran = await baseline_ran(config, engine, store.for_tenant("globex"), remote)
    assert (globex.status, ran) == ("succeeded", True), globex.error  # not acme's results
    again, ran = await baseline_ran(config, engine, store.for_tenant("acme"), remote)
    assert (again.status, ran) == ("succeeded", False), again.error  # its own, cached


@pytest.fixture
def registries(reachable_dir: Path) -> Iterator[LocalRegistries]:
    with LocalRegistries.started(reachable_dir / "registries") as registries:
        registries.add_wheel("golemdemo", "1.0", {"golemdemo/__init__.py": "VALUE = 42\n"})
        yield registries


async def install_run(
    config: GolemConfig, engine: Engine, store: Store, remote: Path, registries: LocalRegistries,
    base: str | None = None,
) -> RunState:  # fmt: skip
    """A run based on ``base`` whose repository installs from ``registries``."""
    runner = Runner(config, engine=engine, store=store)
    request = RunRequest(repo=str(remote), task=TASK, model=FIX, base=base)
    submitted = await runner.submit(request)
    book = RunBook(store)
    state = await book.load(submitted.id)
    assert state is not None
    state.conventions = python_conventions(registries)
    await book.save(state)
    return await runner.run(state.id)


async def test_a_run_on_another_branch_never_writes_the_default_branchs_dependencies(
    tmp_path: Path, registries: LocalRegistries, reachable_dir: Path
) -> None:
    config = load_config(registries.engine_config(tmp_path / "state"), files=[])
    remote = python_repo(reachable_dir)
    work = reachable_dir / "calculator-seed"
    git("checkout", "-q", "-b", "feature", cwd=work)  # same lockfile, its own setup code
    (work / "setup.py").write_text("import os  # would write a .pth into the venv\n")
    git("add", "setup.py", cwd=work)
    git("commit", "-q", "-m", "attacker's setup.py", cwd=work)
    git("push", "-q", "origin", "feature", cwd=work)
    store = await SqlStore.open(config)
    try:
        async with LocalEngine(config) as engine:
            feature = await install_run(config, engine, store, remote, registries, "origin/feature")
            main = await install_run(config, engine, store, remote, registries)
    finally:
        await store.close()
    assert feature.dependencies is not None
    assert not feature.dependencies_cached
    assert main.dependencies is not None, main.error
    assert not main.dependencies_cached
    assert main.dependencies != feature.dependencies
