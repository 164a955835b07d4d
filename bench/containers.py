"""A box's private container engine: its cold start against the box's own, on this host.

    .venv/bin/python bench/containers.py [--runs N] [--warmup W] [--json]

Cases, interleaved round by round (so load from elsewhere hits each alike), every box cold
(no warm pool; a box with containers is never pooled anyway), on the microvm backend with
golem's devbox:

* ``box: cold start``: a microVM box started and its first ``true`` answered;
* ``containers: cold start to a ready engine``: a box with ``containers`` started and its
  first ``docker info`` answered (the guest's boot, dockerd's start, golem/busybox imported);
* ``containers: docker run``: ``docker run --rm golem/busybox true`` in a live box with
  containers (a container's own start, once the engine is up);
* ``service: cold``: in the live box, a service's image built there (``FROM golem/busybox``,
  a layer of its own), then started as a run starts services (``start_services``) until
  its port answers;
* ``service: cached``: the same image loaded from an image cache archive (``load_images``
  of what ``save_images`` kept once, checked), then started until its port answers.

Each is given as p50/p99, the engine's start as a ratio to the box's own, and the cached
service's as a ratio to the cold one's. Under TCG
every figure is seconds: keep ``--runs`` small.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from golem.checks import Service, start_services
from golem.checks.services import container_name
from golem.core import load_config
from golem.core.config import MicroVMBackendConfig
from golem.sandbox import Box, LocalEngine, load_images, save_images
from golem.sandbox.probe import alone
from latency import summarize  # bench/ is on sys.path

BOX, ENGINE, RUN, COLD, CACHED = (
    "box: cold start",
    "containers: cold start to a ready engine",
    "containers: docker run",
    "service: cold (image built in the box)",
    "service: cached (image loaded from the cache)",
)
SERVICE_IMAGE = "bench/service:1"
SERVICE_DOCKERFILE = (
    "FROM golem/busybox\n"
    "RUN mkdir -p /www && dd if=/dev/urandom of=/www/payload bs=1M count=16 2>/dev/null"
    " && echo ready > /www/index.html\n"
    'CMD ["httpd", "-f", "-p", "18080", "-h", "/www"]\n'
)
SERVICE = Service(
    name="web",
    image=SERVICE_IMAGE,
    ports=[18080],
    health="wget -q -O /dev/null http://127.0.0.1:18080/",
    origin="bench",
)
CONTAINERS = {"containers": True, "pids": 1024}


async def _first_answer(engine: LocalEngine, spec: dict[str, Any], argv: list[str]) -> float:
    """Seconds from asking for a box of ``spec`` to the answer of ``argv`` in it."""
    start = time.perf_counter()
    async with engine.session(engine.spec(**spec)) as box:
        result = await box.execute(argv)
        elapsed = time.perf_counter() - start
    if result.exit_code != 0:
        raise RuntimeError(f"{argv}: exited with {result.exit_code}: {result.stderr_text}")
    return elapsed


async def _docker_run(box: Box) -> float:
    start = time.perf_counter()
    result = await box.execute(["docker", "run", "--rm", "golem/busybox", "true"])
    elapsed = time.perf_counter() - start
    if result.exit_code != 0:
        raise RuntimeError(f"docker run: exited with {result.exit_code}: {result.stderr_text}")
    return elapsed


async def _service(box: Box, archive: Path | None) -> float:
    """Seconds to a ready service: its image built in the box (``archive`` None) or loaded
    from ``archive``; the container and image removed after."""
    start = time.perf_counter()
    if archive is None:
        built = await box.execute(
            ["docker", "build", "-q", "--network", "host", "-t", SERVICE_IMAGE, "service"]
        )
        if built.exit_code != 0:
            raise RuntimeError(f"docker build: {built.stderr_text}")
    else:
        await load_images(box, _file_chunks(archive))
    failed = await start_services(box, [SERVICE])
    elapsed = time.perf_counter() - start
    if failed:
        raise RuntimeError(f"the service did not start: {failed}")
    await box.execute(["sh", "-c", f"docker rm -f {container_name(SERVICE)}"])
    await box.execute(["docker", "image", "rm", "-f", SERVICE_IMAGE])
    return elapsed


async def _file_chunks(path: Path) -> AsyncIterator[bytes]:
    with path.open("rb") as handle:
        while data := handle.read(1024 * 1024):
            yield data


async def _kept_service(box: Box, directory: str) -> Path:
    """The service's image built once and kept as the image cache keeps it."""
    await box.put_file("service/Dockerfile", SERVICE_DOCKERFILE.encode())
    built = await box.execute(
        ["docker", "build", "-q", "--network", "host", "-t", SERVICE_IMAGE, "service"]
    )
    if built.exit_code != 0:
        raise RuntimeError(f"docker build: {built.stderr_text}")
    archive = Path(directory) / "service.tar"
    await save_images(box, archive, box.limits, [SERVICE_IMAGE])
    await box.execute(["docker", "image", "rm", "-f", SERVICE_IMAGE])
    return archive


async def run_all(runs: int, warmup: int, state_dir: str) -> dict[str, Any]:
    """Every case, ``warmup`` + ``runs`` interleaved rounds."""
    base = load_config({"state_dir": state_dir}, files=[])
    config = alone(base, MicroVMBackendConfig())
    samples: dict[str, list[float]] = {BOX: [], ENGINE: [], RUN: [], COLD: [], CACHED: []}
    async with AsyncExitStack() as stack:
        engine = await stack.enter_async_context(LocalEngine(config))
        live = await stack.enter_async_context(engine.session(engine.spec(**CONTAINERS)))
        archive = await _kept_service(live, state_dir)
        for round_ in range(warmup + runs):
            took = {
                BOX: await _first_answer(engine, {}, ["true"]),
                ENGINE: await _first_answer(engine, CONTAINERS, ["docker", "info"]),
                RUN: await _docker_run(live),
                COLD: await _service(live, None),
                CACHED: await _service(live, archive),
            }
            if round_ >= warmup:
                for name, seconds in took.items():
                    samples[name].append(seconds)
        accel = engine.backend.accel  # type: ignore[attr-defined]
    cases = {name: summarize(values) for name, values in samples.items()}
    return {
        "cases": cases,
        "engine_over_box_p50": cases[ENGINE]["p50"] / cases[BOX]["p50"],
        "cached_over_cold_p50": cases[CACHED]["p50"] / cases[COLD]["p50"],
        "accel": accel,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--json", action="store_true")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="golem-bench-") as state_dir:
        report = asyncio.run(run_all(options.runs, options.warmup, state_dir))
    report["machine"] = {"cpus": os.cpu_count(), "python": sys.version.split()[0]}
    report["runs"], report["warmup"] = options.runs, options.warmup
    if options.json:
        print(json.dumps(report, indent=2))
        return
    print(f"golem containers benchmark: microvm ({report['accel']}), {os.cpu_count()} CPUs")
    print(f"{'case':<48} {'p50 ms':>10} {'p99 ms':>10} {'runs':>5}")
    for name, stats in report["cases"].items():
        print(f"{name:<48} {stats['p50']:10.0f} {stats['p99']:10.0f} {stats['runs']:5.0f}")
    print(f"engine ready / box cold start (p50): {report['engine_over_box_p50']:.2f}x")
    print(f"service cached / cold (p50): {report['cached_over_cold_p50']:.2f}x")


if __name__ == "__main__":
    main()
