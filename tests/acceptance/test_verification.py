"""Verification holds the agent to its task: first runs of repositories with history (no
golem configuration, the minion blueprint, a scripted agent, the local forge, real boxes on
the process backend and on docker, the package index served locally).

- the task's tests fail on the base commit: a wrong fix is the agent's to fix and escalates
  after exactly two rounds; a partial fix gets its rounds and escalates saying how many now
  pass; a right fix ships verified, naming the older failure it did not touch;
- a pre-commit whose hooks cannot be fetched drops that check (named in the pull request)
  and the tests verify the change;
- ``flake8 .`` sees the repository's tree only (golem's venv lives outside it): it passes a
  clean change and fails one with a lint error.

The runs of a module share a state directory per backend, so a repository installs once and
its baseline runs once.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from golem.blueprint import Runner, RunRequest, RunState
from golem.checks import TestProgress
from golem.core import GolemConfig, load_config
from golem.forge import LocalForge, PullRequest
from golem.sandbox import Engine
from golem.store import SqlStore, Store
from tests.acceptance.ecosystems import (
    BOX_PLATFORMS,
    FLAKE8_LINT,
    PARTIAL_FIX,
    PRE_COMMIT,
    TARGET_TESTS,
    VERIFICATION_WHEELS,
    Ecosystem,
    make_remote,
    scripted_edits,
    scripted_model,
)
from tests.acceptance.explained import explain
from tests.blueprint.registries import LocalRegistries, downloaded_wheels
from tests.conftest import ENGINES, devbox_image

UNTOUCHED = "tests/test_report.py::test_report_ends_with_a_full_stop"


@pytest.fixture(
    scope="module",
    params=[
        pytest.param("process", marks=pytest.mark.bwrap),
        pytest.param("docker", marks=pytest.mark.docker),
    ],
)
def backend(request: pytest.FixtureRequest) -> str:
    """Every test on bubblewrap and on the docker backend."""
    return str(request.param)


@pytest.fixture(scope="module")
def registries(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRegistries]:
    """The package index, serving the real wheels these repositories install."""
    with LocalRegistries.started(tmp_path_factory.mktemp("registries")) as registries:
        for wheel in downloaded_wheels(*VERIFICATION_WHEELS, platforms=BOX_PLATFORMS):
            registries.add_wheel_file(wheel)
        yield registries


@pytest.fixture(scope="module")
def shared(backend: str) -> Iterator[Path]:
    """A directory the backend's runs share (their remotes and golem's state), which the
    unprivileged user running boxes can reach."""
    directory = Path(tempfile.mkdtemp(prefix=f"golem-verification-{backend}-"))
    directory.chmod(0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def config(shared: Path, registries: LocalRegistries, backend: str) -> GolemConfig:
    data = registries.engine_config(shared / "state", redirect=True)
    if backend in ENGINES:
        engine = data["engine"]
        assert isinstance(engine, dict)
        engine["backend"] = {"type": "docker", "image": devbox_image(backend),
                             "docker_host": ENGINES[backend]}  # fmt: skip
    return load_config(data, files=[])


@pytest.fixture
async def store(config: GolemConfig) -> AsyncIterator[Store]:
    store = await SqlStore.open(config)
    yield store
    await store.close()


def remote(shared: Path, ecosystem: Ecosystem, registries: LocalRegistries) -> Path:
    """The repository's bare remote, made once per backend."""
    made = shared / f"{ecosystem.name}.git"
    return made if made.is_dir() else make_remote(shared, ecosystem, registries)


async def run(
    config: GolemConfig, engine: Engine, store: Store, repo: Path, task: str, model: str
) -> tuple[RunState, PullRequest]:
    state = await Runner(config, engine=engine, store=store).start(
        RunRequest(repo=str(repo), task=task, model=model)
    )
    prs = [pr for pr in await LocalForge(store).pull_requests() if pr.head == state.branch]
    assert len(prs) == 1, explain(state)
    return state, prs[0]


async def test_a_wrong_fix_of_the_tasks_failing_tests_escalates_after_exactly_two_rounds(
    config: GolemConfig, engine: Engine, store: Store, shared: Path, registries: LocalRegistries
) -> None:
    repo = remote(shared, TARGET_TESTS, registries)
    model = scripted_model(shared, TARGET_TESTS, wrong=True)
    state, pr = await run(config, engine, store, repo, TARGET_TESTS.task, model)

    assert state.status == "escalated", explain(state)
    assert state.rounds == 2
    [test] = state.checks
    assert (test.passed, test.preexisting, test.flaky) == (False, False, False), explain(state)
    assert test.progress == TestProgress(passing=0, of=4)
    assert test.set_aside == [UNTOUCHED]
    assert pr.draft
    assert "needs-human" in pr.labels
    assert "These still fail; 0 of 4 now pass." in pr.body
    fix_round = next(Path(t) for t in state.trajectories if "trajectory-verify-" in t)
    assert "These still fail; 0 of 4 now pass." in fix_round.read_text()


