"""The install step in whole runs: dependencies installed in an install box that reaches
the repository's registries (local ones, tests/blueprint/registries.py) through the
filtered network, cached per repository and lockfile, ready for the checks of the run's
offline box; a stalled install fails at its idle timeout instead of hanging."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from golem.blueprint import RunState
from golem.blueprint.book import RunBook
from golem.checks import RepoConventions
from golem.core import GolemConfig, load_config
from golem.forge import LocalForge
from golem.sandbox import Engine
from golem.sandbox.backends.process.bwrap import BOX_PATH
from golem.store import SqlStore, Store
from tests.blueprint.install_runs import (
    change_on_main,
    install_config,
    python_conventions,
    python_repo,
    run,
)
from tests.blueprint.registries import GO, NPM, LocalRegistries, demo_registries
from tests.blueprint.repos import git
from tests.conftest import (
    QUICK_START_BACKENDS,
)

pytestmark = pytest.mark.bwrap  # and docker, podman where a test runs on every backend


@pytest.fixture
def registries(reachable_dir: Path) -> Iterator[LocalRegistries]:
    with demo_registries(reachable_dir / "registries", versions=("1.0", "2.0")) as registries:
        yield registries


@pytest.fixture
def config(tmp_path: Path, registries: LocalRegistries, backend: str) -> GolemConfig:
    return install_config(registries, tmp_path / "state", backend)


@pytest.fixture
async def store(config: GolemConfig) -> AsyncIterator[Store]:
    store = await SqlStore.open(config)
    yield store
    await store.close()


async def install_checks(store: Store, state: RunState) -> int:
    """How many install commands the run ran (CheckFinished events of its install node)."""
    events = await RunBook(store).events(state.id)
    return sum(1 for _, e in events if e.type == "check" and e.node == "install")


@pytest.mark.parametrize(
    "backend",
    # Not gvisor (37 s there): the cache is the host's logic, the install box an ordinary
    # filtered box, whose way out tests/sandbox/test_network.py proves on gVisor.
    [p for p in QUICK_START_BACKENDS if p.values[0] != "gvisor"],
)
async def test_dependencies_are_cached_per_repository_and_lockfile(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    registries: LocalRegistries,
    reachable_dir: Path,
) -> None:
    remote = python_repo(reachable_dir)
    conventions = python_conventions(registries)

    first = await run(config, engine, store, remote, conventions)
    assert first.status == "succeeded", (first.error, [r.output_tail for r in first.prepared])
    assert [s.node for s in first.steps][:4] == ["prepare", "hydrate", "install", "setup"]
    assert [(r.name, r.passed) for r in first.prepared] == [("install", True)] * 2
    assert first.dependencies is not None
    assert not first.dependencies_cached
    assert [c.passed for c in first.checks] == [True]  # the test of golemdemo ran and passed
    assert "/simple/golemdemo/" in registries.requests
    archive = config.state_dir / "cache" / "dependencies" / f"{first.dependencies}.tar"
    assert archive.is_file()

    asked = len(registries.requests)
    second = await run(config, engine, store, remote, conventions)
    assert second.status == "succeeded", second.error
    assert (second.dependencies, second.dependencies_cached) == (first.dependencies, True)
    assert second.prepared == []
    assert await install_checks(store, second) == 0  # no install box ran a command
    assert len(registries.requests) == asked  # no registry was asked anything
    assert [c.passed for c in second.checks] == [True]

    change_on_main(remote, "requirements.txt", "golemdemo==2.0\n")
    third = await run(config, engine, store, remote, conventions)
    assert third.status == "succeeded", third.error
    assert third.dependencies not in (None, first.dependencies)
    assert not third.dependencies_cached
    assert await install_checks(store, third) == 2
    assert any("golemdemo-2.0" in path for path in registries.requests[asked:])


async def test_the_cached_dependencies_never_reach_the_pull_request(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    registries: LocalRegistries,
    reachable_dir: Path,
) -> None:
    remote = python_repo(reachable_dir)
    state = await run(config, engine, store, remote, python_conventions(registries))
    assert state.status == "succeeded", state.error
    [pr] = await LocalForge(store).pull_requests()
    assert ".venv" not in pr.diff
    assert "calculator.py" in pr.diff
    assert ".venv" not in git("show", "--stat", "--format=", state.branch, cwd=remote)


async def test_an_install_that_stalls_fails_at_its_idle_timeout(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    registries: LocalRegistries,
    reachable_dir: Path,
) -> None:
    remote = python_repo(reachable_dir)
    stalled = f"curl -sS http://pypi.test:{registries.port}/stall/simple/golemdemo/"
    conventions = python_conventions(registries, install=[stalled])
    impatient = config.model_copy(
        update={"dependencies": config.dependencies.model_copy(update={"idle_timeout": 3})}
    )
    state = await run(impatient, engine, store, remote, conventions)
    assert state.status == "escalated"
    assert [s.node for s in state.steps][-2:] == ["install", "escalate"]
    [result] = state.prepared
    assert (result.name, result.command, result.passed) == ("install", stalled, False)
    assert result.reason is not None
    assert "printed nothing for 3" in result.reason  # the idle timeout, not a hang
    assert state.error is not None
    assert f"`{stalled}` failed (printed nothing for 3" in state.error
    assert state.dependencies is None
    assert not list((config.state_dir / "cache" / "dependencies").glob("*.tar"))
    assert [b for b in await engine.boxes() if b.labels.get("golem.run") == state.id] == []


async def test_the_install_box_reaches_the_registries_and_nothing_else(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    registries: LocalRegistries,
    reachable_dir: Path,
) -> None:
    remote = python_repo(reachable_dir)
    elsewhere = f"curl -sSf http://other.test:{registries.port}/simple/golemdemo/"
    state = await run(
        config, engine, store, remote, python_conventions(registries, install=[elsewhere])
    )
    assert state.status == "escalated"
    assert state.error is not None
    assert "could reach ^pypi\\.test$" in state.error
    assert "[dependencies] registries" in state.error
    assert not any(path.startswith("/simple/") for path in registries.requests)


async def test_node_dependencies_from_a_lockfile_are_installed_then_cached(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    registries: LocalRegistries,
    reachable_dir: Path,
) -> None:
    integrity = registries.add_npm("golemnpm", "1.0.0", {"index.js": "exports.value = 42;\n"})
    remote = python_repo(reachable_dir)
    work = reachable_dir / "calculator-seed"
    (work / "package.json").write_text(
        '{"name": "calc", "version": "1.0.0", "dependencies": {"golemnpm": "1.0.0"}}\n'
    )
    (work / "package-lock.json").write_text(
        registries.npm_lock("calc", {"golemnpm": ("1.0.0", integrity)})
    )
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "node too", cwd=work)
    git("push", "-q", "origin", "main", cwd=work)
    uses = "node -e \"process.exit(require('golemnpm').value === 42 ? 0 : 1)\""
    conventions = RepoConventions(
        install=[
            "npm ci --no-audit --no-fund",
            "test -d .golem/downloads/npm/_cacache",  # downloads on /workspace, not /tmp
        ],
        test=[uses],
        cache=["node_modules"],
        cache_keys=["package.json", "package-lock.json"],
        registries=[NPM],
        env={"npm_config_registry": registries.npm_url},
        ecosystems=["node"],
        source="the test's conventions",
    )
    first = await run(config, engine, store, remote, conventions)
    assert first.status == "succeeded", (first.error, [r.output_tail for r in first.prepared])
    assert not first.dependencies_cached
    assert "/npm/-/golemnpm-1.0.0.tgz" in registries.requests
    second = await run(config, engine, store, remote, conventions)
    assert second.status == "succeeded", second.error
    assert (second.dependencies, second.dependencies_cached) == (first.dependencies, True)
    assert [c.passed for c in second.checks] == [True]


async def test_go_modules_are_downloaded_then_cached_for_offline_tests(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    registries: LocalRegistries,
    reachable_dir: Path,
) -> None:
    go_mod = "module example.com/golemgo\n\ngo 1.19\n"
    sums = registries.add_go_module(
        "example.com/golemgo",
        "v1.0.0",
        {"go.mod": go_mod, "golemgo.go": "package golemgo\n\nconst Value = 42\n"},
    )
    remote = python_repo(reachable_dir)
    work = reachable_dir / "calculator-seed"
    (work / "go.mod").write_text(
        "module example.com/calc\n\ngo 1.19\n\nrequire example.com/golemgo v1.0.0\n"
    )
    (work / "go.sum").write_text(sums)
    (work / "calc_test.go").write_text(
        'package calc\n\nimport (\n\t"testing"\n\n\t"example.com/golemgo"\n)\n\n'
        "func TestValue(t *testing.T) {\n\tif golemgo.Value != 42 {\n\t\tt.Fatal(golemgo.Value)\n"
        "\t}\n}\n"
    )
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "go too", cwd=work)
    git("push", "-q", "origin", "main", cwd=work)
    conventions = RepoConventions(
        install=["go mod download"],
        test=["go test ./..."],
        cache=[".golem/go"],
        cache_keys=["go.mod", "go.sum"],
        registries=[GO],
        env={
            "GOPROXY": registries.go_url,
            "GOSUMDB": "off",
            "GOPATH": "/workspace/.golem/go",
            "GOMODCACHE": "/workspace/.golem/go/mod",
            "GOCACHE": "/tmp/go-build",
        },
        ecosystems=["go"],
        source="the test's conventions",
    )
    first = await run(config, engine, store, remote, conventions)
    assert first.status == "succeeded", (first.error, [r.output_tail for r in first.prepared])
    assert "/go/example.com/golemgo/@v/v1.0.0.zip" in registries.requests
    second = await run(config, engine, store, remote, conventions)
    assert second.status == "succeeded", (second.error, [c.output_tail for c in second.checks])
    assert (second.dependencies, second.dependencies_cached) == (first.dependencies, True)
    assert [c.passed for c in second.checks] == [True]


async def test_a_rust_crate_without_dependencies_installs_nothing_and_tests_offline(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    registries: LocalRegistries,
    reachable_dir: Path,
) -> None:
    remote = python_repo(reachable_dir)
    work = reachable_dir / "calculator-seed"
    (work / "Cargo.toml").write_text(
        '[package]\nname = "calc"\nversion = "0.1.0"\nedition = "2021"\n\n[lib]\npath = "lib.rs"\n'
    )
    (work / "lib.rs").write_text("#[test]\nfn adds() {\n    assert_eq!(2 + 3, 5);\n}\n")
    git("add", "-A", cwd=work)
    git("commit", "-q", "-m", "rust too", cwd=work)
    git("push", "-q", "origin", "main", cwd=work)
    conventions = RepoConventions(
        install=["cargo fetch"],
        test=["cargo test"],
        cache=[".golem/cargo"],
        cache_keys=["Cargo.toml", "Cargo.lock"],
        env={"CARGO_HOME": "/workspace/.golem/cargo"},
        ecosystems=["rust"],
        source="the test's conventions",
    )
    state = await run(config, engine, store, remote, conventions)
    assert state.status == "succeeded", (state.error, [c.output_tail for c in state.checks])
    assert [(r.command, r.passed) for r in state.prepared] == [("cargo fetch", True)]
    assert [c.passed for c in state.checks] == [True]
    [pr] = await LocalForge(store).pull_requests()
    assert ".golem/" not in pr.diff


async def test_an_operators_mirror_serves_conventions_that_name_the_public_registry(
    tmp_path: Path,
    engine: Engine,
    registries: LocalRegistries,
    reachable_dir: Path,
) -> None:
    settings = registries.engine_config(tmp_path / "mirrored", redirect=True)
    mirrored = load_config(settings, files=[])
    remote = python_repo(reachable_dir)
    public = python_conventions(
        registries,
        registries=["pypi.org", "files.pythonhosted.org"],
        env={"PATH": f"/workspace/.venv/bin:{BOX_PATH}", "VIRTUAL_ENV": "/workspace/.venv"},
    )  # as detection gives them
    store = await SqlStore.open(mirrored)
    try:
        state = await run(mirrored, engine, store, remote, public)
    finally:
        await store.close()
    assert state.status == "succeeded", (state.error, [r.output_tail for r in state.prepared])
    assert "/simple/golemdemo/" in registries.requests


async def test_a_trusted_install_may_use_the_hosts_network(
    tmp_path: Path,
    engine: Engine,
    registries: LocalRegistries,
    reachable_dir: Path,
) -> None:
    settings = registries.engine_config(tmp_path / "trusted")
    settings["dependencies"] = {"network": "host"}
    trusted = load_config(settings, files=[])
    direct = f"curl -sSf http://127.0.0.2:{registries.port}/simple/golemdemo/ && mkdir .venv"
    remote = python_repo(reachable_dir)
    store = await SqlStore.open(trusted)
    try:
        state = await run(trusted, engine, store, remote, python_conventions(registries,
                          install=[direct], test=["test -d .venv"]))  # fmt: skip
    finally:
        await store.close()
    assert state.status == "succeeded", (state.error, [r.output_tail for r in state.prepared])
    assert "/simple/golemdemo/" in registries.requests
