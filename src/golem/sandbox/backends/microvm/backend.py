"""The microvm backend: each box is a QEMU virtual machine with a kernel of its own.

The guest boots Debian's cloud kernel directly (no firmware menu, no bootloader) with a
small initramfs whose init mounts golem's image as a read-only ext4 disk, lays the box's
tmpfs over it (/workspace, /tmp, /dev/shm: the copy-on-write layer is guest memory, never
a file on the host) and becomes the supervisor on a virtio-serial port. A host socket a
box may reach (its egress proxy) is another port, which the supervisor multiplexes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import pwd
import secrets
import shutil
import signal
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from golem.core.config import MicroVMBackendConfig
from golem.core.errors import BackendUnavailable, InvalidRequest, SandboxError
from golem.core.spec import BoxSpec
from golem.sandbox.backends.microvm import accel as accelerators
from golem.sandbox.backends.microvm.assets import (
    GuestKernel,
    base_initramfs,
    box_archive,
    default_image,
    find_kernel,
    root_disk,
)
from golem.sandbox.backends.microvm.egress import PortMux
from golem.sandbox.backends.microvm.engine_disk import engine_disk
from golem.sandbox.backends.microvm.qemu import Launch, qemu_argv, spawn_qemu
from golem.sandbox.backends.microvm.vm import Console, MicroVMBox
from golem.sandbox.contracts import Mount
from golem.sandbox.records import BoxRecord, process_alive, process_start_time

__all__ = ["GUEST_MEMORY", "Guest", "MicroVMBackend", "MicroVMBox", "vm_cpus", "vm_memory_mib"]

log = logging.getLogger(__name__)

GUEST_MEMORY = 128 * 1024**2
"""The guest kernel's own memory, on top of the box's: the box (its processes, the
supervisor, its tmpfs) gets ``memory`` through the guest's memory cgroup, as elsewhere."""
DEFAULT_MEMORY = 2 * 1024**3


@dataclass(frozen=True)
class Guest:
    """What every box of one image boots: kernel, shared initramfs, root disk, accel."""

    kernel: GuestKernel
    base: bytes
    disk: Path
    accel: str


