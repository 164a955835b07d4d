"""The microvm backend's own boundary: a QEMU guest with a kernel of its own, no network
device, no monitor, a console that only carries the guest kernel's log, one port per host
socket, and orphans that `prune` finds by their record or pidfile.

The engine's contract and the in-box attacks run on microvm with every other backend
(test_exec, test_files, test_security, ...); these are the attacks only a VM has.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest
import pytest_asyncio

from golem.core import GolemConfig, InvalidRequest, SandboxError, load_config
from golem.core.errors import BackendUnavailable, BoxCrashed, ImageNotFound
from golem.core.spec import MAX_CPUS, MAX_PIDS, MAX_SIZE
from golem.sandbox import Box, Engine, ExecRequest, LocalEngine
from golem.sandbox.backends.microvm import MicroVMBackend, MicroVMBox
from golem.sandbox.backends.microvm.accel import boot_probe
from golem.sandbox.backends.microvm.assets import base_initramfs, find_kernel, root_disk
from golem.sandbox.backends.microvm.egress import PortMux
from golem.sandbox.backends.microvm.qemu import Launch, qemu_argv
from golem.sandbox.records import process_alive
from golem.sandbox.supervisor.box.portmux import (
    CLOSE,
    DATA,
    EOF,
    HEADER,
    MAX_CHANNELS,
    OPEN,
    WINDOW,
    frame,
)
from tests.cli.invoke import isolated_env
from tests.conftest import SHARED_LOOP, SYNC_ON_SHARED_LOOP, backend_settings
from tests.sandbox.minimal_image import build_minimal_image

pytestmark = [pytest.mark.microvm, SHARED_LOOP]


@pytest.fixture
def backend() -> str:
    return "microvm"


def started(box: Box) -> MicroVMBox:
    """The backend's side of a local box."""
    vm = box._started  # type: ignore[attr-defined]
    assert isinstance(vm, MicroVMBox)
    return vm


async def py(box: Box, code: str, **request: object) -> str:
    result = await box.execute(ExecRequest(cmd=["python3", "-c", code], **request))  # type: ignore[arg-type]
    return result.stdout_text + result.stderr_text


# The guest -----------------------------------------------------------------------------


async def test_a_box_runs_a_kernel_that_is_not_the_hosts_and_says_how(
    engine: Engine, box: Box
) -> None:
    release = (await box.execute("uname -r")).stdout_text.strip()
    version = (await box.execute("cat /proc/version")).stdout_text
    assert release
    assert release != platform.release()
    assert version != Path("/proc/version").read_text()
    assert "cloud" in release  # Debian's cloud kernel, not the host's
    record = engine.registry.load(box.id)  # type: ignore[attr-defined]
    assert record is not None
    assert record.backend == "microvm"
    assert record.state["accel"] == started(box).accel
    assert started(box).accel in ("kvm", "tcg")


async def test_a_guest_under_tcg_has_x86_64_v2_and_no_vector_unit_tcg_emulates_slowly(
    box: Box,
) -> None:
    """Debian's programs need x86-64-v2's instructions; code that picks its path by CPUID
    must not be handed AVX (emulated slowest) or 5-level paging (a longer walk per miss)."""
    if started(box).accel != "tcg":
        pytest.skip("the guest has the host's CPU under KVM")
    flags = set((await box.execute("grep -m1 ^flags /proc/cpuinfo")).stdout_text.split())
    assert {"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"} <= flags
    assert not {"avx", "avx2", "avx512f", "fma", "la57"} & flags


async def test_the_guest_has_no_network_device_whatever_its_mode(engine: Engine) -> None:
    names = "import socket; print(sorted(n for _, n in socket.if_nameindex()))"
    for mode in ("none", "filtered"):
        async with engine.session(engine.spec(network=mode)) as box:
            assert (await py(box, names)).strip() == "['lo']", mode


