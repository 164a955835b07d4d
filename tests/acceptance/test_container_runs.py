"""Repositories whose checks need containers reach verified pull requests with no golem
configuration: detection finds that they need an engine, and the run's box (the agent's and
the verification's) is a microVM box with a private engine because the host has a microVM
tier; the run says why. No registry answers here: the services run golem/busybox, which
every box's engine has, or ``postgres:16``, the tenant's image cache seeded with the test
PostgreSQL image (``tests.checks.postgres_image``) as an earlier run's pull would have kept
it.

- a pytest suite that starts ``postgres:16`` with the docker SDK (the testcontainers class:
  no service declared, the image named by its test code): a right fix ships verified, a
  wrong one escalates after exactly two fix rounds, held against the change;
- a CI job's declared service (GitLab CI's ``services:`` with its command, which golem
  starts in the box before the agent and the checks): a wrong fix escalates after two
  rounds, not excused as the base's;
- a Makefile whose test target runs ``docker compose up -d``: with no image cached, the
  checks run on the base before the agent (so that what they pull is kept) and a right fix
  ships verified; a wrong one then escalates after two rounds, its base known already;
- a GitHub Actions job declaring ``services: postgres`` (``postgres:16``), its pytest suite
  talking to it with psycopg: a right fix ships verified and a wrong one escalates after
  two rounds.

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
from golem.blueprint.dependencies import image_of
from golem.blueprint.events import RunNote
from golem.checks import load_conventions
from golem.core import GolemConfig, load_config
from golem.forge import LocalForge, PullRequest
from golem.sandbox import Engine
from golem.store import SqlStore, Store
from tests.acceptance.ecosystems import (
    BOX_PLATFORMS,
    CI_SERVICE,
    COMPOSE_MAKE,
    CONTAINER_WHEELS,
    DOCKER_SDK,
    PG_SERVICE,
    POSTGRES_WHEELS,
    Ecosystem,
    git,
    make_remote,
    scripted_model,
)
from tests.acceptance.explained import explain
from tests.blueprint.registries import LocalRegistries, downloaded_wheels
from tests.checks.postgres_image import POSTGRES_TAG, seed_postgres
from tests.conftest import CONTAINERS_BOOT_TIMEOUT, SHARED_LOOP, microvm_image

pytestmark = [pytest.mark.bwrap, pytest.mark.microvm, SHARED_LOOP]

RUN_TIMEOUT = pytest.mark.timeout(CONTAINERS_BOOT_TIMEOUT + 900)


@pytest.fixture(scope="module")
def registries(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRegistries]:
    """The package index, serving the wheels these repositories install."""
    with LocalRegistries.started(tmp_path_factory.mktemp("registries")) as registries:
        for wheel in downloaded_wheels(*CONTAINER_WHEELS):
            registries.add_wheel_file(wheel)
        for wheel in downloaded_wheels(*POSTGRES_WHEELS, platforms=BOX_PLATFORMS):
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
    repo = remote(shared, ecosystem, registries)
    model = scripted_model(shared, ecosystem, wrong=wrong)
    state = await Runner(config, engine=engine, store=store).start(
        RunRequest(repo=str(repo), task=ecosystem.task, model=model)
    )
    [pr] = [pr for pr in await LocalForge(store).pull_requests() if pr.head == state.branch]
    events = await RunBook(store).events(state.id)
    return state, pr, [e.message for _, e in events if isinstance(e, RunNote)]


def remote(shared: Path, ecosystem: Ecosystem, registries: LocalRegistries) -> Path:
    """``ecosystem``'s bare repository, made once per module."""
    made = shared / f"{ecosystem.name}.git"
    return made if made.is_dir() else make_remote(shared, ecosystem, registries)


async def seeded(
    config: GolemConfig,
    engine: Engine,
    store: Store,
    registries: LocalRegistries,
    ecosystem: Ecosystem,
) -> str:
    """The image cache entry a run of ``ecosystem`` (whose CI or tests name
    ``POSTGRES_TAG``) reads, seeded with the test PostgreSQL image, as a tenant's earlier
    run would have kept it (no registry answers here); its key."""
    shared = Path(config.state_dir).parent
    repo = remote(shared, ecosystem, registries)
    with tempfile.TemporaryDirectory(dir=shared) as scratch:
        clone = Path(scratch) / "clone"
        git("clone", "--quiet", str(repo), str(clone), cwd=shared)
        key, kept = await seed_postgres(
            config,
            clone,
            load_conventions(clone),
            tenant=store.tenant or "",
            repo=str(repo),
            image=image_of(engine.spec(), config),
        )
    assert kept.tags == [POSTGRES_TAG]
    return key


DOCKER_SDK_NEEDED = (
    "checks need containers: docker among the declared dependencies; box: microvm with containers"
)


@RUN_TIMEOUT
async def test_a_suite_starting_postgres_with_the_docker_sdk_ships_a_verified_fix(
    config: GolemConfig, engine: Engine, store: Store, registries: LocalRegistries
) -> None:
    key = await seeded(config, engine, store, registries, DOCKER_SDK)

    state, pr, notes = await run(config, engine, store, registries, DOCKER_SDK)

    assert state.status == "succeeded", "\n".join([explain(state), *notes])
    assert state.verified
    assert state.isolation is not None
    assert state.isolation.tier == "microvm"
    [test] = state.checks
    assert test.passed, explain(state)
    assert "2 passed" in test.output_tail, explain(state)
    assert DOCKER_SDK_NEEDED in notes
    assert f"images: {key[:12]} loaded from the cache into the box's engine" in notes, notes
    assert not pr.draft


