"""Docker cases of bench/sandbox.py: golem's docker backend beside the engine's own floors.

* floor ``docker run --rm IMAGE true``: the CLI's whole container life cycle;
* floor ``SDK exec_run(["true"])``: an exec in a running container through the docker SDK;
* floor ``SDK create+start+exec+remove``: a fresh container per call through the SDK;
* golem ``pooled acquire + true + release``: ``engine.execute(["true"])`` on the docker
  backend with its warm pool (a wiped container of the same shape);
* golem ``true in docker box``: ``box.execute(["true"])`` in one persistent container;
* golem ``20 concurrent calls``: 20 ``box.execute(["true"])`` at once in one container
  (the time for all 20).

Targets: persistent ``true`` p50 <= 1/5 of the exec_run floor; pooled acquire+exec+release
p50 <= 1/5 of the ``docker run`` floor.
"""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Awaitable, Callable
from typing import Any

import docker

from golem.core import load_config
from golem.sandbox import LocalEngine

Case = Callable[[], Awaitable[int]]
RUN_FLOOR = "floor: docker run --rm true"
EXEC_FLOOR = "floor: SDK exec_run true"
CREATE_FLOOR = "floor: SDK create+start+exec+remove"
POOLED = "golem: pooled acquire + true + release"
IN_BOX = "golem: true in docker box"
CONCURRENT = "golem: 20 concurrent calls (all)"
TARGET_FRACTION = 5


def _sdk_cases(client: docker.DockerClient, image: str, running: Any) -> dict[str, Case]:
    async def docker_run() -> int:
        argv = ["docker", "run", "--rm", "--network", "none", image, "true"]
        return subprocess.run(argv, check=False, capture_output=True).returncode  # noqa: ASYNC221

    async def exec_run() -> int:
        return int(running.exec_run(["true"]).exit_code)

    async def create_exec_remove() -> int:
        container = client.containers.create(image, ["sleep", "60"], network_mode="none")
        try:
            container.start()
            return int(container.exec_run(["true"]).exit_code)
        finally:
            container.remove(force=True)

    return {RUN_FLOOR: docker_run, EXEC_FLOOR: exec_run, CREATE_FLOOR: create_exec_remove}


async def docker_cases(
    state_dir: str, image: str, measure: Callable[..., Awaitable[dict[str, Any]]], runs: int,
    warmup: int,
) -> dict[str, Any]:  # fmt: skip
    """Measure the docker floors and golem's docker backend with ``measure``."""
    config = load_config(
        {"state_dir": state_dir, "engine": {"backend": {"type": "docker", "image": image}}},
        files=[],
    )
    client = docker.from_env()
    running = client.containers.run(image, ["sleep", "3600"], detach=True, network_mode="none")
    try:
        async with LocalEngine(config) as engine, engine.session() as box:

            async def pooled() -> int:
                return (await engine.execute(["true"])).exit_code

            async def in_box() -> int:
                return (await box.execute(["true"])).exit_code

            async def concurrent() -> int:
                results = await asyncio.gather(*(box.execute(["true"]) for _ in range(20)))
                return max(result.exit_code for result in results)

            cases = {
                **_sdk_cases(client, image, running),
                POOLED: pooled,
                IN_BOX: in_box,
                CONCURRENT: concurrent,
            }
            return await measure(cases, runs, warmup)  # type: ignore[no-any-return]
    finally:
        running.remove(force=True)
        client.close()


def docker_targets(cases: dict[str, Any]) -> dict[str, Any]:
    """The two docker targets, as fractions of their floors."""
    persistent = cases[IN_BOX]["p50"] / cases[EXEC_FLOOR]["p50"]
    pooled = cases[POOLED]["p50"] / cases[RUN_FLOOR]["p50"]
    limit = 1 / TARGET_FRACTION
    return {
        "persistent_true_over_exec_run_p50": {
            "value": persistent, "target": limit, "met": persistent <= limit,
        },
        "pooled_over_docker_run_p50": {"value": pooled, "target": limit, "met": pooled <= limit},
    }  # fmt: skip