@pytest_asyncio.fixture(loop_scope="session")
async def host_listeners() -> AsyncIterator[list[tuple[str, int]]]:
    """A TCP server on every address of this host, greeting whoever connects."""

    async def greet(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"host-banner\n")
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(greet, "0.0.0.0", 0)  # noqa: S104 - the target
    port = server.sockets[0].getsockname()[1]
    addresses = {"127.0.0.1", "10.0.2.2", "10.0.2.3", "192.168.122.1", "172.17.0.1"}
    with contextlib.suppress(OSError):
        addresses |= {str(info[4][0]) for info in socket.getaddrinfo(socket.gethostname(), None)}
    async with server:
        yield [(address, port) for address in sorted(addresses) if ":" not in address]


ATTEMPTS = """
import socket, sys
reached = []
for target in sys.argv[1:]:
    host, port = target.rsplit(":", 1)
    for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
        s = socket.socket(socket.AF_INET, kind)
        s.settimeout(2)
        try:
            s.connect((host, int(port)))
            if kind == socket.SOCK_STREAM and s.recv(20):
                reached.append(target)
        except OSError:
            pass
        s.close()
print("reached", reached)
"""


async def test_a_filtered_box_reaches_no_host_address_only_its_proxy(
    engine: Engine, host_listeners: list[tuple[str, int]]
) -> None:
    targets = [f"{host}:{port}" for host, port in host_listeners]
    async with engine.session(engine.spec(network="filtered", timeout=60)) as box:
        result = await box.execute(ExecRequest(cmd=["python3", "-c", ATTEMPTS, *targets]))
        assert result.stdout_text == "reached []\n", result.stderr_text
        proxy = await box.execute("curl -s -o /dev/null -w '%{http_code}' http://unlisted.test/")
        assert proxy.stdout_text == "403"  # the proxy answers, and refuses


async def test_the_egress_port_cannot_be_opened_by_the_box(engine: Engine) -> None:
    """The supervisor holds the port; a virtio port has one opener at a time."""
    code = (
        "import os\ntry:\n    os.open('/run/golem/egress.sock', os.O_RDWR)\n"
        "    print('opened')\nexcept OSError as e:\n    print('refused', e.errno)\n"
    )
    async with engine.session(engine.spec(network="filtered")) as box:
        assert (await py(box, code)).startswith("refused")


async def test_the_box_reaches_neither_console_nor_ports_nor_a_monitor_even_as_root(
    engine: Engine,
) -> None:
    """The box's /dev has no console, serial port, virtio port or disk, and without
    capabilities even its root can make none; QEMU has no monitor to reach anyway."""
    code = """
import os
found = []
for path in ("/dev/console", "/dev/ttyS0", "/dev/hvc0", "/dev/vport0p1", "/dev/vda",
             "/dev/kmsg", "/dev/mem", "/dev/port"):
    try:
        os.close(os.open(path, os.O_RDWR))
        found.append(path)
    except OSError:
        pass
for major, minor in ((4, 64), (5, 1), (1, 11), (245, 1)):
    try:
        os.mknod("/tmp/node", 0o20600, os.makedev(major, minor))
        found.append(f"mknod {major}:{minor}")
        os.unlink("/tmp/node")
    except OSError:
        pass
for command in (b"\\x01c", b"quit\\n", b'{"execute": "quit"}\\n', b"\\x01x"):
    for fd in (1, 2):
        os.write(fd, command)
print("found", found)
"""
    async with engine.session(engine.spec(user="root")) as box:
        result = await box.execute(ExecRequest(cmd=["python3", "-c", code]))
        assert "found []" in result.stdout_text, result.stderr_text
        assert (await box.execute("echo alive")).stdout_text == "alive\n"
        assert started(box).process.returncode is None


