"""Session parity: LocalEngine and RemoteEngine are both a ``golem.sandbox.Engine``, and the
same code runs on this machine's engine and on a golem server's with the same results
(every scenario runs on both through ``any_engine``, the server a real one on loopback);
the server's errors come back as the same GolemError classes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from golem.core import GolemConfig
from golem.core.errors import (
    ConfigError,
    PathNotFound,
    PolicyViolation,
    RemoteError,
    SandboxError,
    SessionNotFound,
    SetupFailed,
)
from golem.core.events import ExecEvent, ExitEvent, OutputEvent
from golem.sandbox import Engine, ExecRequest, ExecResult, LocalEngine
from golem.service.client import RemoteEngine, make_engine
from tests.sandbox.binary_output import (
    ERR_PAYLOAD,
    PAYLOAD,
    PIECES,
    WRITER,
    stepped_output,
    writer,
)
from tests.service.served import Served, fresh_tenant

pytestmark = pytest.mark.bwrap


@pytest.fixture(params=["local", "remote"])
async def any_engine(request: pytest.FixtureRequest, config: GolemConfig) -> AsyncIterator[Engine]:
    """Each implementation of the Engine protocol: this machine's (LocalEngine), and a
    server's through RemoteEngine."""
    if request.param == "local":
        async with LocalEngine(config) as engine:
            yield engine
        return
    served: Served = request.getfixturevalue("served")
    async with RemoteEngine(served.url, served.tenant_key("parity"), config=config) as remote:
        yield remote


async def test_a_session_keeps_state_between_calls(any_engine: Engine) -> None:
    async with any_engine.session(any_engine.spec(memory="256m")) as box:
        first = await box.execute("echo kept > note; echo out; echo err >&2; exit 3")
        assert (first.stdout_text, first.stderr_text, first.exit_code) == ("out\n", "err\n", 3)
        assert (await box.execute(["cat", "note"])).stdout_text == "kept\n"
        assert box.runtimes["python"].endswith("python3")
        ids = [info.id for info in await any_engine.boxes()]
        assert box.id in ids


async def test_streamed_events_arrive_in_order_with_the_exit_last(any_engine: Engine) -> None:
    async with any_engine.session() as box:
        events = [e async for e in box.stream("for i in 1 2 3; do echo $i; done; exit 2")]
    out = b"".join(getattr(e, "data", b"") for e in events if e.type == "stdout")
    assert out == b"1\n2\n3\n"
    assert events[-1].type == "exit"
    assert events[-1].exit_code == 2


async def test_files_and_directories_round_trip(any_engine: Engine, tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / "pkg").mkdir(parents=True)
    (source / "pkg" / "mod.py").write_text("X = 1\n")
    payload = bytes(range(256)) * 4096  # 1 MiB, every byte value
    async with any_engine.session() as box:
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


async def test_a_background_process_is_read_signalled_and_reaped(any_engine: Engine) -> None:
    async with any_engine.session() as box:
        process = await box.start("echo ready; exec sleep 600")
        output = await box.read_output(process.id)
        while "ready" not in output.text:
            output = await box.read_output(process.id)
        assert [p.id for p in await box.processes()] == [process.id]
        await box.signal(process.id, signal.SIGKILL)
        assert await box.wait(process.id, 60) is not None
        await box.forget(process.id)
        assert await box.processes() == []


async def test_an_interactive_call_takes_stdin_as_it_comes(any_engine: Engine) -> None:
    async with any_engine.session() as box:
        async with box.interact("while read l; do echo got:$l; done") as call:
            await call.write(b"one\n")
            events = call.events()
            first = await anext(events)
            assert (first.type, first.text) == ("stdout", "got:one\n")
            await call.close_stdin()
            rest = [event async for event in events]
        assert rest[-1].type == "exit"
        assert rest[-1].exit_code == 0


async def test_a_pty_reports_its_size_and_exit(any_engine: Engine) -> None:
    async with any_engine.session() as box:
        terminal = await box.open_pty(["sh"])
        await terminal.resize(30, 100)
        await terminal.write(b"stty size; exit 5\n")
        screen = b""
        while (data := await terminal.read()) is not None:
            screen += data
        assert b"30 100" in screen
        assert terminal.exit_code == 5