class MicroVMBackend:
    """Starts boxes as QEMU virtual machines."""

    name = "microvm"

    def __init__(self, config: MicroVMBackendConfig) -> None:
        self.config = config
        self._kernel: GuestKernel | None = None
        self._disks: dict[Path, Path] = {}
        self._accel: str | None = None
        self._prepared: asyncio.Lock | None = None

    @property
    def accel(self) -> str | None:
        """The accelerator boxes run under, once known (after the first start)."""
        return self._accel

    def close(self) -> None:
        """Nothing to release: QEMU processes belong to their boxes."""

    def check(self) -> None:
        """Fail with what to install when QEMU or busybox is missing."""
        if shutil.which(self.config.qemu) is None:
            raise BackendUnavailable(
                f"QEMU ({self.config.qemu}) is not installed; run scripts/setup or "
                "`apt-get install qemu-system-x86`"
            )
        if not Path("/bin/busybox").is_file():
            raise BackendUnavailable(
                "busybox is not installed; run scripts/setup or `apt-get install busybox-static`"
            )

    # What boxes boot -------------------------------------------------------------------

    async def prepare(self, spec: BoxSpec) -> Guest:
        """What a box of ``spec`` boots (kernel, initramfs, root disk, accelerator), each
        built or decided once."""
        if self._prepared is None:
            self._prepared = asyncio.Lock()
        async with self._prepared:  # one build of each asset, however many boxes start
            if self._kernel is None:
                self._kernel = await asyncio.to_thread(find_kernel, self.config)
            kernel = self._kernel
            base = await asyncio.to_thread(base_initramfs, kernel)
            image = Path(spec.image) if spec.image else self.config.image or default_image()
            disk = self._disks.get(image)
            if disk is None:
                disk = await asyncio.to_thread(root_disk, image, self.config.assets_dir)
                self._disks[image] = disk
            if self._accel is None:
                self._accel = await self._decide_accel(kernel, base)
        return Guest(kernel, base, disk, self._accel)

    async def boot_check(self) -> str:
        """Whether this host runs microVMs, decided by booting one: a guest of golem's
        kernel and initramfs (no box, no disk) under the accelerator boxes would get must
        reach golem's init within ``boot_timeout``. Returns that accelerator; raises
        BackendUnavailable saying why not."""
        self.check()
        kernel = await asyncio.to_thread(find_kernel, self.config)
        base = await asyncio.to_thread(base_initramfs, kernel)
        accel = await self._decide_accel(kernel, base)
        launch = self._launch(accel, kernel, 0, 0, "probe")
        timeout = self.config.boot_timeout
        if not await accelerators.boot_probe(launch, base, self.host_ids(), timeout):
            raise BackendUnavailable(
                f"a guest of {kernel.image} under {accel} did not reach golem's init within "
                f"{timeout:g}s (engine.backend.boot_timeout): this host cannot run microVMs "
                f"with {self.config.qemu}; use another backend, or another kernel or QEMU"
            )
        return accel

    async def _decide_accel(self, kernel: GuestKernel, base: bytes) -> str:
        if self.config.accel != "auto":
            return self.config.accel
        key = accelerators.host_key(self.config.qemu, kernel.image)
        known = accelerators.remembered(self.config.assets_dir, key)
        if known is None:
            known = "tcg"
            if os.path.exists("/dev/kvm"):  # needed, never enough: a guest must boot
                launch = self._launch("kvm", kernel, 0, 0, "probe")
                ids = self.host_ids()
                booted = await accelerators.boot_probe(
                    launch, base, ids, accelerators.PROBE_TIMEOUT
                )
                known = "kvm" if booted else "tcg"
            accelerators.remember(self.config.assets_dir, key, known)
        if known == "tcg":
            log.warning(accelerators.TCG_NOTICE)
        return known

    def _launch(
        self,
        accel: str,
        kernel: GuestKernel,
        initrd: int,
        channel: int,
        name: str,
        *,
        memory_mib: int = accelerators.PROBE_MEMORY_MIB,
        cpus: int = 1,
        disk: Path | None = None,
        socket_fds: Sequence[tuple[str, int]] = (),
        engine_disk_fd: int | None = None,
    ) -> Launch:
        return Launch(
            qemu=self.config.qemu,
            accel=accel,
            kernel=kernel.image,
            initrd_fd=initrd,
            memory_mib=memory_mib,
            cpus=cpus,
            channel_fd=channel,
            name=name,
            disk=disk,
            socket_fds=tuple(socket_fds),
            engine_disk_fd=engine_disk_fd,
        )

    def host_ids(self) -> tuple[int, int] | None:
        """QEMU's user and group when golem runs as root (``run_as``); None otherwise."""
        if os.geteuid() != 0:
            return None
        try:
            entry = pwd.getpwnam(self.config.run_as)
        except KeyError:
            raise BackendUnavailable(
                f"host user {self.config.run_as!r} (engine.backend.run_as) does not exist; "
                "create it or name another unprivileged user"
            ) from None
        if entry.pw_uid == 0:
            raise BackendUnavailable("engine.backend.run_as must not be a root user")
        return entry.pw_uid, entry.pw_gid

    # Boxes -------------------------------------------------------------------------------

    @staticmethod
    def _check_spec(spec: BoxSpec) -> None:
        if not spec.read_only_root:
            raise InvalidRequest(
                "the microvm backend keeps the root file system read-only; write to "
                "/workspace or /tmp, or use --backend docker for a writable root"
            )
        if spec.workspace is not None:
            raise InvalidRequest(
                "the microvm backend shares no host directory with its guest; leave the "
                "workspace unset and copy files in and out (runs do), or use --backend process"
            )
        if spec.network == "host":
            raise InvalidRequest(
                "the microvm backend gives no box the host's network; use network "
                "'filtered' (golem's egress proxy) or 'none'"
            )

    async def start(
        self, spec: BoxSpec, record: BoxRecord, mounts: Sequence[Mount] = ()
    ) -> MicroVMBox:
        """Boot a guest whose box's first process is the supervisor."""
        self.check()
        self._check_spec(spec)
        ids = self.host_ids()
        guest = await self.prepare(spec)
        magic = "golem-ready-" + secrets.token_hex(8)
        archive, sockets = box_archive(
            spec, magic, mounts, python=self.config.python, seccomp=self.config.seccomp
        )
        disk = None
        if spec.containers:
            size = self.config.containers_disk
            disk = await asyncio.to_thread(engine_disk, self._run_dir(), size, ids)
        initrd = os.memfd_create("golem-initrd")
        channel_host, channel_guest = socket.socketpair()
        pairs = [socket.socketpair() for _ in sockets]
        try:
            os.write(initrd, guest.base + archive)
            ports = [
                (port, pair[1].fileno()) for (port, _), pair in zip(sockets, pairs, strict=True)
            ]
            launch = self._launch(
                guest.accel,
                guest.kernel,
                initrd,
                channel_guest.fileno(),
                record.id,
                disk=guest.disk,
                memory_mib=vm_memory_mib(spec),
                cpus=vm_cpus(spec),
                socket_fds=ports,
                engine_disk_fd=disk,
            )
            process = await spawn_qemu(qemu_argv(launch), launch.fds, ids)
        except BaseException:
            channel_host.close()
            for host, _ in pairs:
                host.close()
            raise
        finally:
            os.close(initrd)
            if disk is not None:  # QEMU holds it now; the host never opens it again
                os.close(disk)
            channel_guest.close()
            for _, guest_end in pairs:
                guest_end.close()
        assert process.stdout is not None
        console = Console(process.stdout)
        muxes = [PortMux(host, path) for (host, _), (_, path) in zip(pairs, sockets, strict=True)]
        try:
            pidfile = self._write_pidfile(record.id, process.pid)
            streams = await asyncio.open_unix_connection(sock=channel_host, limit=1 << 20)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
            await console.close()
            raise
        record.state = {
            "pid": process.pid,
            "pid_start": process_start_time(process.pid),
            "accel": guest.accel,
            "pidfile": str(pidfile),
        }
        box = MicroVMBox(process, streams, guest.accel, console, muxes, pidfile)
        try:
            await self._booted(box, magic)
            for mux in muxes:
                await mux.start()
        except BaseException:
            await box.stop()
            raise
        return box

    async def _booted(self, box: MicroVMBox, magic: str) -> None:
        """Wait for the guest's init to say it hands the port to the supervisor."""
        timeout = self.config.boot_timeout
        try:
            async with asyncio.timeout(timeout):
                said = await box.reader.readexactly(len(magic))
        except TimeoutError:
            raise SandboxError(
                f"the microVM ({box.accel}) did not boot within {timeout:g}s "
                f"(engine.backend.boot_timeout): {box.describe_loss()}"
            ) from None
        except (asyncio.IncompleteReadError, ConnectionError):
            await box.process.wait()
            raise SandboxError(f"the microVM did not boot: {box.describe_loss()}") from None
        if said != magic.encode():
            raise SandboxError("the microVM's init answered with something else; see its console")

    def _run_dir(self) -> Path:
        run = self.config.assets_dir / "run"
        run.mkdir(parents=True, exist_ok=True, mode=0o700)
        return run

    def _write_pidfile(self, box_id: str, pid: int) -> Path:
        """Where ``prune`` finds a box's QEMU even if golem died before saving its record."""
        path = self._run_dir() / f"{box_id}.pid"
        path.write_text(f"{pid} {process_start_time(pid)}\n")
        return path

    async def cleanup(self, record: BoxRecord) -> None:
        """Kill an orphan's QEMU (found by its record, or by its pidfile)."""
        pidfile = self._run_dir() / f"{record.id}.pid"
        pid, start = record.state.get("pid"), record.state.get("pid_start")
        if not isinstance(pid, int):
            with contextlib.suppress(OSError, ValueError):
                first, second = pidfile.read_text().split()
                pid, start = int(first), None if second == "None" else int(second)
        if isinstance(pid, int) and process_alive(pid, start) and _runs_box(pid, record.id):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
        with contextlib.suppress(FileNotFoundError):
            pidfile.unlink()


def _runs_box(pid: int, box_id: str) -> bool:
    """Whether ``pid`` is the QEMU of box ``box_id`` (a reused pid is not)."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return f"golem-{box_id},process=golem-vm".encode() in argv


def vm_memory_mib(spec: BoxSpec) -> int:
    """The VM's size: the box's memory and the guest kernel's own, at most three quarters
    of the host's memory (QEMU maps it whole, and the kernel refuses a mapping past what
    the host has; a box that asks more has the VM's)."""
    host = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    wanted = (spec.memory or DEFAULT_MEMORY) + GUEST_MEMORY
    return math.ceil(min(wanted, host * 3 // 4) / 1024**2)


def vm_cpus(spec: BoxSpec) -> int:
    """The VM's virtual CPUs: the box's cpus rounded up, at most the host's."""
    host = os.cpu_count() or 1
    return host if spec.cpus is None else max(1, min(host, math.ceil(spec.cpus)))