@SYNC_ON_SHARED_LOOP
def test_qemu_gets_no_monitor_no_network_no_default_device_and_its_own_sandbox() -> None:
    launch = Launch(
        qemu="qemu-system-x86_64", accel="tcg", kernel=Path("/k"), initrd_fd=3, memory_mib=256,
        cpus=1, channel_fd=4, name="box-x", disk=Path("/d,isk"), socket_fds=[("golem.1", 5)],
    )  # fmt: skip
    argv = qemu_argv(launch)
    assert "-nodefaults" in argv
    assert not {"-monitor", "-qmp", "-netdev", "-nic", "-net", "-chardev stdio"} & set(argv)
    assert argv[argv.index("-serial") + 1] == "stdio"  # not mon:stdio: no escape to a monitor
    assert argv[argv.index("-sandbox") + 1].startswith("on,")
    assert "spawn=deny" in argv[argv.index("-sandbox") + 1]
    assert "file=/d,,isk" in " ".join(argv)  # a comma in a path cannot add an option


@SYNC_ON_SHARED_LOOP
def test_under_tcg_the_guest_gets_westmere_and_its_engine_disk_no_host_flushes() -> None:
    """Under KVM the guest gets the host's CPU; its root disk is read-only whatever the
    cache mode, and only the engine's nameless disk skips flushes."""
    launch = Launch(
        qemu="qemu-system-x86_64", accel="tcg", kernel=Path("/k"), initrd_fd=3, memory_mib=256,
        cpus=1, channel_fd=4, name="box-x", disk=Path("/d"), engine_disk_fd=6,
    )  # fmt: skip
    argv = qemu_argv(launch)
    assert argv[argv.index("-cpu") + 1] == "Westmere"
    [root, engine] = [argv[i + 1] for i, arg in enumerate(argv) if arg == "-drive"]
    assert "readonly=on" in root
    assert "cache=" not in root
    assert engine.startswith("file=/dev/fd/6,")
    assert "cache=unsafe" in engine
    kvm = qemu_argv(dataclasses.replace(launch, accel="kvm"))
    assert kvm[kvm.index("-cpu") + 1] == "host"


async def test_the_console_tail_in_errors_carries_no_control_characters(engine: Engine) -> None:
    """The guest kernel logs the names of processes it kills, and a box names them."""
    name = "\x1b]0;owned\x07\x1b[2J\nfake"
    hog = (
        "import ctypes\nlibc = ctypes.CDLL(None)\n"
        f"libc.prctl(15, ctypes.c_char_p({name.encode()!r}), 0, 0, 0)\n"
        "x = []\nwhile True:\n    x.append(bytearray(16 * 1024 * 1024))\n"
    )
    async with engine.session(engine.spec(memory="160m", timeout=60)) as box:
        result = await box.execute(ExecRequest(cmd=["python3", "-c", hog]))
        assert result.oom_killed
        text = started(box).describe_loss()
    assert "Killed process" in text
    assert not any(c != "\n" and not c.isprintable() for c in text)


# The egress port's host side -------------------------------------------------------------


@pytest.fixture
def echo_socket() -> Iterator[Path]:
    """Where the echo server standing for the egress proxy listens."""
    directory = Path(tempfile.mkdtemp(prefix="golem-mux-"))
    yield directory / "proxy.sock"
    shutil.rmtree(directory, ignore_errors=True)


