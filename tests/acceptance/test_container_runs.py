"""Repositories whose checks need containers reach verified pull requests with no golem
configuration: detection finds that they need an engine, and the run's box (the agent's and
the verification's) is a microVM box with a private engine because the host has a microVM
tier; the run says why. No registry answers here, so the services are built inside the box
from golem/busybox, which every box's engine has.

- a pytest suite that builds and starts its service with the docker SDK (the testcontainers
  class): a right fix ships verified;
- a CI job's declared service (GitLab CI's ``services:`` with its command, which golem
  starts in the box before the agent and the checks): a wrong fix escalates after exactly
  two fix rounds, held against the change, not excused as the base's;
- a Makefile whose test target runs ``docker compose up -d``: a right fix ships verified.

Each run boots a guest under TCG (minutes): the install runs on the default (process)
backend, the run's box on the microVM tier.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from golem.blueprint import Runner, RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.blueprint.events import RunNote
from golem.core import GolemConfig, load_config
from golem.forge import LocalForge, PullRequest
from golem.sandbox import Engine
from golem.store import SqlStore, Store
from tests.acceptance.ecosystems import (
    CI_SERVICE,
    COMPOSE_MAKE,
    CONTAINER_WHEELS,
    DOCKER_SDK,
    Ecosystem,
    make_remote,
    scripted_model,
)
from tests.acceptance.test_first_runs import explain
from tests.blueprint.registries import LocalRegistries, downloaded_wheels
from tests.conftest import CONTAINERS_BOOT_TIMEOUT, SHARED_LOOP, microvm_image

pytestmark = [pytest.mark.bwrap, pytest.mark.microvm, SHARED_LOOP]

RUN_TIMEOUT = pytest.mark.timeout(CONTAINERS_BOOT_TIMEOUT + 900)


@pytest.fixture(scope="module")
def registries(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRegistries]:
    """The package index, serving the wheels these repositories install."""
    with LocalRegistries.started(tmp_path_factory.mktemp("registries")) as registries:
        for wheel in downloaded_wheels(*CONTAINER_WHEELS):
            registries.add_wheel_file(wheel)
        yield registries


@pytest.fixture(scope="module")
def shared() -> Iterator[Path]:
    """The remotes and golem's state, where the unprivileged user running boxes reaches."""
    directory = Path(tempfile.mkdtemp(prefix="golem-container-runs-"))
    directory.chmod(0o755)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def config(shared: Path, registries: LocalRegistries) -> GolemConfig:
    """No golem configuration but the host's: a microVM tier beside the default backend,
    and the package managers pointed at the local index."""
    data = registries.engine_config(shared / "state", redirect=True)
    engine = data["engine"]
    assert isinstance(engine, dict)
    microvm = {"type": "microvm", "image": microvm_image(), "boot_timeout": CONTAINERS_BOOT_TIMEOUT}
    engine["tiers"] = {"microvm": microvm}
    return load_config(data, files=[])


@pytest.fixture
async def store(config: GolemConfig) -> AsyncIterator[Store]:
    store = await SqlStore.open(config)
    yield store
    await store.close()


async def run(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    registries: LocalRegistries,
    ecosystem: Ecosystem,
    *,
    wrong: bool = False,
) -> tuple[RunState, PullRequest, list[str]]:
    """A run of ``ecosystem``'s repository (made once per module) with its fix (or its
    wrong one): its end, its pull request and its notes."""
    shared = Path(config.state_dir).parent
    made = shared / f"{ecosystem.name}.git"
    repo = made if made.is_dir() else make_remote(shared, ecosystem, registries)
    model = scripted_model(shared, ecosystem, wrong=wrong)
    state = await Runner(config, engine=engine, store=store).start(
        RunRequest(repo=str(repo), task=ecosystem.task, model=model)
    )
    [pr] = [pr for pr in await LocalForge(store).pull_requests() if pr.head == state.branch]
    events = await RunBook(store).events(state.id)
    return state, pr, [e.message for _, e in events if isinstance(e, RunNote)]


@RUN_TIMEOUT
async def test_a_suite_starting_containers_with_the_docker_sdk_ships_a_verified_fix(
    config: GolemConfig, engine: Engine, store: Store, registries: LocalRegistries
) -> None:
    state, pr, notes = await run(config, engine, store, registries, DOCKER_SDK)

    assert state.status == "succeeded", explain(state)
    assert state.verified
    assert state.isolation is not None
    assert state.isolation.tier == "microvm"
    [test] = state.checks
    assert test.passed, explain(state)
    assert "2 passed" in test.output_tail, explain(state)
    assert (
        "checks need containers: docker among the declared dependencies; "
        "box: microvm with containers"
    ) in notes
    assert not pr.draft


@RUN_TIMEOUT
async def test_a_wrong_fix_checked_against_a_ci_service_escalates_after_two_rounds(
    config: GolemConfig, engine: Engine, store: Store, registries: LocalRegistries
) -> None:
    state, pr, notes = await run(config, engine, store, registries, CI_SERVICE, wrong=True)

    assert state.status == "escalated", explain(state)
    assert state.rounds == 2
    assert state.isolation is not None
    assert state.isolation.tier == "microvm"
    [test] = state.checks
    assert (test.passed, test.preexisting, test.flaky) == (False, False, False), explain(state)
    assert [failure.name for failure in test.failures] == [
        "test_exact.ExactTest.test_the_greeting_has_no_trailing_newline"
    ]  # the service answered the other test
    assert "Ran 2 tests" in test.output_tail
    assert (
        "checks need containers: service web (.gitlab-ci.yml, job test); "
        "box: microvm with containers"
    ) in notes
    assert "services started in the box: web (golem/busybox:latest): the box's loopback" in notes
    assert pr.draft
    assert "needs-human" in pr.labels


@RUN_TIMEOUT
async def test_a_makefile_bringing_up_compose_ships_a_verified_fix(
    config: GolemConfig, engine: Engine, store: Store, registries: LocalRegistries
) -> None:
    state, pr, notes = await run(config, engine, store, registries, COMPOSE_MAKE)

    assert state.status == "succeeded", explain(state)
    assert state.verified
    [test] = state.checks
    assert test.command == "make test"
    assert "Ran 2 tests" in test.output_tail, explain(state)
    assert (
        "checks need containers: compose file compose.yaml; box: microvm with containers"
    ) in notes
    assert not pr.draft