async def test_a_one_shot_call_and_its_stream(any_engine: Engine) -> None:
    result = await any_engine.execute("echo once")
    assert result.stdout_text == "once\n"
    events = [e async for e in any_engine.stream(["sh", "-c", "echo twice; exit 4"])]
    assert events[-1].exit_code == 4


async def test_a_secret_is_masked_in_both(any_engine: Engine) -> None:
    spec = any_engine.spec(secrets={"TOKEN": "s3cr3t-value-123"})
    async with any_engine.session(spec) as box:
        result = await box.execute("echo $TOKEN")
    assert "s3cr3t-value-123" not in result.stdout_text
    assert "***" in result.stdout_text


async def test_a_removed_session_is_closed_for_every_handle(any_engine: Engine) -> None:
    box = await any_engine.create_session()
    other = await any_engine.get_session(box.id)
    assert (await other.execute("echo hi")).exit_code == 0
    assert not box.closed
    assert not other.closed
    await any_engine.remove_session(box.id)
    assert box.closed
    assert other.closed
    with pytest.raises(SandboxError):
        await box.execute("true")


async def test_setup_events_reach_on_event_as_the_script_runs(any_engine: Engine) -> None:
    seen: list[ExecEvent] = []
    spec = any_engine.spec(setup="echo preparing; echo careful >&2")
    async with any_engine.session(spec, on_event=seen.append) as box:
        assert (await box.execute("true")).exit_code == 0
    assert {event.phase for event in seen} == {"setup"}
    assert [(e.type, e.data) for e in seen if isinstance(e, OutputEvent)] == [
        ("stdout", b"preparing\n"),
        ("stderr", b"careful\n"),
    ]
    assert isinstance(seen[-1], ExitEvent)
    assert seen[-1].exit_code == 0


async def test_a_failing_setup_is_seen_by_on_event_then_raised(any_engine: Engine) -> None:
    seen: list[ExecEvent] = []
    spec = any_engine.spec(setup="echo broken-dependency; exit 3")
    with pytest.raises(SetupFailed, match="exit code 3"):
        await any_engine.create_session(spec, on_event=seen.append)
    assert any(getattr(event, "data", b"") == b"broken-dependency\n" for event in seen)
    assert [e.exit_code for e in seen if isinstance(e, ExitEvent)] == [3]
    assert await any_engine.boxes() == []


async def test_a_session_ended_elsewhere_is_closed_once_the_server_says_so(
    served: Served, config: GolemConfig
) -> None:
    key = served.tenant_key("ended-elsewhere")
    async with (
        RemoteEngine(served.url, key, config=config) as mine,
        RemoteEngine(served.url, key, config=config) as theirs,
    ):
        box = await mine.create_session()
        assert (await box.execute("true")).exit_code == 0  # its call channel is open
        await theirs.remove_session(box.id)
        assert not box.closed  # nothing said so yet
        with pytest.raises(SessionNotFound):
            await box.execute("true")
        assert box.closed


async def test_a_clients_own_golem_labels_are_not_asked_of_the_server(
    served: Served, config: GolemConfig
) -> None:
    """A local run marks its box ``golem.run``: through a client's RemoteEngine that mark
    stays behind (the server's labels are the server's; it would refuse them), whatever
    ``golem.*`` name it has, and the tenant's own labels go; a key that may set the server's
    labels (``server_labels``, a control plane's) sends them, and a user's is refused."""
    marks = {"golem.run": "run-x", "golem.tenant": "someone-else", "golem.": "", "mine": "1"}
    tenant = fresh_tenant("labels")
    key = served.key(tenant)
    async with (
        RemoteEngine(served.url, key, config=config) as remote,
        remote.session(remote.spec(labels=marks)) as box,
    ):
        assert (await box.execute("true")).exit_code == 0
        [info] = await remote.boxes()
        assert info.labels == {"mine": "1", "golem.tenant": tenant}  # the server's mark
    async with RemoteEngine(served.url, key, config=config, server_labels=True) as plane:
        with pytest.raises(PolicyViolation, match=r"golem\.run, golem\.tenant"):
            await plane.create_session(plane.spec(labels=marks))


