"""Attacks on secrets, in real boxes on every backend: a secret a box holds (in its
environment and in its files, and in a file's name) never reaches the model, a tool's
result, an agent event or the trajectory, whichever tool shows it (the reported case:
``edit`` next to a secret's line); a brokered credential echoed by an upstream never
reaches the box, whatever the answer's encoding, over plain HTTP and through TLS; a log
record of the code that holds a secret never carries it.

The proxy alone, against every encoding, is tested in tests/sandbox/test_egress_encodings.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import ssl
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml

from golem.agent import Agent, AgentEvent, AgentOutcome, ToolFinished
from golem.agent.models import ScriptedModel
from golem.agent.tools import make_tools
from golem.core import GolemConfig, load_config
from golem.core.masking import SecretLogFilter, masking_logs
from golem.sandbox import Box, Engine
from tests.attacks.secrets_upstream import REFUSED, EchoUpstream
from tests.conftest import BOTH_BACKENDS, SHARED_LOOP
from tests.sandbox.nethosts import NetHosts
from tests.traces import traces_in_box

SECRET = "golem-secret-" + secrets.token_hex(12)
QUOTED = 'pä"ss/wörd-' + secrets.token_hex(8)
"""A secret that the in-box tools' JSON escapes (so the box's own masking cannot see it)."""
BROKERED = "golem-brokered-" + secrets.token_hex(12)
BASIC = "golem-basic-" + secrets.token_hex(12)
CONFIG = f"# settings\nNAME=demo\nAPI_KEY={SECRET}\nDB_PASSWORD={QUOTED}\nDEBUG=0\n"
TOOLS = ["read", "edit", "write", "bash", "grep", "glob", "ls", "finish"]

pytestmark = SHARED_LOOP


@pytest.fixture(params=BOTH_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON-like value (keys too)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings(item)


def holds_a_secret(value: Any) -> bool:
    return any(s in text for text in strings(value) for s in (SECRET, QUOTED))


# Tool results, events, trajectories and what the model reads ------------------------------


@pytest_asyncio.fixture(loop_scope="session")
async def secret_box(engine: Engine) -> AsyncIterator[Box]:
    spec = engine.spec(secrets={"API_KEY": SECRET, "DB_PASSWORD": QUOTED})
    async with engine.session(spec) as box:
        await box.put_file("config.env", CONFIG.encode())
        await box.put_file(f"notes/{SECRET}.txt", b"a file named after the secret\n")
        yield box


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": arguments}]}


async def run_agent(
    box: Box, tmp_path: Path, turns: list[dict[str, Any]]
) -> tuple[AgentOutcome, list[AgentEvent], ScriptedModel, list[Any]]:
    """Run a scripted agent; its outcome, events, model (with the requests it was sent)
    and the trajectory's lines."""
    path = tmp_path / "script.yaml"
    path.write_text(yaml.safe_dump({"turns": turns}))
    model = ScriptedModel.from_file(path)
    events: list[AgentEvent] = []
    trajectory = tmp_path / "run.jsonl"
    agent = Agent(model, make_tools(TOOLS), on_event=events.append)
    outcome = await agent.run(box, "tidy the settings", trajectory=trajectory)
    lines = [json.loads(line) for line in trajectory.read_text().splitlines()]
    return outcome, events, model, lines


def results(events: list[AgentEvent]) -> list[str]:
    return [event.output for event in events if isinstance(event, ToolFinished)]


async def test_edit_next_to_a_secret_shows_it_masked_and_edits_the_real_file(
    secret_box: Box, tmp_path: Path
) -> None:
    turns = [call("edit", path="config.env", old="DEBUG=0", new="DEBUG=1"), call("finish",
             summary="debug on")]  # fmt: skip
    outcome, events, model, trajectory = await run_agent(secret_box, tmp_path, turns)
    assert outcome.status == "done"
    [edited, _] = results(events)
    assert "API_KEY=***\n" in edited
    assert "DB_PASSWORD=***\n" in edited
    assert "DEBUG=1" in edited
    changed = (await secret_box.get_file("config.env")).decode()
    assert changed == CONFIG.replace("DEBUG=0", "DEBUG=1")  # the real text, secrets kept
    assert not holds_a_secret([e.model_dump(mode="json") for e in events])
    assert not holds_a_secret(trajectory)
    assert not holds_a_secret([r.model_dump(mode="json") for r in model.requests])
    assert not holds_a_secret(outcome.model_dump(mode="json"))


