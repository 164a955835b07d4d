"""The run tests' blueprint, scripts, runner and store (fixtures), shared by the blueprint
tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from golem.blueprint import Runner, RunRequest, RunState
from golem.blueprint.book import RunBook
from golem.blueprint.events import RunEvent
from golem.core import EventSink, GolemConfig
from golem.forge import LocalForge, PullRequest
from golem.sandbox import Engine
from golem.store import SqlStore, Store
from tests.blueprint.repos import EXAMPLES, make_remote

SCRIPTS = Path(__file__).parent / "scripts"

FIX = f"scripted:{EXAMPLES / 'calculator-fix.yaml'}"

TASK = "Fix the failing tests of the calculator"

MakeRunner = Callable[..., Runner]


@pytest.fixture
async def store(config: GolemConfig) -> AsyncIterator[Store]:
    store = await SqlStore.open(config)
    yield store
    await store.close()


@pytest.fixture
def make_runner(config: GolemConfig, engine: Engine, store: Store) -> MakeRunner:
    def make(on_event: EventSink[RunEvent] | None = None) -> Runner:
        return Runner(config, engine=engine, store=store, on_event=on_event)

    return make


async def pull_requests(store: Store) -> list[PullRequest]:
    return await LocalForge(store).pull_requests()


async def events_text(store: Store, run_id: str) -> str:
    return "".join(e.model_dump_json() for _, e in await RunBook(store).events(run_id))


@pytest.fixture
def remote(reachable_dir: Path) -> Path:
    return make_remote(reachable_dir)


async def boxes_of(engine: Engine, state: RunState) -> list[str]:
    """Boxes still serving the run (a pooled box carries no session's labels)."""
    return [b.id for b in await engine.boxes() if b.labels.get("golem.run") == state.id]


def request(remote: Path, model: str = FIX, **fields: object) -> RunRequest:
    return RunRequest.model_validate({"repo": str(remote), "task": TASK, "model": model, **fields})


GATED = """\
name: gated
nodes:
  - {id: prepare, kind: host, action: prepare, next: implement}
  - {id: implement, kind: agent, prompt: "{{ task }}", next: approve}
  - id: approve
    kind: gate
    message: Ship it?
    timeout: TIMEOUT
    default: rejected
    next: {approved: ship, rejected: escalate}
  - {id: ship, kind: host, action: ship}
  - {id: escalate, kind: host, action: escalate}
"""


def gated(tmp_path: Path, timeout: float) -> str:
    path = tmp_path / "gated.yaml"
    path.write_text(GATED.replace("TIMEOUT", str(timeout)))
    return str(path)
