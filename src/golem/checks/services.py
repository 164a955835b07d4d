"""Starting the services the checks need (``RepoConventions.services``) in a box that has
a container engine of its own: each as ``docker run -d --network host`` would, so that it
listens on the box's own loopback, as a CI runner's services listen on localhost; ready
when its health command passes in it, else when its ports answer, probed every
``PROBE_INTERVAL`` seconds until a deadline in seconds on the guest's monotonic clock
(``/proc/uptime``), not a count of probes: a probe that takes seconds under emulation
does not stretch the limit.

The script (``START``) asks the engine's API with curl (create, start, exec, inspect),
not the docker CLI: under emulation a Go client takes seconds of the guest's CPU to start,
once per probe. Only a service whose image the engine lacks runs ``docker pull`` (through
the box's egress proxy), and only a failure ``docker logs``."""

from __future__ import annotations

import json
import re

from golem.checks.contracts import Service
from golem.core.spec import WORKSPACE
from golem.sandbox import Box, ExecRequest

__all__ = ["SERVICE_READY_TIMEOUT", "container_name", "reach", "start_services"]

SERVICE_READY_TIMEOUT = 300
"""Seconds a service may take to be ready (a database's first start under emulation)."""
PROBE_INTERVAL = 0.2
"""Seconds between two probes of a service that is not ready yet."""
_UNSAFE = re.compile(r"[^a-zA-Z0-9_.-]")


def container_name(service: Service) -> str:
    """The name its container gets in the box's engine."""
    return "golem-service-" + _UNSAFE.sub("-", service.name)[:40]


def reach(service: Service) -> str:
    """How a command in the box reaches it, in words."""
    where = ", ".join(f"localhost:{port}" for port in service.ports) or "the box's loopback"
    return f"{service.name} ({service.image}): {where}"


async def start_services(
    box: Box, services: list[Service], *, ready_within: float = SERVICE_READY_TIMEOUT
) -> dict[str, str]:
    """Start ``services`` in ``box``'s engine and wait until each is ready, at most
    ``ready_within`` seconds each (0: not at all, every service fails at once); why each
    one that could not start or get ready did not, by name (empty: all are up)."""
    failed: dict[str, str] = {}
    for service in services:
        if not service.image:
            failed[service.name] = service.why
            continue
        result = await box.execute(
            ExecRequest(
                cmd=["sh", "-c", START, "sh", *_arguments(service, ready_within)],
                workdir=WORKSPACE,
                timeout=ready_within + 120,
            )
        )
        if result.exit_code != 0:
            tail = " ".join((result.stderr_text or result.stdout_text).split())[-300:]
            failed[service.name] = f"{service.image}: {tail or f'exit {result.exit_code}'}"
    return failed


START = r"""
name=$1 image=$2 body=$3 probe=$4 limit=$5 interval=$6; shift 6; ports=$*
engine=http://engine
out=/tmp/.golem-service-$name
api() { curl -sS --unix-socket /run/docker.sock "$@"; }
create() {
    api -o "$out" -w "%{http_code}" -X POST -H "Content-Type: application/json" \
        --data-binary "$body" "$engine/containers/create?name=$name"
}
code=$(create)
if [ "$code" = 409 ]; then  # a container of that name from an earlier start
    api -o /dev/null -X DELETE "$engine/containers/$name?force=1"; code=$(create)
fi
if [ "$code" = 404 ]; then  # an image the engine lacks, pulled through the egress proxy
    docker pull -q "$image" >/dev/null || exit 1; code=$(create)
fi
[ "$code" = 201 ] || { echo "its container was not made: $(cat "$out")" >&2; exit 1; }
api -f -o /dev/null -X POST "$engine/containers/$name/start" || {
    echo "it did not start:" >&2; docker logs --tail 20 "$name" >&2; exit 1; }
ready() {
    if [ -n "$probe" ]; then
        api -X POST -H "Content-Type: application/json" --data-binary "$probe" \
            "$engine/containers/$name/exec" >"$out" || return 1
        id=$(sed -n 's/.*"Id":"\([0-9a-f]*\)".*/\1/p' "$out")
        [ -n "$id" ] && api -f -o /dev/null -X POST -H "Content-Type: application/json" \
            -d '{"Detach":true}' "$engine/exec/$id/start" || return 1
        while api "$engine/exec/$id/json" >"$out" && grep -q '"Running":true' "$out"; do
            sleep "$interval"
        done
        grep -q '"ExitCode":0[,}]' "$out"
    else
        for port in $ports; do
            bash -c "echo > /dev/tcp/127.0.0.1/$port" 2>/dev/null || return 1
        done
    fi
}
now() { read -r up _ </proc/uptime; echo "$up"; }
deadline=$(awk -v t="$(now)" -v l="$limit" 'BEGIN { print t + l }')
until ready; do
    if awk -v t="$(now)" -v d="$deadline" 'BEGIN { exit !(t >= d) }'; then
        echo "not ready within $limit s: look at its health command and its logs below" \
            "(a slow first start under emulation may need a lighter one):" >&2
        docker logs --tail 20 "$name" >&2; exit 1
    fi
    api "$engine/containers/$name/json" | grep -q '"Running":true' || {
        echo "it exited:" >&2; docker logs --tail 20 "$name" >&2; exit 1; }
    sleep "$interval"
done
"""
"""Start one service and wait until it is ready: its name, image, the container's
settings (the API's JSON), its health command's exec (JSON, or "" to probe its ports),
the limit and the probe interval in seconds, then its ports."""


def _arguments(service: Service, ready_within: float) -> list[str]:
    """``START``'s arguments for ``service``."""
    settings: dict[str, object] = {
        "Image": service.image,
        "Env": [f"{key}={value}" for key, value in service.env.items()],
        "HostConfig": {"NetworkMode": "host"},
    }
    if service.command:
        settings["Cmd"] = service.command
    probe = {"Cmd": ["sh", "-c", service.health]} if service.health else None
    return [
        container_name(service),
        service.image or "",
        json.dumps(settings),
        json.dumps(probe) if probe else "",
        f"{ready_within:g}",
        f"{PROBE_INTERVAL:g}",
        *(str(port) for port in service.ports),
    ]