@pytest_asyncio.fixture(loop_scope="session")
async def mux_and_guest(
    echo_socket: Path,
) -> AsyncIterator[tuple[PortMux, asyncio.StreamReader, asyncio.StreamWriter]]:
    """A PortMux on the host's end of a socket pair, and the guest's end to attack it."""

    async def echo(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        writer.close()

    server = await asyncio.start_unix_server(echo, str(echo_socket), backlog=1024)
    host, guest = socket.socketpair()
    mux = PortMux(host, echo_socket)
    await mux.start()
    reader, writer = await asyncio.open_unix_connection(sock=guest)
    yield mux, reader, writer
    writer.close()
    await mux.close()
    server.close()


async def read_frame(reader: asyncio.StreamReader) -> tuple[int, int, bytes]:
    kind, number, length = HEADER.unpack(await reader.readexactly(HEADER.size))
    return kind, number, await reader.readexactly(length) if kind == DATA else b""


async def test_the_host_end_of_the_port_carries_channels_to_the_socket(
    mux_and_guest: tuple[PortMux, asyncio.StreamReader, asyncio.StreamWriter],
) -> None:
    _mux, reader, writer = mux_and_guest
    writer.write(frame(OPEN, 7) + frame(DATA, 7, b"ping") + frame(EOF, 7))
    got = b""
    while True:
        kind, number, payload = await read_frame(reader)
        assert number == 7
        if kind == DATA:
            got += payload
        if kind == EOF:
            break
    assert got == b"ping"


async def test_a_channel_past_its_window_is_closed_and_others_go_on(
    mux_and_guest: tuple[PortMux, asyncio.StreamReader, asyncio.StreamWriter],
) -> None:
    """The proxy stands still (no credit comes back while the guest ignores the echo):
    what the host holds of a channel is bounded by the window."""
    _mux, reader, writer = mux_and_guest
    writer.write(frame(OPEN, 1))
    chunk = b"x" * 32 * 1024
    for _ in range(WINDOW // len(chunk) * 64):
        writer.write(frame(DATA, 1, chunk))
    writer.write(frame(OPEN, 2) + frame(DATA, 2, b"still") + frame(EOF, 2))
    closed, echoed = False, b""
    while not (closed and echoed == b"still"):
        kind, number, payload = await read_frame(reader)
        closed |= (kind, number) == (CLOSE, 1)
        if (kind, number) == (DATA, 2):
            echoed += payload
    assert closed


async def test_channels_past_the_most_are_refused(
    mux_and_guest: tuple[PortMux, asyncio.StreamReader, asyncio.StreamWriter],
) -> None:
    _mux, reader, writer = mux_and_guest
    for number in range(1, MAX_CHANNELS + 2):
        writer.write(frame(OPEN, number))
    refused = []
    while not refused:
        kind, number, _ = await read_frame(reader)
        if kind == CLOSE:
            refused.append(number)
    assert refused == [MAX_CHANNELS + 1]


@pytest.mark.parametrize(
    "garbage",
    [HEADER.pack(99, 1, 0), HEADER.pack(DATA, 1, 1 << 30), b"\xff" * HEADER.size],
    ids=["unknown-kind", "huge-data", "noise"],
)
async def test_a_frame_no_supervisor_sends_ends_the_port(
    mux_and_guest: tuple[PortMux, asyncio.StreamReader, asyncio.StreamWriter], garbage: bytes
) -> None:
    mux, _reader, writer = mux_and_guest
    writer.write(frame(OPEN, 1) + garbage)
    await writer.drain()
    assert mux._task is not None
    await mux._task  # the port is done: it reads nothing more


# Spec, assets, accelerator -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"network": "host"}, "no box the host's network"),
        ({"read_only_root": False}, "read-only"),
    ],
)
async def test_what_a_microvm_cannot_give_is_refused_with_a_fix(
    engine: Engine, fields: dict[str, object], words: str
) -> None:
    with pytest.raises(InvalidRequest, match=words):
        await engine.execute("true", engine.spec(**fields))


async def test_a_box_of_every_largest_size_boots_and_gets_them(engine: Engine) -> None:
    """The spec's bounds against a VM: more memory or cpus than the host has is the host's,
    and the guest's cgroup and tmpfs take the rest as they are."""
    largest = engine.spec(
        memory=MAX_SIZE, cpus=MAX_CPUS, pids=MAX_PIDS, tmp_size=MAX_SIZE,
        workspace_size=MAX_SIZE,
    )  # fmt: skip
    async with engine.session(largest) as box:
        result = await box.execute(
            "nproc; cat /sys/fs/cgroup/pids.max /sys/fs/cgroup/memory.max; df -B1 --output=size"
            " /workspace /tmp | tail -2"
        )
    lines = result.stdout_text.split()
    assert int(lines[0]) == os.cpu_count()
    assert lines[1:3] == [str(MAX_PIDS), str(MAX_SIZE)]
    assert all(int(size) > 1024**3 for size in lines[3:5]), lines


