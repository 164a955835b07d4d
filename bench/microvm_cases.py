"""microVM cases: golem's microvm backend beside a bare boot of the same kernel and disk.

    .venv/bin/python bench/microvm_cases.py [--cold 3] [--runs 50] [--json]

Each case is a function the all-backends bench imports (``bench/`` is on ``sys.path``):

* floor ``bare_boot``: QEMU with the same guest kernel, accelerator and root disk, and an
  initramfs of busybox and the virtio modules whose init mounts the disk and echoes on a
  virtio-serial port: the time from spawning QEMU to reading the echo;
* golem ``cold_start``: ``engine.session()`` with the pool off, to the result of its first
  ``true`` (box record, initramfs, QEMU, the guest's init, the supervisor's start-up,
  hello, configure, the call);
* golem ``warm_starts``: ``engine.session()`` taking a pooled (booted, wiped) box, until
  the session is ready, and until its first ``true`` has answered;
* golem ``true_round_trip``: ``box.execute(["true"])`` in one box;
* golem ``mib_round_trip``: 1 MiB written with ``put_file`` and read back with ``get_file``.

Goals (issue 28): a cold box within 1.5x the bare boot; a pooled box in under 10 ms.
Under TCG (no hardware virtualisation) every guest instruction is emulated: the boot and
every call inside the guest are slow, and the warm pool is what keeps a box quick.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import signal
import socket
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from golem.core import load_config
from golem.core.config import MicroVMBackendConfig
from golem.sandbox import LocalEngine
from golem.sandbox.backends.microvm import MicroVMBackend
from golem.sandbox.backends.microvm.assets import (
    BUSYBOX,
    MODULES,
    default_image,
    find_kernel,
    root_disk,
)
from golem.sandbox.backends.microvm.cpio import cpio_archive, directory, regular
from golem.sandbox.backends.microvm.qemu import Launch, qemu_argv, spawn_qemu

BARE = "floor: bare QEMU boot to a guest echo"
COLD = "golem: cold microvm box to first exec"
WARM = "golem: pooled microvm box, session ready"
WARM_EXEC = "golem: pooled microvm box to first exec"
TRUE = "golem: true in microvm box"
MIB = "golem: 1 MiB round trip (put_file + get_file)"
COLD_TARGET_RATIO = 1.5
WARM_TARGET_MS = 10.0
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


def summarize(samples: list[float]) -> dict[str, float]:
    """p50, mean, min and max of ``samples`` (seconds) in milliseconds."""
    ms = sorted(s * 1000 for s in samples)
    return {
        "p50": statistics.median(ms),
        "mean": statistics.fmean(ms),
        "min": ms[0],
        "max": ms[-1],
        "runs": len(ms),
    }


def microvm_config(state_dir: str, image: str | None = None, pool: int = 0) -> Any:
    """A config of the microvm backend (pool off unless ``pool``)."""
    backend: dict[str, Any] = {"type": "microvm"}
    if image is not None:
        backend["image"] = image
    overrides = {"state_dir": state_dir, "engine": {"backend": backend, "pool": {"clean": pool}}}
    return load_config(overrides, files=[])


async def bare_boot(settings: MicroVMBackendConfig, accel: str, image: Path | None = None) -> float:
    """Seconds from spawning QEMU (same kernel, disk, accelerator) to the guest's echo."""
    kernel = await asyncio.to_thread(find_kernel, settings)
    disk = await asyncio.to_thread(
        root_disk, image or settings.image or default_image(), settings.assets_dir
    )
    entries = [directory(name) for name in ("bin", "dev", "proc", "sys", "modules")]
    entries.append(regular("bin/busybox", BUSYBOX.read_bytes(), 0o755))
    entries.append(regular("init", BARE_INIT.encode(), 0o755))
    for name, module in zip(MODULES, kernel.modules, strict=True):
        entries.append(regular(f"modules/{name}.ko", module.read_bytes()))
    initrd = os.memfd_create("bare-initrd")
    os.write(initrd, gzip.compress(cpio_archive(entries), compresslevel=1))
    host, guest = socket.socketpair()
    launch = Launch(
        qemu=settings.qemu, accel=accel, kernel=kernel.image, initrd_fd=initrd,
        memory_mib=2048, cpus=1, channel_fd=guest.fileno(), name="bench", disk=disk,
    )  # fmt: skip
    start = time.perf_counter()
    process = await spawn_qemu(qemu_argv(launch), launch.fds, None)
    os.close(initrd)
    guest.close()
    reader, writer = await asyncio.open_unix_connection(sock=host)
    try:
        assert await reader.readexactly(len(ECHO)) == ECHO
        return time.perf_counter() - start
    finally:
        writer.close()
        if process.returncode is None:
            os.killpg(process.pid, signal.SIGKILL)
        await process.communicate()


