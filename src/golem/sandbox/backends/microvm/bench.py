"""The microvm backend's floor for the isolation bench: a bare QEMU boot to a guest echo.

The same QEMU command line, guest kernel, accelerator, VM size, host user and read-only
root disk as a default box, with an initramfs of busybox and the virtio modules only: its
init loads the modules, mounts the root disk, writes a word on the virtio-serial port and
powers off. What golem adds on top (its init's box set-up, the supervisor's start-up and
hello, the box's configuration) is what a cold box costs over this floor.

``bench/isolation.py`` holds the microvm backend against ``bare_boot``.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import os
import signal
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path

from golem.core.config import MicroVMBackendConfig
from golem.core.spec import BoxSpec
from golem.sandbox.backends.microvm.assets import BUSYBOX, MODULES, find_kernel
from golem.sandbox.backends.microvm.backend import MicroVMBackend, vm_cpus, vm_memory_mib
from golem.sandbox.backends.microvm.cpio import cpio_archive, directory, regular
from golem.sandbox.backends.microvm.qemu import Launch, qemu_argv, spawn_qemu

__all__ = ["ECHO", "bare_boot"]

ECHO = b"golem-bare-echo"
BARE_INIT = f"""#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sysfs /sys; mount -t devtmpfs devtmpfs /dev
for m in {" ".join(MODULES)}; do insmod /modules/$m.ko; done
until [ -b /dev/vda ] && ls /sys/class/virtio-ports/*/name >/dev/null 2>&1; do usleep 1000; done
mkdir /root-disk; mount -t ext4 -o ro,noload /dev/vda /root-disk
for p in /sys/class/virtio-ports/*; do port=/dev/${{p##*/}}; done
until [ -c "$port" ]; do usleep 1000; done
printf {ECHO.decode()} > "$port"
poweroff -f
"""


def bare_boot(
    config: MicroVMBackendConfig | None = None, image: Path | None = None
) -> Callable[[], Awaitable[int]]:
    """A floor case: each call boots a bare guest and answers 0 once its echo arrived (1
    when none did within ``boot_timeout``). Raises BackendUnavailable at once when this
    host lacks QEMU, busybox or the guest kernel. The first call decides the accelerator
    (by booting a guest, as the backend does) and builds the root disk: a warm-up round."""
    settings = config or MicroVMBackendConfig()
    backend = MicroVMBackend(settings)
    backend.check()
    kernel = find_kernel(settings)
    spec = BoxSpec(image=str(image) if image is not None else None)
    entries = [directory(name) for name in ("bin", "dev", "proc", "sys", "modules")]
    entries.append(regular("bin/busybox", BUSYBOX.read_bytes(), 0o755))
    entries.append(regular("init", BARE_INIT.encode(), 0o755))
    for name, module in zip(MODULES, kernel.modules, strict=True):
        entries.append(regular(f"modules/{name}.ko", module.read_bytes()))
    initramfs = gzip.compress(cpio_archive(entries), compresslevel=1)

    async def boot() -> int:
        guest = await backend.prepare(spec)
        initrd = os.memfd_create("bare-initrd")
        os.write(initrd, initramfs)
        host, peer = socket.socketpair()
        launch = Launch(
            qemu=settings.qemu,
            accel=guest.accel,
            kernel=kernel.image,
            initrd_fd=initrd,
            memory_mib=vm_memory_mib(spec),
            cpus=vm_cpus(spec),
            channel_fd=peer.fileno(),
            name="bench",
            disk=guest.disk,
        )
        try:
            process = await spawn_qemu(qemu_argv(launch), launch.fds, backend.host_ids())
        finally:
            os.close(initrd)
            peer.close()
        reader, writer = await asyncio.open_unix_connection(sock=host)
        try:
            async with asyncio.timeout(settings.boot_timeout):
                return 0 if await reader.readexactly(len(ECHO)) == ECHO else 1
        except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
            return 1
        finally:
            writer.close()
            if process.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
            await process.communicate()

    return boot
