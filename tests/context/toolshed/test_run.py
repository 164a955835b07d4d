"""A whole `golem run` whose implement step names toolshed tools: a real streamable-HTTP
server (npm's server-everything) on loopback, called from the host with the brokered
credential; the scripted agent's call reaches the trajectory, a tool outside the subset
is refused, and the credential is in none of the run's trajectory, events or record."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from golem.blueprint import Runner, RunRequest
from golem.blueprint.book import RunBook
from golem.core.config import GolemConfig, load_config
from golem.core.errors import ConfigError
from golem.sandbox import Engine
from golem.store import SqlStore, Store
from tests.blueprint.repos import EXAMPLES, make_remote
from tests.context.toolshed.servers import RecordingProxy, everything_over_http, recording_proxy
from tests.context.toolshed.sheds import TOKEN, http_config

pytestmark = pytest.mark.bwrap

EVIL = Path(__file__).parents[2] / "attacks" / "toolshed_servers" / "evil_mcp.py"
MINION = Path(__file__).parents[3] / "src" / "golem" / "blueprint" / "builtin" / "minion.yaml"


@pytest.fixture
async def proxy() -> AsyncIterator[RecordingProxy]:
    with everything_over_http() as port:
        async with recording_proxy(port) as proxy:
            yield proxy


@pytest.fixture
async def store(config: GolemConfig) -> AsyncIterator[Store]:
    store = await SqlStore.open(config)
    yield store
    await store.close()


def blueprint(tmp_path: Path, patterns: list[str], port: int) -> Path:
    """minion, its implement step given ``patterns``, its box allowed the server."""
    data = yaml.safe_load(MINION.read_text())
    [implement] = [node for node in data["nodes"] if node["id"] == "implement"]
    implement["toolshed"] = patterns
    data["box"] = {"egress": {"allow_cidrs": ["127.0.0.1/32"], "ports": [port]}}
    path = tmp_path / "toolshed.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def model(tmp_path: Path) -> str:
    """The calculator's scripted fix, after an echo through the toolshed, a call of a tool
    the step was not given, and a read of the box's environment."""
    fix = yaml.safe_load((EXAMPLES / "calculator-fix.yaml").read_text())
    fix["turns"][:0] = [
        {"tool_calls": [{"name": "every__echo", "arguments": {"message": "hi from the run"}}]},
        {"tool_calls": [{"name": "every__get-env", "arguments": {}}]},
        {"tool_calls": [{"name": "bash", "arguments": {"command": "env"}}]},
    ]
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump(fix))
    return f"scripted:{path}"


async def test_a_run_whose_step_has_toolshed_tools(
    config: GolemConfig, engine: Engine, store: Store, proxy: RecordingProxy, tmp_path: Path
) -> None:
    url = f"http://127.0.0.1:{proxy.port}/mcp"
    shed_config = http_config(config, url, credential="tracker")
    remote = make_remote(tmp_path / "remote")
    request = RunRequest(
        repo=str(remote),
        task="Fix the failing tests of the calculator",
        model=model(tmp_path),
        blueprint=str(blueprint(tmp_path, ["every.echo"], proxy.port)),
    )
    state = await Runner(shed_config, engine=engine, store=store).start(request)
    assert state.status == "succeeded", state.error
    [trajectory] = [Path(t).read_text() for t in state.trajectories if "implement" in t]
    assert "Echo: hi from the run" in trajectory
    assert "there is no tool 'every__get-env'" in trajectory
    assert f"Bearer {TOKEN}" in proxy.sent.decode()
    events = "".join(e.model_dump_json() for _, e in await RunBook(store).events(state.id))
    assert "Echo: hi from the run" in events
    for kept in (trajectory, events, state.model_dump_json()):
        assert TOKEN not in kept


async def test_a_step_naming_an_unknown_server_is_refused_before_any_box(
    config: GolemConfig, engine: Engine, store: Store, tmp_path: Path
) -> None:
    remote = make_remote(tmp_path / "remote")
    request = RunRequest(
        repo=str(remote), task="Fix", blueprint=str(blueprint(tmp_path, ["tracker.search"], 80))
    )
    with pytest.raises(ConfigError, match=r"step implement.*'tracker', which"):
        await Runner(config, engine=engine, store=store).submit(request)
    assert await engine.boxes() == []


async def test_a_step_whose_tool_schemas_exceed_the_context_budget_does_not_start(
    config: GolemConfig, engine: Engine, store: Store, tmp_path: Path
) -> None:
    evil = ["python3", "-c", EVIL.read_text(), "many", "3000"]
    data = config.model_dump(mode="json", exclude_unset=True)
    data["toolshed"] = {"servers": [{"name": "evil", "command": evil}]}
    request = RunRequest(
        repo=str(make_remote(tmp_path / "remote")),
        task="Fix the failing tests of the calculator",
        model=f"scripted:{EXAMPLES / 'calculator-fix.yaml'}",
        blueprint=str(blueprint(tmp_path, ["evil.*"], 80)),
    )
    runner = Runner(load_config(data, files=[]), engine=engine, store=store)
    state = await runner.start(request)
    assert state.status == "failed"
    assert state.error is not None
    assert "schemas take about" in state.error
    assert "more than the context budget of 12000" in state.error
    assert state.turns == 0  # the model was never called