async def cold_start(config: Any) -> tuple[float, str]:
    """Seconds from asking a pool-less engine for a session to its first ``true``, and the
    accelerator the backend chose (by booting a guest under KVM the first time on a host:
    ``measure_microvm`` makes one start before it times any)."""
    async with LocalEngine(config) as engine:
        backend = engine.backend
        assert isinstance(backend, MicroVMBackend)
        start = time.perf_counter()
        async with engine.session() as box:
            await box.execute(["true"])
            elapsed = time.perf_counter() - start
        assert backend.accel is not None
        return elapsed, backend.accel


async def warm_starts(config: Any, runs: int) -> tuple[list[float], list[float]]:
    """Seconds from asking a pooled engine for a session until it is ready (a booted,
    wiped guest configured for it), and until its first ``true`` has answered, each."""
    ready, answered = [], []
    async with LocalEngine(config) as engine:
        await engine.start(prewarm=True)
        for _ in range(runs):
            start = time.perf_counter()
            async with engine.session() as box:
                ready.append(time.perf_counter() - start)
                await box.execute(["true"])
                answered.append(time.perf_counter() - start)
    return ready, answered


async def in_box(config: Any, runs: int) -> tuple[list[float], list[float]]:
    """``true`` round trips and 1 MiB put+get round trips in one box."""
    payload = os.urandom(1024 * 1024)
    trues, mibs = [], []
    async with LocalEngine(config) as engine, engine.session() as box:
        for _ in range(runs):
            start = time.perf_counter()
            await box.execute(["true"])
            trues.append(time.perf_counter() - start)
            start = time.perf_counter()
            await box.put_file("mib", payload)
            assert await box.get_file("mib") == payload
            mibs.append(time.perf_counter() - start)
    return trues, mibs


async def measure_microvm(
    cold: int = 3, runs: int = 50, image: str | None = None
) -> dict[str, Any]:
    """Every case, in one run: the figures by case name, the accelerator and the goals."""
    with tempfile.TemporaryDirectory(prefix="golem-bench-microvm-") as state:
        config = microvm_config(state, image)
        settings = config.engine.backend
        await cold_start(config)  # the accelerator's decision, the disk, the page cache
        bare, colds = [], []
        for _ in range(cold):  # interleaved: load from elsewhere hits both alike
            elapsed, accel = await cold_start(config)
            colds.append(elapsed)
            bare.append(await bare_boot(settings, accel, Path(image) if image else None))
        warm, warm_exec = await warm_starts(microvm_config(state, image, pool=1), runs)
        trues, mibs = await in_box(config, runs)
    figures = {
        BARE: summarize(bare), COLD: summarize(colds), WARM: summarize(warm),
        WARM_EXEC: summarize(warm_exec), TRUE: summarize(trues), MIB: summarize(mibs),
    }  # fmt: skip
    ratio = figures[COLD]["p50"] / figures[BARE]["p50"]
    return {
        "accel": accel,
        "cases": figures,
        "cold_over_bare": ratio,
        "goals": {
            f"cold <= {COLD_TARGET_RATIO}x bare": ratio <= COLD_TARGET_RATIO,
            f"pooled < {WARM_TARGET_MS} ms": figures[WARM]["p50"] < WARM_TARGET_MS,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold", type=int, default=3, help="cold boots (and bare boots)")
    parser.add_argument("--runs", type=int, default=50, help="warm starts and round trips")
    parser.add_argument("--image", help="root file system directory (default: the devbox)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(measure_microvm(args.cold, args.runs, args.image))
    if args.json:
        print(json.dumps(result, indent=2))
        return
    print(f"microvm ({result['accel']})")
    for name, stats in result["cases"].items():
        print(f"  {name:48} p50 {stats['p50']:10.1f} ms  min {stats['min']:10.1f} ms")
    print(f"  cold / bare: {result['cold_over_bare']:.2f}")
    for goal, met in result["goals"].items():
        print(f"  {goal}: {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    main()
