"""QEMU's command line for a box (a pure function of what the box is made of) and its start.

The guest gets no network device, no display, no monitor and no default device: a root
disk (read-only), the disk of the box's container engine when it has one (writable, a
nameless file of the box's own), a virtio-serial controller whose ports are the supervisor's channel
(``golem.0``) and one port per host socket the box may reach (``golem.N``), and a serial
console that carries the guest kernel's log to the host and nothing back. QEMU runs as an
unprivileged host user in QEMU's own seccomp sandbox (no exec, no privilege changes).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from golem.core.errors import BackendUnavailable

__all__ = ["KERNEL_ARGS", "Launch", "box_parameters", "qemu_argv", "spawn_qemu"]

KERNEL_ARGS = (
    "console=ttyS0 quiet panic=-1 reboot=t mitigations=off tsc=reliable no_timer_check "
    "random.trust_cpu=on"
)
"""Log to the serial console; on panic, power off at once (with -no-reboot: QEMU exits)."""
SANDBOX = "on,obsolete=deny,elevateprivileges=deny,spawn=deny,resourcecontrol=deny"
"""QEMU's seccomp filter: no obsolete system calls, no set*id, no fork or exec, no
scheduler or resource changes."""
CHANNEL_PORT = "golem.0"
TB_MIB = 256
TCG_CPU = "Westmere"
"""The virtual CPU under TCG emulation: x86-64-v2 (what Debian's programs need) with AES-NI
and PCLMULQDQ (TCG runs them as helpers in C, faster than a guest's software AES), and
none of what ``max`` adds that TCG emulates slowly or that costs every guest more: no AVX
or AVX2 (glibc, Go and OpenSSL pick them by CPUID; ``docker load`` took 0.63x the guest
CPU time of ``max``), no XSAVE (larger state at every context switch), no 5-level paging
(a longer page walk at every TLB miss). bench/microvm_cpu.py measures it against ``max``."""
ENGINE_DISK_CACHE = "unsafe"
"""The engine disk's cache mode: its flushes are not passed to the host's disk. The disk is
a nameless file that dies with the VM, so nothing on it outlives a host crash anyway."""


@dataclass(frozen=True)
class Launch:
    """Everything one QEMU process is started with."""

    qemu: str
    accel: str  # "kvm" or "tcg"
    kernel: Path
    initrd_fd: int
    memory_mib: int
    cpus: int
    channel_fd: int
    name: str
    disk: Path | None = None
    socket_fds: Sequence[tuple[str, int]] = field(default_factory=tuple)  # (port name, fd)
    pidfile: Path | None = None
    engine_disk_fd: int | None = None  # the disk of the box's container engine, if any

    @property
    def fds(self) -> list[int]:
        """Descriptors QEMU inherits."""
        fds = [self.initrd_fd, self.channel_fd, *(fd for _, fd in self.socket_fds)]
        return fds if self.engine_disk_fd is None else [*fds, self.engine_disk_fd]


def qemu_argv(launch: Launch) -> list[str]:
    """QEMU's arguments for ``launch``."""
    # TCG's translated code is the largest part of QEMU's memory: bounded at 256 MiB
    accel = "kvm" if launch.accel == "kvm" else f"tcg,thread=multi,tb-size={TB_MIB}"
    argv = [
        launch.qemu,
        "-name",
        f"golem-{launch.name},process=golem-vm",
        "-machine",
        "q35",  # QEMU's microvm machine stalls under TCG (TSC calibration)
        "-accel",
        accel,
        "-cpu",
        "host" if launch.accel == "kvm" else TCG_CPU,
        "-m",
        str(launch.memory_mib),
        "-smp",
        str(launch.cpus),
        "-nodefaults",
        "-no-user-config",
        "-display",
        "none",
        "-no-reboot",
        "-serial",
        "stdio",
        "-kernel",
        str(launch.kernel),
        "-initrd",
        f"/dev/fd/{launch.initrd_fd}",
        "-append",
        KERNEL_ARGS,
        "-sandbox",
        SANDBOX,
    ]
    if launch.disk is not None:
        argv += [
            "-drive",
            f"file={_escaped(launch.disk)},if=none,id=root,format=raw,readonly=on",
            "-device",
            "virtio-blk-pci,drive=root",
        ]
    if launch.engine_disk_fd is not None:  # after the root disk: the guest's /dev/vdb
        argv += [
            "-drive",
            f"file=/dev/fd/{launch.engine_disk_fd},if=none,id=engine,format=raw,"
            f"discard=unmap,cache={ENGINE_DISK_CACHE}",
            "-device",
            "virtio-blk-pci,drive=engine",
        ]
    ports = [(CHANNEL_PORT, launch.channel_fd), *launch.socket_fds]
    argv += ["-device", f"virtio-serial-pci,max_ports={len(ports) + 1}"]
    for number, (port, fd) in enumerate(ports):
        argv += ["-chardev", f"socket,id=port{number},fd={fd}"]
        argv += ["-device", f"virtserialport,chardev=port{number},name={port}"]
    if launch.pidfile is not None:
        argv += ["-pidfile", str(launch.pidfile)]
    return argv


def _escaped(path: Path) -> str:
    """A path as a QEMU option value (a comma is written twice)."""
    return str(path).replace(",", ",,")


def box_parameters(values: dict[str, str | int]) -> bytes:
    """/golem/params: shell assignments the guest's init sources (every value quoted)."""
    lines = []
    for name, value in values.items():
        if not name.isidentifier() or not name.isupper():
            raise ValueError(f"parameter names are upper-case identifiers: {name!r}")
        lines.append(f"{name}={shlex.quote(str(value))}\n")
    return "".join(lines).encode()


async def spawn_qemu(
    argv: list[str], fds: list[int], ids: tuple[int, int] | None
) -> asyncio.subprocess.Process:
    """Start QEMU in a session of its own, killed when golem ends (setpriv's pdeathsig, set
    after it drops to the host user ``ids``, when golem is root); its stdout is the guest's
    console. A QEMU that outlives golem anyway is found by `golem prune`."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        raise BackendUnavailable("setpriv (util-linux) is missing; install util-linux")
    prefix = [setpriv, "--pdeathsig", "SIGKILL"]
    if ids is not None:
        uid, gid = ids
        prefix += [f"--reuid={uid}", f"--regid={gid}", *_kvm_group()]
    try:
        return await asyncio.create_subprocess_exec(
            *prefix,
            "--",
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            pass_fds=fds,
            start_new_session=True,
            cwd="/",
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"},
        )
    except OSError as exc:
        raise BackendUnavailable(f"cannot start {argv[0]}: {exc}; run scripts/setup") from exc


def _kvm_group() -> list[str]:
    """setpriv's groups: the group of /dev/kvm, when there is one (KVM only then)."""
    try:
        gid = os.stat("/dev/kvm").st_gid
    except OSError:
        return ["--clear-groups"]
    return [f"--groups={gid}"] if gid else ["--clear-groups"]
