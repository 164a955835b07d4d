"""A hostile HTTP MCP server echoes the credential golem sends it in every field of its tool
listing (name, title, description, the input schema's names, descriptions, defaults and
enums, the output schema, annotations, icons, _meta), in every form golem sends it or the
wire gives it (the header's value, the bare secret, basic auth's base64, URL-encoded,
JSON-escaped, cut by invisible characters, wrapped in escape sequences): no field of the
listing golem keeps holds it, and nothing the model provider receives (through the real
Anthropic wire), nor the trajectory, nor an event, nor `golem toolshed ls` does (nor any
control character there)."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import unicodedata
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from golem.agent import Agent, AgentEvent, Budget
from golem.agent.models import make_model
from golem.agent.tools import make_tools
from golem.context.toolshed import Toolshed
from golem.core.config import GolemConfig, load_config
from golem.sandbox import Engine, LocalEngine
from golem.testing.anthropic_server import Text, ToolUse, stream_reply
from golem.testing.models import ANTHROPIC_KEY_ENV, TEST_KEY, AnthropicServer, models_config
from tests.attacks.toolshed_servers.echoing_mcp import FIELDS, EchoingServer

pytestmark = pytest.mark.bwrap

CREDENTIAL = 'tr4cker/"key"+ &=%0b6d2f9e'
"""A test value, with what JSON and URLs escape."""
USER = "golem-bot"
AUTHS: dict[str, dict[str, str]] = {
    "bearer": {"env": "TRACKER_TOKEN"},
    "basic": {"auth": "basic", "username": USER},
}


def secret_forms() -> list[str]:
    """The credential as the masker promises to catch it."""
    text = CREDENTIAL
    return [
        text,
        json.dumps(text)[1:-1],
        json.dumps(text)[1:-1].replace("/", "\\/"),
        urllib.parse.quote(text, safe=""),
        urllib.parse.quote_plus(text, safe=""),
        base64.b64encode(f"{USER}:{text}".encode()).decode(),
    ]


def leaked(text: str) -> list[str]:
    """The credential's forms in ``text``, once invisible and control characters are gone
    (a reader skips those)."""
    visible = "".join(c for c in text if unicodedata.category(c) not in ("Cc", "Cf"))
    return [form for form in secret_forms() if form in visible]


def strings(value: Any) -> str:
    """Every string in decoded JSON (keys too), one per line."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "\n".join(strings(k) + "\n" + strings(v) for k, v in value.items())
    if isinstance(value, list):
        return "\n".join(strings(item) for item in value)
    return ""


def shed_config(state: Path, url: str, auth: str) -> GolemConfig:
    credential = {"name": "tracker", "host": r"^127\.0\.0\.1$", "value": CREDENTIAL}
    return load_config(
        {
            "state_dir": str(state),
            "credentials": [{**credential, **AUTHS[auth]}],
            "toolshed": {"servers": [{"name": "echo", "url": url, "credential": "tracker"}]},
        },
        files=[],
    )


def allowing(port: int) -> dict[str, Any]:
    return {"egress": {"allow_cidrs": ["127.0.0.1/32"], "ports": [port]}}


@pytest.fixture
def anthropic_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[AnthropicServer]:
    monkeypatch.setenv(ANTHROPIC_KEY_ENV, TEST_KEY)
    with AnthropicServer(api_key=TEST_KEY) as server:
        yield server


@pytest.fixture(scope="module")
def echoing() -> Iterator[EchoingServer]:
    with EchoingServer().serving() as server:
        yield server


