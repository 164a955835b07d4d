"""Attacks on real bubblewrap boxes: exhaustion, escapes, leaks of secrets, forged results.

Each test does what a hostile program in the box would do and checks that the box, the
host and the engine come out of it intact.
"""

from __future__ import annotations

import asyncio
import logging
import os
import platform
from collections.abc import AsyncIterator
from pathlib import Path

import docker
import pytest
import pytest_asyncio

from golem.core.errors import BoxCrashed
from golem.sandbox import Box, Engine, ErrorEvent, ExecRequest, ExecResult, ExitEvent, OutputEvent
from tests.conftest import BOTH_BACKENDS, SHARED_LOOP, WITH_HOST_NETWORK, kill_box_from_outside
from tests.sandbox.binary_output import stepped_output

pytestmark = [pytest.mark.bwrap, SHARED_LOOP]


@pytest.fixture(params=BOTH_BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    """Every attack runs against every backend unless it pins one."""
    return str(request.param)


LIMITS = {"pids": 64, "memory": "128m", "timeout": 60}  # a microVM under TCG is slow to fill
SECRET = "s3cr3t-value-123"  # noqa: S105 - a test secret
CAP = 64 * 1024

PS = """
import os
import signal
for pid in filter(str.isdigit, os.listdir("/proc")):
    if int(pid) == os.getpid():
        continue
    try:
        stat = open(f"/proc/{pid}/stat").read()
        args = open(f"/proc/{pid}/cmdline", "rb").read()[:200].decode(errors="replace")
    except OSError:
        continue
    args = " ".join(args.replace("\\0", " ").split())
    print(pid, stat[stat.rindex(")") + 2], stat[stat.index("(") + 1 : stat.rindex(")")], args)
"""

FORK_LOOP = "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass"
MEMORY_HOG = "x = []\nwhile True:\n    x.append(bytearray(16 * 1024 * 1024))"


async def py(box: Box, code: str, *args: str, **request: object) -> ExecResult:
    return await box.execute(ExecRequest(cmd=["python3", "-c", code, *args], **request))  # type: ignore[arg-type]


async def processes(box: Box) -> list[tuple[str, str, str]]:
    """(state, comm, cmdline) of every process the box can see, but the lister's own."""
    result = await py(box, PS)
    rows = [line.split(" ", 3) for line in result.stdout_text.splitlines()]
    return [(r[1], r[2], r[3] if len(r) > 3 else "") for r in rows]


async def cgroup_text(engine: Engine, box: Box, controller: str, name: str) -> str:
    """A file of the box's cgroup for ``controller``, on any backend: the host's, or in a
    microVM the guest's (which its box sees read-only at /sys/fs/cgroup)."""
    record = engine.registry.load(box.id)
    assert record is not None
    if record.backend == "microvm":
        return (await box.execute(["cat", f"/sys/fs/cgroup/{name}"])).stdout_text
    return cgroup_file(engine, box, controller, name).read_text()


def cgroup_file(engine: Engine, box: Box, controller: str, name: str) -> Path:
    """A file of the box's cgroup for ``controller``, on either kind of backend."""
    record = engine.registry.load(box.id)
    assert record is not None
    if "container" in record.state:
        with docker.APIClient(base_url=record.state["docker_host"], version="auto") as api:
            pid = api.inspect_container(record.state["container"])["State"]["Pid"]
        for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines():
            _, names, path = line.split(":", 2)
            if controller in names.split(","):
                return Path("/sys/fs/cgroup", controller, path.lstrip("/"), name)
        raise AssertionError(f"no {controller} cgroup for container {record.state['container']}")
    return process_cgroup_file(engine, box, controller, name)


def process_cgroup_file(engine: Engine, box: Box, controller: str, name: str) -> Path:
    record = engine.registry.load(box.id)
    assert record is not None
    (directory,) = [d for d in record.state["cgroup_dirs"] if f"/{controller}/" in d]
    return Path(directory) / name


async def host_can_spawn() -> bool:
    process = await asyncio.create_subprocess_exec("true")
    return await process.wait() == 0


# Resource exhaustion -------------------------------------------------------------------


@pytest.mark.parametrize(
    "bomb",
    [["bash", "-c", ":(){ :|:& };:; while :; do :; done"], ["python3", "-c", FORK_LOOP]],
    ids=["bash", "python"],
)
async def test_fork_bomb_is_contained_and_host_stays_responsive(
    engine: Engine, bomb: list[str], backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    if backend == "gvisor":
        await gvisor_contains(engine, bomb, caplog)
        return
    async with engine.session(engine.spec(**LIMITS)) as box:
        result = await box.execute(ExecRequest(cmd=bomb, timeout=3))
        assert (result.timed_out, result.signal) == (True, 9), result.stderr_text[-300:]
        events = await cgroup_text(engine, box, "pids", "pids.events")
        assert int(events.split()[-1]) > 0  # the bomb did hit the box's pids limit
        assert (await box.execute("echo ok")).stdout_text == "ok\n"
    assert await host_can_spawn()


async def gvisor_contains(
    engine: Engine, attack: list[str], caplog: pytest.LogCaptureFixture, *, dies: bool = False
) -> None:
    """gVisor counts the box's processes itself (RLIMIT_NPROC in its kernel) and has no OOM
    killer: a fork bomb fails its forks until its timeout, or, like a memory hog (``dies``),
    makes the sandbox outgrow what the host gives it whole (memory, gVisor's threads), and
    the box alone ends, saying which limit it reached (docs/security.md). The host, and the
    engine's next box, carry on."""
    box = await engine.create_session(engine.spec(**LIMITS))
    with caplog.at_level(logging.WARNING, "golem.sandbox.backends.gvisor.backend"):
        try:
            result = await box.execute(ExecRequest(cmd=attack, timeout=3))
            assert not dies, f"the box outlived {attack}: {result}"
            assert (result.timed_out, result.signal) == (True, 9), result.stderr_text[-300:]
            assert (await box.execute("echo ok")).stdout_text == "ok\n"
        except BoxCrashed:
            await engine.remove_session(box.id)  # waits for the ended box's stop
            assert f"gVisor box {box.id} reached" in caplog.text
        else:
            await engine.remove_session(box.id)
    assert await host_can_spawn()
    async with engine.session() as fresh:
        assert (await fresh.execute("echo ok")).stdout_text == "ok\n"


async def test_call_that_cannot_be_tracked_is_not_left_running(engine: Engine) -> None:
    """With one pid left, the supervisor forks the call but cannot start its threads."""
    fill = (
        "import os, signal, time\n"
        "while not os.path.exists('/tmp/go'):\n    time.sleep(0.01)\n"
        "kids = []\nwhile True:\n    try:\n        pid = os.fork()\n    except OSError:\n"
        "        break\n    if pid == 0:\n        signal.pause()\n    kids.append(pid)\n"
        "os.kill(kids[-1], 9)\nos.waitpid(kids[-1], 0)\nprint('full', flush=True)\n"
        "signal.pause()\n"
    )
    async with engine.session(engine.spec(pids=32, timeout=10)) as box:
        filler = await box.start(ExecRequest(code=fill, runtime="python"))
        await box.execute("touch /tmp/go")
        output = b""
        for _ in range(10_000):
            output += (await box.read_output(filler.id, len(output))).data
            if b"full" in output:
                break
        assert b"full" in output, "the box's pids were not exhausted"
        await box.execute(ExecRequest(cmd=["sleep", "1000"], timeout=2))
        await box.forget(filler.id)
        assert [p for p in await processes(box) if p[1] == "sleep"] == []


async def test_memory_hog_is_oom_killed_and_box_survives(
    engine: Engine, backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    if backend == "gvisor":  # the whole box ends, saying its memory limit struck
        await gvisor_contains(engine, ["python3", "-c", MEMORY_HOG], caplog, dies=True)
        assert "reached its memory limit" in caplog.text
        return
    async with engine.session(engine.spec(**LIMITS)) as box:
        result = await py(box, MEMORY_HOG)
        assert (result.oom_killed, result.signal, result.timed_out) == (True, 9, False)
        assert (await box.execute("echo ok")).stdout_text == "ok\n"


# A guest of its own on microvm: in a pooled guest that a fork bomb and a first hog went
# through, this hog can thrash past the call's timeout before the guest's OOM killer strikes
# under TCG (the call is then ended and the box stopped; docs/sandbox.md).
@pytest.mark.own_engine
async def test_memory_hog_in_a_child_process_is_reported_as_oom_killed(
    engine: Engine, backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Like a test runner whose worker blows the limit: the call's own process survives."""
    runner = (
        "import subprocess, sys\n"
        "code = subprocess.call([sys.executable, '-c', sys.argv[1]])\n"
        "sys.exit(128 - code if code < 0 else code)"
    )
    if backend == "gvisor":  # no process of a gVisor box survives it: the box ends
        await gvisor_contains(engine, ["python3", "-c", runner, MEMORY_HOG], caplog, dies=True)
        assert "reached its memory limit" in caplog.text
        return
    async with engine.session(engine.spec(**LIMITS)) as box:
        result = await py(box, runner, MEMORY_HOG)
        assert result.exit_code == 137
        assert result.oom_killed, "the box's OOM killer struck, but the result does not say so"


async def test_output_flood_is_capped_in_results_and_streams(engine: Engine) -> None:
    async with engine.session(engine.spec(max_output_bytes="64k", timeout=3)) as box:
        result = await box.execute("yes & yes >&2")
        assert (result.truncated, result.timed_out) == (True, True)
        assert len(result.stdout) + len(result.stderr) <= CAP
        events = [event async for event in box.stream("yes")]
        streamed = sum(len(e.data) for e in events if isinstance(e, OutputEvent))
        assert isinstance(events[-1], ExitEvent)
        assert events[-1].truncated
        assert 0 < streamed <= CAP


async def test_cpu_spin_is_killed_at_its_timeout(box: Box) -> None:
    result = await py(box, "while True: pass", timeout=2)
    assert (result.timed_out, result.signal, result.exit_code) == (True, 9, 137)


async def test_silent_call_is_killed_by_idle_timeout(box: Box) -> None:
    result = await box.execute(ExecRequest(cmd=["sleep", "1000"], idle_timeout=1, timeout=30))
    assert (result.idle_timed_out, result.timed_out, result.signal) == (True, False, 9)


async def test_call_ignoring_sigterm_is_killed_with_sigkill(box: Box) -> None:
    result = await box.execute(ExecRequest(cmd="trap '' TERM; sleep 1000", timeout=2))
    assert (result.timed_out, result.signal) == (True, 9)
    assert [p for p in await processes(box) if p[1] == "sleep"] == []


async def test_orphaned_zombies_are_reaped(box: Box) -> None:
    code = "import os\nfor _ in range(5):\n    if os.fork() == 0:\n        os._exit(0)\n"
    assert (await py(box, code)).exit_code == 0
    zombies: list[tuple[str, str, str]] = []
    for _ in range(20):  # pid 1 of the box reaps them as soon as it runs
        zombies = [p for p in await processes(box) if p[0] == "Z"]
        if not zombies:
            break
    assert zombies == []


# Isolation --------------------------------------------------------------------------------

PROBE = """
import os, sys
modes = {"read": [os.O_RDONLY], "write": [os.O_WRONLY | os.O_CREAT]}
modes["any"] = [os.O_RDONLY, os.O_WRONLY]
for path in sys.argv[2:]:
    for flags in modes[sys.argv[1]]:
        try:
            os.close(os.open(path, flags | os.O_NONBLOCK))
            print(path)
        except OSError:
            pass
"""


async def test_host_files_are_invisible(box: Box) -> None:
    host_homes = [f"/home/{name}" for name in os.listdir("/home")]  # the host's, by name
    hidden = ["/root", "/root/.bashrc", "/work", "/var/lib/golem", "/etc/shadow", *host_homes]
    result = await py(box, PROBE, "read", "/etc/passwd", *hidden)
    assert result.stdout_text.split() == ["/etc/passwd"]


async def test_host_processes_and_environment_are_invisible(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOST_ONLY_MARKER", "host-only-7f3a")
    async with engine.session() as box:
        seen = await processes(box)
        environ = await box.execute("cat /proc/[0-9]*/environ | tr '\\0' '\\n'; env")
    assert not any("pytest" in args for _, _, args in seen)
    assert len(seen) <= 4
    assert seen[0][1] == "python3"  # pid 1 is the box's supervisor
    assert "PATH=" in environ.stdout_text
    assert "host-only-7f3a" not in environ.stdout_text


async def test_only_scratch_directories_are_writable(box: Box) -> None:
    scratch = ["/workspace/probe", "/tmp/probe", "/dev/shm/probe"]
    system = ["/probe", "/etc/probe", "/usr/probe", "/dev/probe", "/sys/probe"]
    kernel = ["/proc/sys/kernel/hostname", "/proc/sysrq-trigger"]
    result = await py(box, PROBE, "write", *system, *kernel, *scratch)
    assert result.stdout_text.split() == scratch


SYSCALL = (
    "import ctypes, sys\nlibc = ctypes.CDLL(None, use_errno=True)\nsys.exit(libc.syscall({}) < 0)"
)


@pytest.mark.parametrize(
    "attempt",
    [
        ["unshare", "-Ur", "true"],
        ["python3", "-c", SYSCALL.format("165, b'none', b'/tmp', b'tmpfs', 0, 0")],  # mount
        ["python3", "-c", "import os; os.setuid(0)"],
        ["python3", "-c", "import socket; socket.socket(40, socket.SOCK_STREAM)"],
        ["python3", "-c", SYSCALL.format("101, 16, 1, 0, 0")],  # ptrace(ATTACH, 1)
        ["python3", "-c", SYSCALL.format("250, 0, -3, 1")],  # keyctl(GET_KEYRING_ID)
        ["python3", "-c", SYSCALL.format("425, 1, ctypes.create_string_buffer(120)")],
    ],
    ids=["unshare", "mount", "setuid", "vsock", "ptrace", "keyctl", "io_uring"],
)
async def test_privilege_raising_attempts_fail(box: Box, attempt: list[str]) -> None:
    result = await box.execute(attempt)
    assert result.exit_code not in (0, 127), result.stderr_text


PRCTL = (
    "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"
    "print(libc.prctl(39, 0, 0, 0, 0), sum(libc.prctl(47, 1, c, 0, 0) == 1 for c in range(41)))"
)
"""PR_GET_NO_NEW_PRIVS, and how many capabilities are ambient (PR_CAP_AMBIENT_IS_SET; gVisor
has no ambient capabilities at all and answers it EINVAL)."""


async def test_box_has_no_capabilities_and_is_seccomp_confined(box: Box, backend: str) -> None:
    status = (await box.execute("cat /proc/self/status")).stdout_text
    fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
    for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd"):
        assert int(fields[cap], 16) == 0, cap
    assert fields["Seccomp"] == "2"
    if backend == "gvisor":  # gVisor's /proc/self/status has no CapAmb nor NoNewPrivs
        fields["NoNewPrivs"], fields["CapAmb"] = (await py(box, PRCTL)).stdout_text.split()
    assert int(fields["CapAmb"], 16) == 0
    assert fields["NoNewPrivs"] == "1"


# Network --------------------------------------------------------------------------------


@pytest_asyncio.fixture(loop_scope="session")
async def host_port() -> AsyncIterator[int]:
    """A TCP server on the host's loopback that greets whoever connects."""

    async def greet(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"host-banner\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(greet, "127.0.0.1", 0)
    async with server:
        yield server.sockets[0].getsockname()[1]


CONNECT = (
    "import socket, sys\n"
    "print(socket.create_connection(('127.0.0.1', int(sys.argv[1])), 3).recv(64))"
)
INTERFACES = "print(sorted(l.split(':')[0].strip() for l in open('/proc/net/dev').readlines()[2:]))"


async def test_network_none_reaches_neither_host_loopback_nor_dns(
    engine: Engine, host_port: int
) -> None:
    async with engine.session(engine.spec(network="none", timeout=10)) as box:
        assert (await py(box, INTERFACES)).stdout_text == "['lo']\n"
        connect = await py(box, CONNECT, str(host_port))
        assert connect.exit_code != 0
        assert "host-banner" not in connect.stdout_text
        dns = await py(box, "import socket; socket.getaddrinfo('example.com', 443)")
        assert "gaierror" in dns.stderr_text


@pytest.mark.parametrize("backend", WITH_HOST_NETWORK)
async def test_network_host_reaches_host_loopback(engine: Engine, host_port: int) -> None:
    async with engine.session(engine.spec(network="host", timeout=10)) as box:
        assert "host-banner" in (await py(box, CONNECT, str(host_port))).stdout_text


# Secrets -------------------------------------------------------------------------------


@pytest_asyncio.fixture(loop_scope="session")
async def secret_box(engine: Engine) -> AsyncIterator[Box]:
    async with engine.session(engine.spec(secrets={"TOKEN": SECRET}, timeout=10)) as box:
        yield box


SPLIT_WRITE = (
    "import os, sys\nv = os.environ['TOKEN']\n"
    "sys.stdout.write(v[:5]); sys.stdout.flush(); sys.stdout.write(v[5:])"
)


async def test_secret_is_masked_in_results_events_and_json(secret_box: Box) -> None:
    results = [
        await secret_box.execute("echo $TOKEN; echo $TOKEN >&2"),
        await py(secret_box, SPLIT_WRITE),
    ]
    assert [(r.stdout_text, r.stderr_text) for r in results] == [("***\n", "***\n"), ("***", "")]
    events = [e async for e in secret_box.stream("echo $TOKEN; echo $TOKEN >&2")]
    events += [e async for e in secret_box.stream(ExecRequest(cmd=[SECRET]))]  # cannot start
    texts = [e.text if isinstance(e, OutputEvent) else "" for e in events]
    texts += [e.message for e in events if isinstance(e, ErrorEvent)]
    dumps = [r.model_dump_json() for r in results] + [e.model_dump_json() for e in events]
    assert texts.count("***\n") == 2
    assert any(t.startswith("***:") for t in texts)
    assert not any(SECRET in text for text in texts + dumps)


async def test_secret_split_across_chunks_of_binary_output_is_masked(secret_box: Box) -> None:
    """Masking works on the bytes: a secret between bytes that are not UTF-8, its halves
    in separate writes, comes back as *** with every other byte as it was."""
    code = (
        "import os\nv = os.environ['TOKEN'].encode()\n"
        "os.write(1, b'\\xff\\xc3' + v[:5]); os.write(1, v[5:] + b'\\x80\\xe2\\x82')"
    )
    request = ExecRequest(code=code, runtime="python")
    expected = b"\xff\xc3***\x80\xe2\x82"
    assert (await secret_box.execute(request)).stdout == expected
    events = [e async for e in secret_box.stream(request)]
    assert b"".join(e.data for e in events if isinstance(e, OutputEvent)) == expected
    halves = [b"\xff\xc3" + SECRET[:5].encode(), SECRET[5:].encode() + b"\x80\xe2\x82"]
    assert b"".join(await stepped_output(secret_box, halves)) == expected  # surely 2 chunks


async def test_secret_is_masked_in_background_output(secret_box: Box) -> None:
    process = await secret_box.start(ExecRequest(code=SPLIT_WRITE, runtime="python"))
    assert await secret_box.wait(process.id, timeout=10) == 0
    assert (await secret_box.read_output(process.id)).text == "***"


async def test_secret_split_across_background_reads_is_not_revealed(secret_box: Box) -> None:
    """Reading a running process's output in steps must not hand out a secret in halves."""
    code = SPLIT_WRITE.replace("sys.stdout.write(v[5:])", "open('/tmp/go').read(); print(v[5:])")
    await secret_box.execute("mkfifo /tmp/go")
    process = await secret_box.start(ExecRequest(code=code, runtime="python"))
    for _ in range(10_000):  # until the supervisor holds the first half
        if [p.output_bytes for p in await secret_box.processes() if p.id == process.id] == [5]:
            break
    first = await secret_box.read_output(process.id)
    await secret_box.execute("echo > /tmp/go")
    assert await secret_box.wait(process.id, timeout=10) == 0
    rest = await secret_box.read_output(process.id, first.offset)
    assert SECRET not in first.text + rest.text
    assert "***" in first.text + rest.text


# The host trusts nothing from the box ---------------------------------------------------


async def test_box_processes_cannot_kill_the_supervisor(engine: Engine) -> None:
    """The supervisor is the box's pid 1: signals from inside the box do not reach it."""
    async with engine.session(engine.spec(timeout=10)) as box:
        result = await box.execute("kill -9 1; kill -9 -1; echo survived")
        assert (await box.execute("echo still-here")).stdout_text == "still-here\n"
    assert result.stdout_text == "survived\n"


async def test_a_dead_box_raises_box_crashed_and_engine_survives(engine: Engine) -> None:
    before = {info.id for info in await engine.boxes()}  # a shared engine's pooled boxes
    async with engine.session(engine.spec(timeout=10)) as box:
        record = engine.registry.load(box.id)
        assert record is not None
        kill_box_from_outside(record.state)  # the box dies under the call
        with pytest.raises(BoxCrashed, match="went away"):
            await box.execute("sleep 5")
    after = {info.id for info in await engine.boxes()}
    assert box.id not in after
    assert after <= before
    async with engine.session() as box:
        assert (await box.execute("echo ok")).stdout_text == "ok\n"


FORGE = r"""
import json, os, struct, sys, time
call_id = os.path.basename(sys.argv[0]).rsplit(".", 1)[0]
def frame(msg, payload=b""):
    body = json.dumps(msg).encode()
    return struct.pack(">II", len(body), len(payload)) + body + payload
def forge():
    # Overwrite the code that the box's pid 1 (bubblewrap, holding the host pipe as fd 1)
    # returns to after wait4 with: write(1, frames, n); for (;;) pause();
    frames = frame({"op": "out", "id": call_id, "stream": "stdout"}, b"forged\n")
    frames += frame({"op": "exit", "id": call_id, "exit_code": 0, "duration": 0.1})
    code = (b"\xb8\x01\0\0\0\xbf\x01\0\0\0\x48\x8d\x35\x10\0\0\0\xba"
            + struct.pack("<I", len(frames)) + b"\x0f\x05\xb8\x22\0\0\0\x0f\x05\xeb\xf7")
    pc = int(open("/proc/1/syscall").read().split()[-1], 16)
    with open("/proc/1/mem", "r+b", buffering=0) as mem:
        mem.seek(pc)
        mem.write(code + frames)
    if os.fork() == 0:  # an orphan that exits wakes pid 1 from wait4
        if os.fork() == 0:
            while os.getppid() != 1:
                pass
        os._exit(0)
    os.wait()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not open("/proc/1/syscall").read().startswith("34 "):
        time.sleep(0.01)
try:
    forge()
except OSError as exc:
    print("attack failed:", exc)
print("real")
sys.exit(7)
"""


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the injected code is x86-64")
async def test_box_process_cannot_forge_call_results(box: Box) -> None:
    result = await box.execute(ExecRequest(code=FORGE, runtime="python"))
    assert "forged" not in result.stdout_text
    assert (result.exit_code, result.stdout_text.splitlines()[-1:]) == (7, ["real"])


async def test_box_process_cannot_reopen_the_host_pipes(box: Box, backend: str) -> None:
    assert box._client.hello is not None  # the supervisor's pid in the box
    supervisor = box._client.hello.pid
    paths = [f"/proc/{pid}/fd/{fd}" for pid in (1, supervisor) for fd in range(8)]
    result = await py(box, PROBE, "any", *paths)
    assert result.exit_code == 0
    opened = result.stdout_text.split()
    targets = (await box.execute(["readlink", *opened])).stdout_text if opened else ""
    # pid 1 holds only /dev/null and bubblewrap's stderr. gVisor's /proc lets a box process
    # open the descriptors of its supervisor (pid 1 there) whatever its dumpable flag: the
    # supervisor's own pipes to the session's calls open, but its channel to the host is a
    # socket (``host:``), which cannot be opened through /proc.
    assert ("host:" if backend == "gvisor" else "pipe:") not in targets
    if backend == "gvisor":
        listed = await box.execute("readlink /proc/1/fd/*")
        assert "host:" in listed.stdout_text  # the channel is there, and was not opened
