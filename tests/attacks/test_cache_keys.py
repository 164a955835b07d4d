"""Attacks on what one run leaves for the next through golem's caches: a tenant's baseline
results never answer another tenant's run, and a run on anything but a commit of the base
branch (a follow-up on a pull request's head, a run based on an attacker's branch) never
writes the dependency archive the base branch's runs unpack, whichever install input it
changed; a change to any file the install reads on the base branch installs afresh."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from golem.blueprint import Runner, RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.blueprint.events import CheckFinished
from golem.core import GolemConfig, load_config
from golem.forge import LocalForge
from golem.sandbox import Engine, LocalEngine
from golem.store import SqlStore, Store
from tests.attacks.takeback_harness import FIX_CALCULATOR, scripted
from tests.blueprint.install_runs import (
    BASE_ORIGIN,
    TASK,
    change_on_main,
    look_blueprint,
    pull_request_changing,
    python_conventions,
    python_repo,
    run,
    script_conventions,
    script_install_repo,
    seen,
)
from tests.blueprint.registries import LocalRegistries, demo_registries
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
    with demo_registries(reachable_dir / "registries") as registries:
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


# Who writes the base branch's archive -----------------------------------------------------


async def test_a_follow_up_on_a_shipped_pr_that_edited_install_sh_never_feeds_the_base_branch(
    config: GolemConfig, engine: Engine, store: Store, reachable_dir: Path
) -> None:
    remote = script_install_repo(reachable_dir)
    conventions, look = script_conventions(), look_blueprint(reachable_dir)
    edit = "sed -i 's/install.sh: base/install.sh: agent/' install.sh"
    parent = await run(
        config,
        engine,
        store,
        remote,
        conventions,
        model=scripted(reachable_dir, FIX_CALCULATOR, edit),
    )
    assert parent.status == "succeeded", parent.error
    [pr] = await LocalForge(store).pull_requests()
    assert "install.sh: agent" in git("show", f"{parent.branch}:install.sh", cwd=remote)
    for archive in (config.state_dir / "cache" / "dependencies").glob("*.tar"):
        archive.unlink()  # the base's archive is evicted

    tidy = scripted(reachable_dir, "echo '# tidied' >> calculator.py")
    follow = await run(config, engine, store, remote, conventions, model=tidy, follow_up=pr.number)
    assert follow.dependencies is not None, follow.error
    assert not follow.dependencies_cached  # installed from the pull request's head

    base = await run(config, engine, store, remote, conventions, blueprint=look)
    assert await seen(store, base) == BASE_ORIGIN  # not the agent's install.sh's
    assert base.dependencies not in (None, follow.dependencies)
    again = await run(config, engine, store, remote, conventions, blueprint=look)
    assert (again.dependencies, again.dependencies_cached) == (base.dependencies, True)
    assert await seen(store, again) == BASE_ORIGIN


INPUT_CHANGES = {
    "the install script": ("install.sh", "install.sh: base", "install.sh: agent"),
    "a script it sources": ("scripts/lib.sh", "lib.sh: base", "lib.sh: agent"),
    "the lockfile": ("requirements.txt", "golemdemo==1.0", "golemdemo==1.0  # agent"),
    "a file read through a path no key names": ("data/flavour", "flavour: base", "flavour: agent"),
}


@pytest.mark.parametrize("change", INPUT_CHANGES, ids=list(INPUT_CHANGES))
async def test_an_install_input_changed_on_a_pr_head_never_reaches_the_base_branchs_entry(
    change: str, config: GolemConfig, engine: Engine, store: Store, reachable_dir: Path
) -> None:
    path, old, new = INPUT_CHANGES[change]
    remote = script_install_repo(reachable_dir)
    conventions, look = script_conventions(), look_blueprint(reachable_dir)
    pr = await pull_request_changing(store, remote, path, old, new)
    follow = await run(
        config, engine, store, remote, conventions, blueprint=look, follow_up=pr.number
    )
    assert "agent" in await seen(store, follow), follow.error  # its own head's install

    base = await run(config, engine, store, remote, conventions, blueprint=look)
    assert await seen(store, base) == BASE_ORIGIN
    assert base.dependencies not in (None, follow.dependencies)
    assert not base.dependencies_cached


async def test_a_follow_up_whose_head_changed_no_install_input_uses_the_base_branchs_entry(
    config: GolemConfig, engine: Engine, store: Store, reachable_dir: Path
) -> None:
    remote = script_install_repo(reachable_dir)
    conventions, look = script_conventions(), look_blueprint(reachable_dir)
    base = await run(config, engine, store, remote, conventions, blueprint=look)
    assert base.dependencies is not None, base.error
    pr = await pull_request_changing(store, remote, "docs/usage.md", "add(a, b)", "add(1, 2)")
    follow = await run(
        config, engine, store, remote, conventions, blueprint=look, follow_up=pr.number
    )
    assert (follow.dependencies, follow.dependencies_cached) == (base.dependencies, True)
    assert await seen(store, follow) == BASE_ORIGIN


async def test_a_change_to_a_script_the_install_sources_installs_afresh_on_the_base_branch(
    config: GolemConfig, engine: Engine, store: Store, reachable_dir: Path
) -> None:
    remote = script_install_repo(reachable_dir)
    conventions, look = script_conventions(), look_blueprint(reachable_dir)
    first = await run(config, engine, store, remote, conventions, blueprint=look)
    assert await seen(store, first) == BASE_ORIGIN, first.error
    change_on_main(remote, "scripts/lib.sh", 'lib_says() { echo "lib.sh: v2"; }\n')
    second = await run(config, engine, store, remote, conventions, blueprint=look)
    assert second.dependencies not in (None, first.dependencies)
    assert not second.dependencies_cached
    assert await seen(store, second) == BASE_ORIGIN.replace("lib.sh: base", "lib.sh: v2")