async def test_a_missing_image_says_how_to_make_one(engine: Engine, tmp_path: Path) -> None:
    with pytest.raises(ImageNotFound, match="golem image bootstrap --no-docker"):
        await engine.execute("true", engine.spec(image=str(tmp_path / "no-such-root")))


async def test_a_host_directory_is_never_shared_with_the_guest(
    engine: Engine, tmp_path: Path
) -> None:
    with pytest.raises(InvalidRequest, match="shares no host directory"):
        await engine.execute("true", engine.spec(workspace=tmp_path))


@SYNC_ON_SHARED_LOOP
def test_a_root_disk_is_built_once_per_tree(tmp_path: Path) -> None:
    image = build_minimal_image(tmp_path / "image")
    assets = tmp_path / "assets"
    first = root_disk(image, assets)
    built = first.stat().st_mtime_ns
    assert root_disk(image, assets) == first
    assert first.stat().st_mtime_ns == built  # not built again
    (image / "etc" / "added").write_text("new\n")
    assert root_disk(image, assets) != first
    done = subprocess.run(
        ["debugfs", "-R", "cat /etc/added", str(root_disk(image, assets))],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.stdout == "new\n"


async def test_an_image_without_what_the_guest_needs_fails_with_what_is_missing(
    config: GolemConfig, tmp_path: Path
) -> None:
    image = build_minimal_image(tmp_path / "image")  # python3 and sh: no setpriv, no env
    async with LocalEngine(config) as engine:
        with pytest.raises(SandboxError, match="no /usr/bin/setpriv"):
            await engine.execute("true", engine.spec(image=str(image), timeout=30))


async def test_a_boot_probe_tells_a_guest_that_boots_from_one_that_does_not(
    config: GolemConfig, tmp_path: Path
) -> None:
    settings = config.engine.backend
    assert settings.type == "microvm"
    kernel = await asyncio.to_thread(find_kernel, settings)
    base = await asyncio.to_thread(base_initramfs, kernel)
    launch = Launch(
        qemu=settings.qemu, accel="tcg", kernel=kernel.image, initrd_fd=0, memory_mib=256,
        cpus=1, channel_fd=0, name="probe",
    )  # fmt: skip
    assert await boot_probe(launch, base, None, 120)
    not_a_kernel = tmp_path / "vmlinuz-not"
    not_a_kernel.write_bytes(os.urandom(4096))
    broken = dataclasses.replace(launch, kernel=not_a_kernel)
    assert not await boot_probe(broken, base, None, 120)


async def test_a_box_engines_modules_come_each_after_what_it_depends_on(
    config: GolemConfig,
) -> None:
    """insmod loads no dependency: the initramfs lists the engine's modules (compose's
    bridge and veth, nf_tables' NAT for its DNS) after every module each names."""
    settings = config.engine.backend
    assert settings.type == "microvm"
    kernel = await asyncio.to_thread(find_kernel, settings)
    names = [module.name.removesuffix(".ko") for module in kernel.engine_modules]
    files = {path.name.removesuffix(".ko") for path in kernel.image.parent.parent.rglob("*.ko")}

    assert {"overlay", "bridge", "veth", "nft_chain_nat", "nft_compat", "xt_nat"} <= set(names)
    for at, module in enumerate(kernel.engine_modules):
        [depends] = re.findall(rb"\0depends=([^\0]*)\0", module.read_bytes())
        needed = [name for name in depends.decode().split(",") if name in files]
        assert set(needed) <= set(names[:at]), (module.name, needed, names[:at])


async def test_a_host_whose_qemu_boots_no_guest_is_refused_saying_why(config: GolemConfig) -> None:
    settings = config.engine.backend
    assert settings.type == "microvm"
    broken = settings.model_copy(update={"qemu": "/bin/false", "accel": "tcg"})
    with pytest.raises(BackendUnavailable, match=r"under tcg did not reach golem's init") as raised:
        await MicroVMBackend(broken).boot_check()
    assert "this host cannot run microVMs with /bin/false" in raised.value.message


# Orphans -------------------------------------------------------------------------------------


OWNER = """
import asyncio, sys
from golem.core import load_config
from golem.sandbox import LocalEngine

async def main():
    engine = LocalEngine(load_config(files=[]))
    box = await engine.create_session(engine.spec(timeout=10))
    print(box.id, flush=True)
    await asyncio.to_thread(sys.stdin.read)

asyncio.run(main())
"""


async def until(condition: Callable[[], bool], what: str, within: float = 60.0) -> None:
    """Wait for ``condition`` (looked at every 10 ms), failing after ``within`` seconds."""
    for _ in range(int(within * 100)):
        if condition():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"{what}: not within {within}s")


