"""The Engine contract: what every engine does alike, this machine's (LocalEngine), a
server's through RemoteEngine, a Ray cluster's (ClusterEngine) and a control plane's. Each
scenario takes an engine and a scratch directory; each engine's test module runs every one
of them with one test marked ``@contract`` (parametrised over ``SCENARIOS``), so that a
scenario added here runs on every engine."""

from __future__ import annotations

import signal
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from golem.core.errors import PathNotFound, SandboxError, SetupFailed
from golem.core.events import ExecEvent, ExitEvent, OutputEvent
from golem.sandbox import Engine, ExecRequest
from tests.sandbox.binary_output import (
    ERR_PAYLOAD,
    PAYLOAD,
    PIECES,
    WRITER,
    stepped_output,
    writer,
)

Scenario = Callable[[Engine, Path], Awaitable[None]]


async def a_session_keeps_state_between_calls(engine: Engine, tmp_path: Path) -> None:
    async with engine.session(engine.spec(memory="256m")) as box:
        first = await box.execute("echo kept > note; echo out; echo err >&2; exit 3")
        assert (first.stdout_text, first.stderr_text, first.exit_code) == ("out\n", "err\n", 3)
        assert (await box.execute(["cat", "note"])).stdout_text == "kept\n"
        assert box.runtimes["python"].endswith("python3")
        ids = [info.id for info in await engine.boxes()]
        assert box.id in ids


async def streamed_events_arrive_in_order_with_the_exit_last(
    engine: Engine, tmp_path: Path
) -> None:
    async with engine.session() as box:
        events = [e async for e in box.stream("for i in 1 2 3; do echo $i; done; exit 2")]
    out = b"".join(getattr(e, "data", b"") for e in events if e.type == "stdout")
    assert out == b"1\n2\n3\n"
    assert events[-1].type == "exit"
    assert events[-1].exit_code == 2


async def files_and_directories_round_trip(engine: Engine, tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "mod.py").write_text("X = 1\n")
    payload = bytes(range(256)) * 4096  # 1 MiB, every byte value
    async with engine.session() as box:
        await box.put_file("blob.bin", payload)
        assert await box.get_file("blob.bin") == payload
        streamed = b"".join([chunk async for chunk in box.stream_file("blob.bin")])
        assert streamed == payload
        await box.put_dir(source, "project")
        assert (
            await box.execute("cd project && python3 -c 'import pkg.mod as m; print(m.X)'")
        ).stdout_text == "1\n"
        await box.get_dir("project", tmp_path / "back")
        assert (tmp_path / "back" / "pkg" / "mod.py").read_text() == "X = 1\n"
        with pytest.raises(PathNotFound, match=r"nope\.txt"):
            await box.get_file("nope.txt")


async def a_background_process_is_read_signalled_and_reaped(engine: Engine, tmp_path: Path) -> None:
    async with engine.session() as box:
        process = await box.start("echo ready; exec sleep 600")
        output = await box.read_output(process.id)
        while "ready" not in output.text:
            output = await box.read_output(process.id)
        assert [p.id for p in await box.processes()] == [process.id]
        await box.signal(process.id, signal.SIGKILL)
        assert await box.wait(process.id, 60) is not None
        await box.forget(process.id)
        assert await box.processes() == []


async def an_interactive_call_takes_stdin_as_it_comes(engine: Engine, tmp_path: Path) -> None:
    async with engine.session() as box:
        async with box.interact("while read l; do echo got:$l; done") as call:
            await call.write(b"one\n")
            events = call.events()
            first = await anext(events)
            assert (first.type, first.text) == ("stdout", "got:one\n")
            await call.close_stdin()
            rest = [event async for event in events]
        assert rest[-1].type == "exit"
        assert rest[-1].exit_code == 0


async def a_pty_reports_its_size_and_exit(engine: Engine, tmp_path: Path) -> None:
    async with engine.session() as box:
        terminal = await box.open_pty(["sh"])
        await terminal.resize(30, 100)
        await terminal.write(b"stty size; exit 5\n")
        screen = b""
        while (data := await terminal.read()) is not None:
            screen += data
        assert b"30 100" in screen
        assert terminal.exit_code == 5


async def a_one_shot_call_and_its_stream(engine: Engine, tmp_path: Path) -> None:
    result = await engine.execute("echo once")
    assert result.stdout_text == "once\n"
    events = [e async for e in engine.stream(["sh", "-c", "echo twice; exit 4"])]
    assert events[-1].exit_code == 4


