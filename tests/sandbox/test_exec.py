"""Calls in real bubblewrap boxes: every request and spec option does what it says."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from golem.core import InvalidRequest, RuntimeNotAvailable
from golem.sandbox import Box, Engine, ExecRequest, ExitEvent, LocalEngine, OutputEvent
from tests.conftest import BOTH_BACKENDS, SHARED_LOOP, SYNC_ON_SHARED_LOOP
from tests.sandbox.binary_output import ERR_PAYLOAD, PAYLOAD, PIECES, WRITER, stepped_output
from tests.sandbox.minimal_image import build_minimal_image

pytestmark = [pytest.mark.bwrap, SHARED_LOOP]


@pytest.fixture(params=BOTH_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Every test here runs on both backends unless it pins one."""
    return str(request.param)


@pytest.fixture(scope="module")
def minimal_image() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="golem-image-"))
    root.chmod(0o755)
    yield build_minimal_image(root)
    shutil.rmtree(root, ignore_errors=True)


async def test_shell_string_and_argv_both_run(box: Box) -> None:
    assert (await box.execute("echo $((6*7))")).stdout_text == "42\n"
    assert (await box.execute(["printf", "%s|", "a b", "c"])).stdout_text == "a b|c|"


async def test_exit_code_stdout_and_stderr_are_separate(box: Box) -> None:
    result = await box.execute("echo out; echo err >&2; exit 3")
    assert (result.stdout_text, result.stderr_text, result.exit_code) == ("out\n", "err\n", 3)
    assert not result.ok


@pytest.mark.parametrize(
    ("runtime", "code"),
    [
        ("python", "print(6 * 7)"),
        ("node", "console.log(6 * 7)"),
        ("bash", "echo $((6 * 7))"),
        ("sh", "expr 6 \\* 7"),
    ],
)
async def test_code_runs_with_each_runtime(box: Box, runtime: str, code: str) -> None:
    result = await box.execute(ExecRequest(code=code, runtime=runtime))  # type: ignore[arg-type]
    assert result.stdout_text == "42\n", result.stderr_text


async def test_runtime_is_detected_from_the_file_name(box: Box) -> None:
    result = await box.execute(ExecRequest(code="console.log('js')", filename="tool.js"))
    assert result.stdout_text == "js\n"


@SYNC_ON_SHARED_LOOP
def test_request_needs_exactly_one_of_cmd_or_code() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        ExecRequest(cmd="ls", code="print(1)", runtime="python")
    with pytest.raises(ValueError, match="runtime"):
        ExecRequest(code="print(1)")
    with pytest.raises(ValueError, match="extension"):
        ExecRequest(code="x", filename="notes.txt")


async def test_stdin_env_and_workdir(box: Box) -> None:
    result = await box.execute(
        ExecRequest(
            cmd="cat; echo $GREETING; pwd",
            stdin=b"piped\n",
            env={"GREETING": "hi"},
            workdir="sub/dir",
        )
    )
    assert result.stdout_text == "piped\nhi\n/workspace/sub/dir\n"


async def test_workdir_outside_workspace_is_refused(box: Box) -> None:
    with pytest.raises(InvalidRequest, match="outside /workspace"):
        await box.execute(ExecRequest(cmd="true", workdir="../../etc"))


async def test_workdir_symlink_out_of_workspace_is_refused(box: Box) -> None:
    await box.execute("ln -s /etc /workspace/escape")
    with pytest.raises(InvalidRequest, match="outside /workspace"):
        await box.execute(ExecRequest(cmd="true", workdir="escape"))


async def test_files_are_written_before_and_returned_after(box: Box) -> None:
    result = await box.execute(
        ExecRequest(
            cmd="cat in.txt > out.bin; printf '\\377\\000' >> out.bin",
            files={"in.txt": b"data"},
            return_files=["out.bin"],
        )
    )
    assert result.files == {"out.bin": b"data\xff\x00"}


async def test_timeout_kills_and_is_reported(engine: Engine) -> None:
    async with engine.session(engine.spec(timeout=1)) as box:
        result = await box.execute("sleep 30")
    assert result.timed_out
    assert result.exit_code == 137
    assert result.signal == 9


async def test_idle_timeout_kills_a_silent_call(box: Box) -> None:
    result = await box.execute(ExecRequest(cmd="echo start; sleep 30", idle_timeout=1))
    assert result.idle_timed_out
    assert not result.timed_out
    assert result.stdout_text == "start\n"


async def test_output_cap_truncates_and_is_reported(engine: Engine) -> None:
    async with engine.session(engine.spec(max_output_bytes="1k")) as box:
        result = await box.execute("head -c 100000 /dev/zero | tr '\\0' x")
    assert result.truncated
    assert len(result.stdout) == 1024
    assert result.exit_code == 0