async def test_a_partial_fix_gets_its_rounds_and_escalates_saying_two_of_four_pass(
    config: GolemConfig, engine: Engine, store: Store, shared: Path, registries: LocalRegistries
) -> None:
    repo = remote(shared, TARGET_TESTS, registries)
    model = scripted_edits(shared, "pytarget-partial", [PARTIAL_FIX])
    state, pr = await run(config, engine, store, repo, TARGET_TESTS.task, model)

    assert state.status == "escalated", explain(state)
    assert state.rounds == 2
    [test] = state.checks
    assert test.progress == TestProgress(passing=2, of=4), explain(state)
    still = sorted(f.name for f in test.failures if f.name not in test.set_aside)
    assert still == [
        "tests/test_slugify.py::test_slugify_newline", "tests/test_slugify.py::test_slugify_tab",
    ]  # fmt: skip
    assert "These still fail; 2 of 4 now pass." in pr.body
    assert "| test | `python3 -m pytest` | failed (exit 1) · 2 of 4 now pass |" in pr.body


async def test_a_right_fix_ships_verified_naming_what_failed_before_untouched(
    config: GolemConfig, engine: Engine, store: Store, shared: Path, registries: LocalRegistries
) -> None:
    repo = remote(shared, TARGET_TESTS, registries)
    model = scripted_model(shared, TARGET_TESTS)
    state, pr = await run(config, engine, store, repo, TARGET_TESTS.task, model)

    assert state.status == "succeeded", explain(state)
    assert state.verified
    assert state.rounds == 0
    [test] = state.checks
    assert (test.preexisting, test.set_aside) == (True, [UNTOUCHED]), explain(state)
    assert not pr.draft
    assert pr.title == f"fix: {TARGET_TESTS.task}"
    untouched = pr.body.split("## Failing before this change, not touched", 1)[1]
    assert f"`{UNTOUCHED}`" in untouched.split("##", 1)[0]


async def test_a_check_whose_hooks_cannot_be_fetched_is_dropped_and_the_tests_verify(
    config: GolemConfig, engine: Engine, store: Store, shared: Path, registries: LocalRegistries
) -> None:
    repo = remote(shared, PRE_COMMIT, registries)
    model = scripted_model(shared, PRE_COMMIT)
    state, pr = await run(config, engine, store, repo, PRE_COMMIT.task, model)

    assert state.status == "succeeded", explain(state)
    assert state.verified
    [dropped] = state.dropped
    assert (dropped.name, dropped.command) == ("lint", "pre-commit run --all-files")
    assert dropped.preparation.endswith("pre-commit install-hooks")
    assert "github.com" in dropped.reason
    assert [(c.name, c.passed) for c in state.checks] == [("test", True)], explain(state)
    assert not pr.draft
    not_run = pr.body.split("## Not run", 1)[1].split("##", 1)[0]
    assert "- lint (`pre-commit run --all-files`): its preparation" in not_run
    assert "## Preparing the box failed" not in pr.body


async def test_a_tree_wide_flake8_passes_a_clean_change(
    config: GolemConfig, engine: Engine, store: Store, shared: Path, registries: LocalRegistries
) -> None:
    repo = remote(shared, FLAKE8_LINT, registries)
    model = scripted_model(shared, FLAKE8_LINT)
    state, _ = await run(config, engine, store, repo, FLAKE8_LINT.task, model)

    assert state.status == "succeeded", explain(state)
    lint, test = state.checks
    assert lint.command == "flake8 ."
    assert (lint.passed, lint.preexisting, lint.flaky) == (True, False, False), explain(state)
    assert test.passed, explain(state)  # its test_checkout: nothing ignored in the tree
    assert state.baseline == []  # nothing failed: no check ran on the base commit


async def test_a_tree_wide_flake8_fails_a_change_with_a_lint_error(
    config: GolemConfig, engine: Engine, store: Store, shared: Path, registries: LocalRegistries
) -> None:
    repo = remote(shared, FLAKE8_LINT, registries)
    model = scripted_edits(shared, "flake8lint-error", [FLAKE8_LINT.fix, FLAKE8_LINT.wrong])
    state, _ = await run(config, engine, store, repo, FLAKE8_LINT.task, model)

    assert state.status == "escalated", explain(state)
    assert state.rounds == 2
    lint, test = state.checks
    assert (lint.passed, lint.preexisting, lint.flaky) == (False, False, False), explain(state)
    assert "./wordcount.py:2:1: F401 'os' imported but unused" in lint.output_tail
    assert "site-packages" not in lint.output_tail
    assert test.passed