@pytest.fixture(scope="module", params=list(AUTHS))
def listed(
    request: pytest.FixtureRequest,
    echoing: EchoingServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    """For one kind of credential: what golem keeps of the listing, field by field (its
    listing entry and the tool spec the model would get), and what the server was sent."""
    auth = str(request.param)
    config = shed_config(tmp_path_factory.mktemp(f"state-{auth}"), echoing.url, auth)

    async def list_all() -> dict[str, Any]:
        shed = Toolshed(config)
        async with LocalEngine(config) as engine, engine.session(allowing(echoing.port)) as box:
            try:
                listing = await shed.listing(box, "echo")
                tools = await shed.tools(box, ["echo.*"])
            finally:
                await shed.close()
        return {
            "auth": auth,
            "entries": [entry.shown.model_dump_json(by_alias=True) for entry in listing],
            "specs": [tool.spec.model_dump_json() for tool in tools],
        }

    before = len(echoing.seen)
    kept = asyncio.run(list_all())
    kept["sent"] = echoing.seen[before:]
    return kept


def test_the_server_was_sent_the_credential(listed: dict[str, Any]) -> None:
    expected = {
        "bearer": f"Bearer {CREDENTIAL}",
        "basic": f"Basic {base64.b64encode(f'{USER}:{CREDENTIAL}'.encode()).decode()}",
    }[listed["auth"]]
    assert listed["sent"]
    assert set(listed["sent"]) == {expected}


@pytest.mark.parametrize("field", list(FIELDS))
def test_no_field_of_the_listing_golem_keeps_holds_the_credential(
    listed: dict[str, Any], field: str
) -> None:
    index = list(FIELDS).index(field)
    entry, spec = listed["entries"][index], listed["specs"][index]
    assert "***" in entry  # the server did echo it there
    assert leaked(entry) == []
    assert leaked(spec) == []


async def test_a_run_with_the_echoing_servers_tools_never_shows_the_model_the_credential(
    config: GolemConfig,
    engine: Engine,
    echoing: EchoingServer,
    anthropic_server: AnthropicServer,
    tmp_path: Path,
) -> None:
    shed = Toolshed(shed_config(tmp_path / "state", echoing.url, "bearer"))
    anthropic_server.push(
        stream_reply(ToolUse("echo__tool2", {})),
        stream_reply(ToolUse("finish", {"summary": "done"})),
    )
    anthropic_server.otherwise(stream_reply(Text("(an extra request)")))
    model = make_model("anthropic/claude-haiku-4-5", models_config(anthropic=anthropic_server))
    events: list[AgentEvent] = []
    trajectory = tmp_path / "trajectory.jsonl"
    async with engine.session(allowing(echoing.port)) as box:
        try:
            tools = [*make_tools(["finish"]), *await shed.tools(box, ["echo.*"])]
            agent = Agent(model, tools, budget=Budget(turns=4), on_event=events.append)
            outcome = await agent.run(box, "look things up", trajectory=trajectory)
        finally:
            await shed.close()
    assert outcome.status == "done", outcome.reason
    [first, second] = [request.json for request in anthropic_server.requests]
    offered = {tool["name"]: tool for tool in first["tools"]}
    assert len(offered) == len(FIELDS) + 1  # every field's tool, and finish
    assert "echo__tool2" in offered
    assert "answers: " in json.dumps(second["messages"][-1])  # the call's result came back
    seen = {
        "requests": [request.body.decode() for request in anthropic_server.requests],
        "trajectory": trajectory.read_text().splitlines(),
        "events": [event.model_dump_json() for event in events],
    }
    for name, documents in seen.items():
        for document in documents:
            assert leaked(document) == [], name
            assert leaked(strings(json.loads(document))) == [], name


def test_toolshed_ls_shows_the_listing_without_the_credential_or_control_characters(
    echoing: EchoingServer, tmp_path: Path
) -> None:
    config = tmp_path / "golem.toml"
    config.write_text(
        f"""[engine.defaults.egress]
allow_cidrs = ["127.0.0.1/32"]
ports = [{echoing.port}]

[[credentials]]
name = "tracker"
host = '^127\\.0\\.0\\.1$'
env = "TRACKER_TOKEN"
value = '{CREDENTIAL}'

[[toolshed.servers]]
name = "echo"
url = "{echoing.url}"
credential = "tracker"
"""
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOLEM_")}
    env.update(GOLEM_STATE_DIR=str(tmp_path / "state"), XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    env["COLUMNS"] = "400"
    command = [sys.executable, "-m", "golem", "toolshed", "ls", "--config", str(config)]
    shown = {
        flags: subprocess.run(
            [*command, *flags], capture_output=True, text=True, env=env, timeout=120, check=False
        )
        for flags in [(), ("--json",)]
    }
    for flags, done in shown.items():
        assert done.returncode == 0, done.stderr
        assert "***" in done.stdout, flags  # the server echoed it; golem masked it
        assert leaked(done.stdout) == [], flags
        assert [c for c in done.stdout if unicodedata.category(c) in ("Cc", "Cf")] == (
            ["\n"] * done.stdout.count("\n")
        ), flags
    [server] = json.loads(shown[("--json",)].stdout)["servers"]
    assert len(server["tools"]) == len(FIELDS)