async def a_secret_is_masked(engine: Engine, tmp_path: Path) -> None:
    spec = engine.spec(secrets={"TOKEN": "s3cr3t-value-123"})
    async with engine.session(spec) as box:
        result = await box.execute("echo $TOKEN")
    assert "s3cr3t-value-123" not in result.stdout_text
    assert "***" in result.stdout_text


async def a_removed_session_is_closed_for_every_handle(engine: Engine, tmp_path: Path) -> None:
    box = await engine.create_session()
    other = await engine.get_session(box.id)
    assert (await other.execute("echo hi")).exit_code == 0
    assert not box.closed
    assert not other.closed
    await engine.remove_session(box.id)
    assert box.closed
    assert other.closed
    with pytest.raises(SandboxError):
        await box.execute("true")


async def setup_events_reach_on_event_as_the_script_runs(engine: Engine, tmp_path: Path) -> None:
    seen: list[ExecEvent] = []
    spec = engine.spec(setup="echo preparing; echo careful >&2")
    async with engine.session(spec, on_event=seen.append) as box:
        assert (await box.execute("true")).exit_code == 0
    assert {event.phase for event in seen} == {"setup"}
    assert [(e.type, e.data) for e in seen if isinstance(e, OutputEvent)] == [
        ("stdout", b"preparing\n"),
        ("stderr", b"careful\n"),
    ]
    assert isinstance(seen[-1], ExitEvent)
    assert seen[-1].exit_code == 0


async def a_failing_setup_is_seen_by_on_event_then_raised(engine: Engine, tmp_path: Path) -> None:
    seen: list[ExecEvent] = []
    spec = engine.spec(setup="echo broken-dependency; exit 3")
    with pytest.raises(SetupFailed, match="exit code 3"):
        await engine.create_session(spec, on_event=seen.append)
    assert any(getattr(event, "data", b"") == b"broken-dependency\n" for event in seen)
    assert [e.exit_code for e in seen if isinstance(e, ExitEvent)] == [3]
    assert await engine.boxes() == []


async def output_that_is_not_utf8_comes_back_byte_for_byte(engine: Engine, tmp_path: Path) -> None:
    request = ExecRequest(code=WRITER, runtime="python")
    async with engine.session() as box:
        result = await box.execute(request)
        assert (result.stdout, result.stderr) == (PAYLOAD, ERR_PAYLOAD)
        assert _joined([e async for e in box.stream(request)]) == (PAYLOAD, ERR_PAYLOAD)
        assert await stepped_output(box, PIECES) == PIECES
        process = await box.start(ExecRequest(code=writer(stderr=b""), runtime="python"))
        assert await box.wait(process.id, 60) == 0
        assert (await box.read_output(process.id)).data == PAYLOAD
    assert (await engine.execute(request)).stdout == PAYLOAD
    assert _joined([e async for e in engine.stream(request)]) == (PAYLOAD, ERR_PAYLOAD)


async def a_raw_pty_passes_bytes_that_are_not_utf8(engine: Engine, tmp_path: Path) -> None:
    raw = f"import os, tty\ntty.setraw(1)\nos.write(1, {PAYLOAD!r})\n"
    async with engine.session() as box:
        terminal = await box.open_pty(["python3", "-c", raw])
        if hasattr(terminal, "connect"):
            await terminal.connect()
        screen = b""
        while (data := await terminal.read()) is not None:
            screen += data
    assert screen == PAYLOAD
    assert terminal.exit_code == 0


def _joined(events: list[Any]) -> tuple[bytes, bytes]:
    streams = {"stdout": b"", "stderr": b""}
    for event in events:
        if isinstance(event, OutputEvent):
            streams[event.type] += event.data
    return streams["stdout"], streams["stderr"]


SCENARIOS: list[Scenario] = [
    a_session_keeps_state_between_calls,
    streamed_events_arrive_in_order_with_the_exit_last,
    files_and_directories_round_trip,
    a_background_process_is_read_signalled_and_reaped,
    an_interactive_call_takes_stdin_as_it_comes,
    a_pty_reports_its_size_and_exit,
    a_one_shot_call_and_its_stream,
    a_secret_is_masked,
    a_removed_session_is_closed_for_every_handle,
    setup_events_reach_on_event_as_the_script_runs,
    a_failing_setup_is_seen_by_on_event_then_raised,
    output_that_is_not_utf8_comes_back_byte_for_byte,
    a_raw_pty_passes_bytes_that_are_not_utf8,
]

contract = pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__)
"""Marks an engine module's one test of the contract: it runs each scenario on its
``any_engine``."""