@RUN_TIMEOUT
async def test_a_wrong_fix_checked_against_a_docker_sdk_postgres_escalates_after_two_rounds(
    config: GolemConfig, engine: Engine, store: Store, registries: LocalRegistries
) -> None:
    await seeded(config, engine, store, registries, DOCKER_SDK)

    state, pr, notes = await run(config, engine, store, registries, DOCKER_SDK, wrong=True)

    assert state.status == "escalated", "\n".join([explain(state), *notes])
    assert state.rounds == 2
    [test] = state.checks
    assert (test.passed, test.preexisting, test.flaky) == (False, False, False), explain(state)
    assert [failure.name for failure in test.failures] == [
        "tests/test_empty.py::test_an_empty_inventory_holds_zero_pieces"
    ], explain(state)  # the database answered the other test
    assert "1 failed, 1 passed" in test.output_tail, explain(state)
    assert DOCKER_SDK_NEEDED in notes
    assert pr.draft
    assert "needs-human" in pr.labels


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


COMPOSE_NEEDED = "checks need containers: compose file compose.yaml; box: microvm with containers"
BASE_FIRST = (
    "images: none cached for this box; the checks run on the base first, so that the images "
    "they pull are kept"
)


@RUN_TIMEOUT
async def test_a_makefile_bringing_up_compose_ships_a_verified_fix(
    config: GolemConfig, engine: Engine, store: Store, registries: LocalRegistries
) -> None:
    state, pr, notes = await run(config, engine, store, registries, COMPOSE_MAKE)

    assert state.status == "succeeded", "\n".join([explain(state), *notes])
    assert state.verified
    [test] = state.checks
    assert test.command == "make test"
    assert "Ran 2 tests" in test.output_tail, explain(state)
    assert COMPOSE_NEEDED in notes
    assert BASE_FIRST in notes  # no image cached: what the base's checks pull is kept
    [base] = state.baseline or []
    assert (base.command, base.passed) == ("make test", True), explain(state)
    assert not pr.draft


@RUN_TIMEOUT
async def test_a_wrong_fix_checked_against_a_compose_project_escalates_after_two_rounds(
    config: GolemConfig, engine: Engine, store: Store, registries: LocalRegistries
) -> None:
    state, pr, notes = await run(config, engine, store, registries, COMPOSE_MAKE, wrong=True)

    assert state.status == "escalated", "\n".join([explain(state), *notes])
    assert state.rounds == 2
    [test] = state.checks
    assert (test.passed, test.preexisting, test.flaky) == (False, False, False), explain(state)
    assert [failure.name for failure in test.failures] == [
        "test_exact.ExactTest.test_the_greeting_has_no_trailing_newline"
    ], explain(state)  # the compose service answered the other test
    assert "Ran 2 tests" in test.output_tail, explain(state)
    assert COMPOSE_NEEDED in notes
    assert pr.draft
    assert "needs-human" in pr.labels


POSTGRES_NEEDED = (
    "checks need containers: service postgres (.github/workflows/ci.yml, job test); "
    "box: microvm with containers"
)
POSTGRES_STARTED = "services started in the box: postgres (postgres:16): localhost:5432"


@RUN_TIMEOUT
async def test_a_github_actions_postgres_service_ships_a_verified_fix(
    config: GolemConfig, engine: Engine, store: Store, registries: LocalRegistries
) -> None:
    key = await seeded(config, engine, store, registries, PG_SERVICE)

    state, pr, notes = await run(config, engine, store, registries, PG_SERVICE)

    assert state.status == "succeeded", "\n".join([explain(state), *notes])
    assert state.verified
    assert state.isolation is not None
    assert state.isolation.tier == "microvm"
    [test] = state.checks
    assert test.passed, explain(state)
    assert "2 passed" in test.output_tail, explain(state)
    assert POSTGRES_NEEDED in notes
    assert f"images: {key[:12]} loaded from the cache into the box's engine" in notes, notes
    assert POSTGRES_STARTED in notes
    assert not pr.draft


@RUN_TIMEOUT
async def test_a_wrong_fix_checked_against_a_postgres_service_escalates_after_two_rounds(
    config: GolemConfig, engine: Engine, store: Store, registries: LocalRegistries
) -> None:
    await seeded(config, engine, store, registries, PG_SERVICE)

    state, pr, notes = await run(config, engine, store, registries, PG_SERVICE, wrong=True)

    assert state.status == "escalated", "\n".join([explain(state), *notes])
    assert state.rounds == 2
    [test] = state.checks
    assert (test.passed, test.preexisting, test.flaky) == (False, False, False), explain(state)
    assert [failure.name for failure in test.failures] == [
        "tests/test_order.py::test_items_are_listed_alphabetically"
    ], explain(state)  # the service answered the other test
    assert "1 failed, 1 passed" in test.output_tail, explain(state)
    assert POSTGRES_STARTED in notes
    assert pr.draft
    assert "needs-human" in pr.labels