async def test_the_servers_refusals_come_back_as_errors(
    served: Served, config: GolemConfig
) -> None:
    async with RemoteEngine(served.url, served.tenant_key("parity"), config=config) as remote:
        # the server's own error class comes back (one error tree on both sides)
        with pytest.raises(PolicyViolation, match=r"server\.policies\.user\.networks") as refused:
            await remote.create_session(remote.spec(network="host"))
        assert refused.value.http_status == 403
        with pytest.raises(SessionNotFound, match="no session"):
            await remote.get_session("box-000000000000")
    async with RemoteEngine(served.url, "golem_bad_key", config=config) as wrong:
        with pytest.raises(RemoteError, match="not valid") as unauthorized:
            await wrong.execute("true")
        assert unauthorized.value.http_status == 401


async def test_an_unreachable_server_is_a_clear_error(config: GolemConfig) -> None:
    async with RemoteEngine("http://127.0.0.1:9", "k", config=config) as remote:
        with pytest.raises(RemoteError, match="cannot reach the golem server"):
            await remote.execute("true")


async def test_make_engine_follows_the_configuration(
    config: GolemConfig, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert isinstance(make_engine(config), LocalEngine)
    remote = config.model_copy(
        update={"remote": config.remote.model_copy(update={"url": "http://h:1"})}
    )
    monkeypatch.delenv("GOLEM_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="GOLEM_API_KEY"):
        make_engine(remote)
    monkeypatch.setenv("GOLEM_API_KEY", "golem_x_y")
    engine = make_engine(remote)
    assert isinstance(engine, RemoteEngine)
    assert engine.url == "http://h:1"
    await engine.close()


async def test_output_that_is_not_utf8_comes_back_byte_for_byte(any_engine: Any) -> None:
    request = ExecRequest(code=WRITER, runtime="python")
    async with any_engine.session() as box:
        result = await box.execute(request)
        assert (result.stdout, result.stderr) == (PAYLOAD, ERR_PAYLOAD)
        assert _joined([e async for e in box.stream(request)]) == (PAYLOAD, ERR_PAYLOAD)
        assert await stepped_output(box, PIECES) == PIECES
        process = await box.start(ExecRequest(code=writer(stderr=b""), runtime="python"))
        assert await box.wait(process.id, 60) == 0
        assert (await box.read_output(process.id)).data == PAYLOAD
    assert (await any_engine.execute(request)).stdout == PAYLOAD
    assert _joined([e async for e in any_engine.stream(request)]) == (PAYLOAD, ERR_PAYLOAD)


async def test_a_raw_pty_passes_bytes_that_are_not_utf8(any_engine: Any) -> None:
    raw = f"import os, tty\ntty.setraw(1)\nos.write(1, {PAYLOAD!r})\n"
    async with any_engine.session() as box:
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


def test_golem_exec_through_a_server_writes_the_boxs_bytes(served: Served, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOLEM_")}
    env.update(
        GOLEM_STATE_DIR=str(tmp_path / "state"),
        XDG_CONFIG_HOME=str(tmp_path / "cfg"),
        GOLEM_REMOTE__URL=served.url,
        GOLEM_API_KEY="golem_not_a_key",
    )

    def golem(*args: str, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        command = [sys.executable, "-m", "golem", "exec", *args]
        return subprocess.run(
            command, input=stdin, capture_output=True, env=env, timeout=120, check=False
        )

    refused = golem("--", "true")  # the server answers: the call went there
    assert refused.returncode != 0
    assert b"not valid" in refused.stderr
    env["GOLEM_API_KEY"] = served.tenant_key("parity")
    done = golem("-c", WRITER)
    assert (done.stdout, done.stderr, done.returncode) == (PAYLOAD, ERR_PAYLOAD, 0)
    assert golem("--", "cat", stdin=PAYLOAD).stdout == PAYLOAD
    as_json = ExecResult.model_validate_json(golem("--json", "-c", WRITER).stdout)
    assert (as_json.stdout, as_json.stderr) == (PAYLOAD, ERR_PAYLOAD)