async def test_no_tool_shows_a_secret_from_the_env_a_file_or_a_files_name(
    secret_box: Box, tmp_path: Path
) -> None:
    turns = [
        call("read", path="config.env"),
        call("edit", path="config.env", old="# settings\nNAME=demo\nAPI_KEY=***", new="x"),
        call("grep", pattern="API_KEY|DB_PASSWORD"),
        call("glob", pattern="**/*.txt"),
        call("ls", path="notes"),
        call("bash", command='echo "$API_KEY $DB_PASSWORD"; cat config.env; cd notes && ls'),
        call("write", path="config.env", content="NAME=demo\n"),
        call("finish", summary="done"),
    ]
    outcome, events, model, trajectory = await run_agent(secret_box, tmp_path, turns)
    read, missed, grep, glob, ls, bash, wrote, _ = results(events)
    assert read.endswith("3\tAPI_KEY=***\n     4\tDB_PASSWORD=***\n     5\tDEBUG=0")
    assert "*** in what tools show stands for a secret" in missed
    assert grep.endswith("config.env:3: API_KEY=***\nconfig.env:4: DB_PASSWORD=***")
    assert glob == "1 path:\nnotes/***.txt"
    assert ls.endswith("\n***.txt  (30 bytes)")
    assert (
        bash
        == f"*** ***\n{CONFIG.replace(SECRET, '***').replace(QUOTED, '***')}***.txt\n[exit code 0]"
    )
    assert "Overwrote config.env" in wrote
    assert not holds_a_secret([e.model_dump(mode="json") for e in events])
    assert not holds_a_secret(trajectory)
    assert not holds_a_secret([r.model_dump(mode="json") for r in model.requests])
    assert outcome.status == "done"


async def test_a_secret_echoed_back_from_a_tool_calls_arguments_is_masked(
    secret_box: Box, tmp_path: Path
) -> None:
    """The model cannot know a secret, but a tool call may hold one (copied from the task):
    what golem says back about the call is masked, and so is every event."""
    broken = {"tool_calls": [{"name": "bash", "arguments": '{"command": "echo ' + SECRET}]}
    turns = [
        call(f"tool-{SECRET}"),
        broken,
        call("read", path=f"missing-{SECRET}.txt"),
        call("finish", summary=f"the key is {SECRET}"),
    ]
    outcome, events, model, trajectory = await run_agent(secret_box, tmp_path, turns)
    unknown, invalid, missing, _ = results(events)
    assert "no tool 'tool-***'" in unknown
    assert "echo ***" in invalid
    assert "missing-***.txt does not exist" in missing
    assert outcome.summary == "the key is ***"
    assert not holds_a_secret([e.model_dump(mode="json") for e in events])
    assert not holds_a_secret(trajectory)
    said = [m for r in model.requests for m in r.messages if m.role != "assistant"]
    assert not holds_a_secret([m.model_dump(mode="json") for m in said])


# Brokered answers ------------------------------------------------------------------------

SHOWN = ["identity", "gzip", "deflate", "stacked", "gzip-members", "chunked-gzip", "reason",
         "trailer"]  # fmt: skip
"""Answers the box gets, decoded and masked."""
REFUSES = ["br", "unknown", "gzip-then-br", "transfer-gzip"]


@pytest_asyncio.fixture(loop_scope="session")
async def upstream(net: NetHosts) -> AsyncIterator[tuple[EchoUpstream, int, int]]:
    """The echoing upstream on the test hosts' address, over HTTP and HTTPS (a certificate
    of the test CA, which the proxy trusts for brokered upstreams)."""
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    net.ca.issue_cert("brokered.test", "private.test").configure_cert(tls)
    echo = EchoUpstream()
    plain, secure = await echo.start("127.0.0.2"), await echo.start("127.0.0.2", tls)
    yield echo, plain, secure
    await echo.close()