async def test_a_killed_golems_guest_dies_with_it_and_prune_removes_what_is_left(
    config: GolemConfig, tmp_path: Path
) -> None:
    settings = backend_settings("microvm")
    assert settings is not None
    env = isolated_env(config, tmp_path)
    env["GOLEM_ENGINE__BACKEND__TYPE"] = "microvm"
    env["GOLEM_ENGINE__BACKEND__IMAGE"] = str(settings["image"])
    owner = await asyncio.create_subprocess_exec(
        sys.executable, "-c", OWNER, env=env, cwd=tmp_path,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert owner.stdout is not None
    box_id = (await owner.stdout.readline()).decode().strip()
    async with LocalEngine(config) as engine:
        record = engine.registry.load(box_id)
        assert record is not None
        pid, start = record.state["pid"], record.state["pid_start"]
        pidfile = Path(record.state["pidfile"])
        assert process_alive(pid, start)
        assert pidfile.is_file()
        owner.kill()
        await owner.wait()
        await until(lambda: not process_alive(pid, start), "QEMU outlived its golem")
        assert [info.id for info in await engine.prune()] == [box_id]
        assert await engine.boxes() == []
    assert not pidfile.exists()


async def test_cleanup_finds_a_guest_by_its_pidfile_when_its_record_has_no_state(
    engine: Engine,
) -> None:
    """golem killed between starting QEMU and saving the box's record leaves a record
    without the pid: the pidfile has it."""
    async with engine.session() as box:
        record = engine.registry.load(box.id)  # type: ignore[attr-defined]
        assert record is not None
        pid, start = record.state["pid"], record.state["pid_start"]
        bare = record.model_copy(update={"state": {}})
        await engine.backend.cleanup(bare)  # type: ignore[attr-defined]
        with pytest.raises(BoxCrashed, match="went away"):
            await box.execute("sleep 5")
    assert not process_alive(pid, start)
    assert not Path(record.state["pidfile"]).exists()


async def test_cleanup_never_kills_a_process_that_only_reuses_a_guests_pid(
    engine: Engine,
) -> None:
    sleeper = await asyncio.create_subprocess_exec("sleep", "60", start_new_session=True)
    try:
        record = engine.registry.new_record("box-not-a-guest", "microvm")  # type: ignore[attr-defined]
        record.state = {"pid": sleeper.pid, "pid_start": None}
        await engine.backend.cleanup(record)  # type: ignore[attr-defined]
        assert sleeper.returncode is None
        assert process_alive(sleeper.pid, None)
    finally:
        sleeper.kill()
        await sleeper.wait()


@SYNC_ON_SHARED_LOOP
def test_the_microvm_config_takes_its_settings() -> None:
    config = load_config(
        {"engine": {"backend": {"type": "microvm", "accel": "tcg", "boot_timeout": 30}}}, files=[]
    )
    assert config.engine.backend.type == "microvm"
    assert config.engine.backend.accel == "tcg"