async def test_usage_is_measured(box: Box) -> None:
    result = await box.execute(ExecRequest(code="x = bytearray(64 << 20)", runtime="python"))
    assert result.usage.peak_memory_bytes >= 64 << 20
    assert result.usage.cpu_user_seconds + result.usage.cpu_system_seconds > 0


async def test_root_is_read_only_and_user_is_not_root(box: Box, backend: str) -> None:
    result = await box.execute("id -u; touch /usr/x 2>&1; touch /workspace/ok /tmp/ok && echo w")
    lines = result.stdout_text.splitlines()
    assert lines[0] == "1000"
    # gVisor checks a file's permissions before its mount's read-only flag (Linux the other
    # way round): the write fails either way, and /proc/mounts shows the mounts read-only.
    refusal = "Permission denied" if backend == "gvisor" else "Read-only file system"
    assert refusal in lines[1]
    assert lines[-1] == "w"
    mounts = (await box.execute("cat /proc/mounts")).stdout_text.splitlines()
    options = {line.split()[1]: line.split()[3].split(",") for line in mounts}
    assert "ro" in options["/"]
    assert "ro" in options.get("/usr", ["ro"])  # a mount of its own without an image


async def test_user_root_maps_to_root_inside_only(engine: Engine) -> None:
    async with engine.session(engine.spec(user="root")) as box:
        result = await box.execute("id -u; grep CapEff /proc/self/status")
    assert result.stdout_text.splitlines() == ["0", "CapEff:\t0000000000000000"]


@pytest.mark.parametrize("backend", ["process"])
async def test_process_backend_refuses_a_writable_root(engine: Engine) -> None:
    with pytest.raises(InvalidRequest, match="read-only"):
        await engine.execute("true", engine.spec(read_only_root=False))


async def test_workspace_size_is_enforced(engine: Engine) -> None:
    async with engine.session(engine.spec(workspace_size="1m")) as box:
        result = await box.execute("head -c 2000000 /dev/zero > /workspace/big")
    assert result.exit_code != 0
    assert "No space left" in result.stderr_text


@pytest.mark.parametrize("backend", ["process"])
async def test_host_workspace_directory_is_shared(engine: Engine, box_owned_dir: Path) -> None:
    (box_owned_dir / "hello.txt").write_text("from host")
    result = await engine.execute(
        "cat hello.txt; echo from box > made.txt", engine.spec(workspace=box_owned_dir)
    )
    assert result.stdout_text == "from host"
    assert (box_owned_dir / "made.txt").read_text() == "from box\n"


