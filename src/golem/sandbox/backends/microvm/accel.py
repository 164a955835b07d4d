"""KVM or TCG: decided by booting a guest, once per host, never by /dev/kvm alone.

Some hosts expose a KVM device whose guests never boot (software nested virtualisation
without the instructions a stock kernel uses). ``auto`` boots golem's guest kernel under
KVM once, with a short time limit, and remembers the answer in ``assets_dir`` under a key
of the host (machine id, kernel release), QEMU and the guest kernel; where that guest does
not reach its init, boxes run under TCG emulation: correct, about ten times slower.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import secrets
import signal
import socket
from pathlib import Path

from golem.sandbox.backends.microvm.cpio import cpio_archive, regular
from golem.sandbox.backends.microvm.qemu import Launch, box_parameters, qemu_argv, spawn_qemu

__all__ = ["PROBE_TIMEOUT", "TCG_NOTICE", "boot_probe", "remember", "remembered"]

PROBE_TIMEOUT = 20.0
"""A guest under working KVM reaches its init in about a second."""
PROBE_MEMORY_MIB = 256
TCG_NOTICE = (
    "microVM boxes run under TCG emulation (this host has no KVM a guest boots with): "
    "a cold box takes seconds to boot and its programs run about ten times slower; the "
    "warm pool hides the boot"
)


def host_key(qemu: str, kernel: Path) -> str:
    """What the decision depends on: this host, its kernel, QEMU and the guest kernel."""
    parts = [os.uname().release]
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        with contextlib.suppress(OSError):
            parts.append(Path(path).read_text().strip())
            break
    for path in (qemu, str(kernel)):
        with contextlib.suppress(OSError):
            info = os.stat(path)
            parts.append(f"{path}:{info.st_size}:{info.st_mtime_ns}")
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def remembered(assets_dir: Path, key: str) -> str | None:
    """The accelerator decided earlier for ``key``, if any."""
    try:
        value = json.loads((assets_dir / "accel.json").read_text()).get(key)
    except (OSError, ValueError, AttributeError):
        return None
    return value if value in ("kvm", "tcg") else None


def remember(assets_dir: Path, key: str, accel: str) -> None:
    """Keep the decision for ``key``."""
    path = assets_dir / "accel.json"
    try:
        known = json.loads(path.read_text())
    except (OSError, ValueError):
        known = {}
    if not isinstance(known, dict):
        known = {}
    known[key] = accel
    partial = path.with_name(f".accel.{os.getpid()}")
    partial.write_text(json.dumps(known))
    partial.replace(path)


async def boot_probe(
    launch: Launch, base: bytes, ids: tuple[int, int] | None, timeout: float
) -> bool:
    """Whether a guest of ``launch``'s kernel and accelerator reaches golem's init within
    ``timeout`` seconds (it answers on its port, then powers off)."""
    magic = "golem-probe-" + secrets.token_hex(8)
    params: dict[str, str | int] = {"PROBE": 1, "MAGIC": magic}
    archive = cpio_archive([regular("golem/params", box_parameters(params))])
    initrd = os.memfd_create("golem-initrd")
    os.write(initrd, base + archive)
    host, guest = socket.socketpair()
    launch = Launch(
        qemu=launch.qemu,
        accel=launch.accel,
        kernel=launch.kernel,
        initrd_fd=initrd,
        memory_mib=PROBE_MEMORY_MIB,
        cpus=1,
        channel_fd=guest.fileno(),
        name="probe",
    )
    try:
        process = await spawn_qemu(qemu_argv(launch), launch.fds, ids)
    finally:
        guest.close()
        os.close(initrd)
    try:
        reader, writer = await asyncio.open_unix_connection(sock=host)
        try:
            async with asyncio.timeout(timeout):
                answer = await reader.readexactly(len(magic))
            return answer == magic.encode()
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
            return False
        finally:
            writer.close()
    finally:
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
        await process.communicate()
