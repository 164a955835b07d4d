"""Starting the services the checks need (``RepoConventions.services``) in a box that has
a container engine of its own: each as ``docker run -d --network host``, so that it
listens on the box's own loopback, as a CI runner's services listen on localhost; ready
when its health command passes in it, else when its ports answer."""

from __future__ import annotations

import re
import shlex

from golem.checks.contracts import Service
from golem.core.spec import WORKSPACE
from golem.sandbox import Box, ExecRequest

__all__ = ["SERVICE_READY_TIMEOUT", "container_name", "reach", "start_services"]

SERVICE_READY_TIMEOUT = 300
"""Seconds a service may take to be ready (a database's first start under emulation)."""
_UNSAFE = re.compile(r"[^a-zA-Z0-9_.-]")


def container_name(service: Service) -> str:
    """The name its container gets in the box's engine."""
    return "golem-service-" + _UNSAFE.sub("-", service.name)[:40]


def reach(service: Service) -> str:
    """How a command in the box reaches it, in words."""
    where = ", ".join(f"localhost:{port}" for port in service.ports) or "the box's loopback"
    return f"{service.name} ({service.image}): {where}"


async def start_services(box: Box, services: list[Service]) -> dict[str, str]:
    """Start ``services`` in ``box``'s engine and wait until each is ready; why each one
    that could not start or get ready did not, by name (empty: all are up)."""
    failed: dict[str, str] = {}
    for service in services:
        if not service.image:
            failed[service.name] = service.why
            continue
        result = await box.execute(
            ExecRequest(
                cmd=["sh", "-c", _script(service)],
                workdir=WORKSPACE,
                timeout=SERVICE_READY_TIMEOUT + 120,
            )
        )
        if result.exit_code != 0:
            tail = " ".join((result.stderr_text or result.stdout_text).split())[-300:]
            failed[service.name] = f"{service.image}: {tail or f'exit {result.exit_code}'}"
    return failed


def _script(service: Service) -> str:
    name = container_name(service)
    run = ["docker", "run", "-d", "--name", name, "--network", "host"]
    for key, value in service.env.items():
        run += ["-e", f"{key}={value}"]
    run += [service.image, *service.command]
    ready = _ready(service, name)
    return "\n".join(
        [
            f"docker rm -f {name} >/dev/null 2>&1",
            f"{shlex.join(run)} >/dev/null || exit 1",
            "i=0",
            f"until {ready}; do",
            f"  i=$((i+1)); if [ $i -ge {SERVICE_READY_TIMEOUT} ]; then",
            f"    echo 'not ready after {SERVICE_READY_TIMEOUT}s:' >&2",
            f"    docker logs --tail 20 {name} >&2; exit 1",
            "  fi",
            f"  [ \"$(docker inspect -f '{{{{.State.Running}}}}' {name})\" = true ] ||"
            f" {{ echo 'it exited:' >&2; docker logs --tail 20 {name} >&2; exit 1; }}",
            "  sleep 1",
            "done",
        ]
    )


def _ready(service: Service, name: str) -> str:
    if service.health:
        return f"docker exec {name} sh -c {shlex.quote(service.health)} >/dev/null 2>&1"
    if service.ports:
        probes = [
            f"bash -c {shlex.quote(f'echo > /dev/tcp/127.0.0.1/{port}')} 2>/dev/null"
            for port in service.ports
        ]
        return " && ".join(probes)
    return "true"