@pytest.mark.parametrize("backend", ["process"])
async def test_unreachable_workspace_is_refused_with_a_fix(engine: Engine, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("only root runs boxes as another host user")
    hidden = tmp_path / "private"
    hidden.mkdir()
    tmp_path.chmod(0o700)
    with pytest.raises(InvalidRequest, match=r"not reachable by host user 'nobody'.*chmod o\+x"):
        await engine.execute("true", engine.spec(workspace=hidden))


async def test_command_not_found_is_exit_127_with_a_message(box: Box) -> None:
    result = await box.execute(["no-such-program"])
    assert result.exit_code == 127
    assert "command not found" in result.stderr_text


@pytest.mark.parametrize(
    "backend",
    [
        pytest.param("process", marks=pytest.mark.bwrap),
        pytest.param("gvisor", marks=pytest.mark.gvisor),
    ],
)
async def test_image_directory_is_the_root(engine: Engine, minimal_image: Path) -> None:
    async with engine.session(engine.spec(image=str(minimal_image))) as box:
        assert set(box.runtimes) == {"python", "sh"}
        result = await box.execute("test -e /usr/bin/node || echo no-node")
        assert result.stdout_text == "no-node\n"
        with pytest.raises(RuntimeNotAvailable, match="no node runtime"):
            await box.execute(ExecRequest(code="1", runtime="node"))


async def test_stream_yields_output_then_exit(box: Box) -> None:
    events = [e async for e in box.stream("echo a; echo b >&2")]
    assert [type(e) for e in events][-1] is ExitEvent
    output = {(e.type, e.text) for e in events if isinstance(e, OutputEvent)}
    assert output == {("stdout", "a\n"), ("stderr", "b\n")}
    assert all(e.phase == "code" for e in events)


async def test_output_that_is_not_utf8_comes_back_byte_for_byte(box: Box) -> None:
    request = ExecRequest(code=WRITER, runtime="python")
    result = await box.execute(request)
    assert (result.stdout, result.stderr) == (PAYLOAD, ERR_PAYLOAD)
    events = [e async for e in box.stream(request)]
    chunks = [e for e in events if isinstance(e, OutputEvent)]
    assert b"".join(e.data for e in chunks if e.type == "stdout") == PAYLOAD
    assert b"".join(e.data for e in chunks if e.type == "stderr") == ERR_PAYLOAD
    assert "\ufffd" in result.stdout_text  # the text view replaces what is not UTF-8


async def test_chunks_that_end_inside_characters_are_passed_on_as_they_came(box: Box) -> None:
    assert await stepped_output(box, PIECES) == PIECES


async def test_stdin_bytes_come_back_unchanged_through_cat(box: Box) -> None:
    result = await box.execute(ExecRequest(cmd=["cat"], stdin=PAYLOAD))
    assert result.stdout == PAYLOAD


async def test_output_split_inside_a_utf8_character_comes_back_whole(box: Box) -> None:
    code = "import sys,os\nb='é€'.encode()\nos.write(1,b[:1]);os.write(1,b[1:])"
    result = await box.execute(ExecRequest(code=code, runtime="python"))
    assert result.stdout == "é€".encode()
    assert result.stdout_text == "é€"


@pytest.mark.parametrize("backend", ["process"])
async def test_cpu_memory_and_pids_limits_reach_the_cgroup(engine: Engine) -> None:
    async with engine.session(engine.spec(cpus=0.5, memory="96m", pids=40)) as box:
        record = engine.registry.load(box.id)
        assert record is not None
        dirs = [Path(d) for d in record.state["cgroup_dirs"]]
        if record.state["cgroup_version"] == "v2":
            [group] = dirs
            assert (group / "cpu.max").read_text().split() == ["50000", "100000"]
            assert int((group / "memory.max").read_text()) == 96 << 20
            assert int((group / "pids.max").read_text()) == 40
        else:
            memory, pids, cpu = dirs
            assert int((cpu / "cpu.cfs_quota_us").read_text()) == 50000
            assert int((memory / "memory.limit_in_bytes").read_text()) == 96 << 20
            assert int((pids / "pids.max").read_text()) == 40
        result = await box.execute("cat /proc/self/cgroup")
        assert box.id not in result.stdout_text  # its own cgroup namespace: it sees itself as /


async def test_without_cgroups_rlimits_still_cap_memory(tmp_path: Path) -> None:
    from golem.core import load_config

    config = load_config(
        {"state_dir": str(tmp_path / "state"), "engine": {"backend": {"cgroups": "off"}}},
        files=[],
    )
    async with LocalEngine(config) as engine, engine.session(engine.spec(memory="128m")) as box:
        record = engine.registry.load(box.id)
        assert record is not None
        assert record.state["cgroup_dirs"] == []
        limits = await box.execute("grep 'Max address space' /proc/self/limits")
        assert str(128 << 20) in limits.stdout_text
        hog = await box.execute(ExecRequest(code="x = bytearray(400 << 20)", runtime="python"))
        assert hog.exit_code != 0
        assert "MemoryError" in hog.stderr_text


async def test_an_interactive_call_reads_stdin_as_it_comes_and_takes_signals(box: Box) -> None:
    """Box.interact keeps stdin open: each line written is answered before the next is
    sent; a signal ends a call that would wait forever."""
    async with box.interact("while read line; do echo got:$line; done; echo eof") as call:
        events = call.events()
        await call.write(b"one\n")
        first = await anext(events)
        assert (first.type, getattr(first, "data", b"")) == ("stdout", b"got:one\n")
        await call.write(b"two\n")
        assert getattr(await anext(events), "data", b"") == b"got:two\n"
        await call.close_stdin()
        rest = [event async for event in events]
    assert b"".join(getattr(e, "data", b"") for e in rest) == b"eof\n"
    assert rest[-1].type == "exit"
    async with box.interact(["sleep", "600"]) as call:
        events = call.events()
        await call.signal(signal.SIGTERM)
        [ended] = [event async for event in events]
    assert isinstance(ended, ExitEvent)
    assert ended.signal == signal.SIGTERM


async def test_leaving_a_call_early_ends_its_process_before_the_next_call(box: Box) -> None:
    """A call left while it runs (a consumer cancelled, an interaction closed) is killed
    and its process is gone, not even a zombie, when the block has been left."""
    for _ in range(5):
        async with box.interact(["sleep", "600"]) as call:
            await call.write(b"")
        async with contextlib.aclosing(box.stream(["sh", "-c", "echo up; exec sleep 601"])) as out:
            assert getattr(await anext(out), "data", b"") == b"up\n"
        left = await box.execute("grep -l '^sleep' /proc/[0-9]*/comm 2>/dev/null || echo none")
        assert left.stdout_text == "none\n", left.stdout_text