@pytest.fixture
def config(config: GolemConfig, net: NetHosts) -> GolemConfig:
    data = config.model_dump(mode="json")
    data["engine"]["network"] = {"nameservers": [net.dns.address], "upstream_ca": str(net.ca_file)}
    data["credentials"] = [
        {"name": "brokered", "host": r"^brokered\.test$", "env": "TOKEN", "value": BROKERED},
        {"name": "private", "host": r"^private\.test$", "auth": "basic", "username": "robot",
         "value": BASIC},
    ]  # fmt: skip
    return load_config(data, files=[])


def fetches(plain: int, secure: int) -> dict[str, str]:
    """Each saved answer's name, and the URL it comes from."""
    urls = {}
    for scheme, port in (("http", plain), ("https", secure)):
        for case in SHOWN + REFUSES:
            urls[f"{scheme}-{case}"] = f"{scheme}://brokered.test:{port}/case/{case}"
        urls[f"{scheme}-basic"] = f"{scheme}://private.test:{port}/case/gzip"
    return urls


async def test_a_brokered_credential_never_reaches_the_box_whatever_the_answer_encoding(
    engine: Engine, net: NetHosts, upstream: tuple[EchoUpstream, int, int]
) -> None:
    echo, plain, secure = upstream
    egress = {"allow": [r"^(brokered|private)\.test$"], "allow_cidrs": ["127.0.0.2/32"],
              "ports": [plain, secure]}  # fmt: skip
    urls = fetches(plain, secure)
    script = "mkdir -p out\n" + "\n".join(
        f"curl -sS --raw -m 30 -D out/{name}.head -o out/{name}.body "
        f'-H "Authorization: Bearer $TOKEN" {url}'
        for name, url in urls.items()
    )
    async with engine.session(engine.spec(network="filtered", egress=egress)) as box:
        result = await box.execute(script)
        saved = {name: await box.get_file(f"out/{name}.body") for name in urls}
        heads = {name: await box.get_file(f"out/{name}.head") for name in urls}
        traces = await traces_in_box(box, BROKERED) + await traces_in_box(box, BASIC)
    assert result.exit_code == 0, result.stderr_text
    assert echo.seen.count(f"Bearer {BROKERED}".encode()) == 2 * len(SHOWN + REFUSES)
    assert traces == []
    for name in urls:
        data = heads[name] + saved[name]
        assert BROKERED.encode() not in data, name
        assert BASIC.encode() not in data, name
        assert b"content-encoding" not in heads[name].lower(), name
    stars = b"Bearer " + b"*" * len(BROKERED)
    for scheme in ("http", "https"):
        for case in ("identity", "gzip", "deflate", "stacked", "gzip-members", "chunked-gzip"):
            assert stars in saved[f"{scheme}-{case}"], case
        assert stars in heads[f"{scheme}-reason"]
        assert b"robot:" + b"*" * len(BASIC) in saved[f"{scheme}-basic"]
        for case in REFUSES:
            statuses = [s for s in heads[f"{scheme}-{case}"].splitlines() if s[:5] == b"HTTP/"]
            assert statuses[-1].startswith(b"HTTP/1.1 502"), case
            assert REFUSED[case][1].encode() in saved[f"{scheme}-{case}"], case


# Logs ------------------------------------------------------------------------------------


def fail(message: str) -> None:
    raise RuntimeError(message)


async def test_log_records_of_code_holding_a_secret_never_carry_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A run's internal error, logged with its traceback, and a task it started."""
    logger = logging.getLogger("golem.tests.attacks.secrets")
    masking = SecretLogFilter()
    logger.addFilter(masking)

    async def later() -> None:
        logger.warning("a task of the run saw %s", SECRET)

    try:
        with caplog.at_level(logging.INFO, logger.name), masking_logs([SECRET, QUOTED]):
            try:
                fail(f"the box said {SECRET} and {QUOTED}")
            except RuntimeError:
                logger.exception("run r-1: internal error with %s", SECRET)
            await asyncio.create_task(later())
    finally:
        logger.removeFilter(masking)
    assert len(caplog.records) == 2
    assert "RuntimeError: the box said *** and ***" in caplog.text
    assert "a task of the run saw ***" in caplog.text
    assert SECRET not in caplog.text
    assert QUOTED not in caplog.text
