"""A repository whose checks need containers, run where the box has no container engine:
the run says so (its events, its record, the pull request) and is never reported
verified, even when the checks pass without them (tests that skip without docker)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from golem.blueprint import Runner, RunRequest
from golem.blueprint.book import RunBook
from golem.blueprint.events import RunNote
from golem.core import GolemConfig
from golem.forge import LocalForge
from golem.sandbox import Engine
from golem.store import SqlStore, Store
from tests.blueprint.verify_repos import GREET, GREET_TESTS, UNITTEST, make_repo, scripted, write

pytestmark = pytest.mark.bwrap

WORKFLOW = f"""\
on: [push, pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    services:
      postgres:
        image: postgres:16
        ports: ["5432:5432"]
        options: --health-cmd pg_isready
    steps:
      - uses: actions/checkout@v4
      - run: {UNITTEST}
"""


@pytest.fixture
async def store(config: GolemConfig) -> AsyncIterator[Store]:
    store = await SqlStore.open(config)
    yield store
    await store.close()


async def test_checks_needing_containers_in_a_box_without_an_engine_leave_the_run_unverified(
    config: GolemConfig, engine: Engine, store: Store, reachable_dir: Path, tmp_path: Path
) -> None:
    files = {
        "greet.py": GREET,
        "test_greet.py": GREET_TESTS,
        ".github/workflows/ci.yml": WORKFLOW,
        "notes.txt": "one\n",
    }
    remote = make_repo(reachable_dir, "greeter", files)
    model = scripted(tmp_path, "greeter", write("notes.txt", "one\ntwo\n"))
    runner = Runner(config, engine=engine, store=store)
    request = {"repo": str(remote), "task": "Add a note", "model": model}

    state = await runner.start(RunRequest.model_validate(request))

    assert state.status == "unverified", state.error
    assert [check.passed for check in state.checks] == [True]  # passing is not enough
    assert state.unverified is not None
    assert state.unverified.startswith("needs containers: no microVM tier on this host")
    assert "service postgres" in state.unverified
    notes = [e.message for _, e in await RunBook(store).events(state.id) if isinstance(e, RunNote)]
    assert any(note.startswith("not verified: needs containers") for note in notes)
    [pr] = await LocalForge(store).pull_requests()
    assert pr.draft
    assert "needs containers: no microVM tier on this host" in pr.body
