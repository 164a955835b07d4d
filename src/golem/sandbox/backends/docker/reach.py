"""Whether a container engine's unix socket accepts a connection, checked with a socket of
golem's own before the Docker SDK connects: the SDK leaves its socket open when a unix
socket's connect fails (Python warns about it later, wherever the garbage collector runs)."""

from __future__ import annotations

import os
import socket

__all__ = ["DEFAULT_ENGINE", "engine_url", "unix_refusal"]

DEFAULT_ENGINE = "unix:///var/run/docker.sock"
PROBE_TIMEOUT = 5.0


def engine_url(base_url: str | None = None) -> str:
    """The engine a client of ``base_url`` talks to: it, DOCKER_HOST, or dockerd's socket."""
    return base_url or os.environ.get("DOCKER_HOST") or DEFAULT_ENGINE


def unix_refusal(base_url: str | None = None) -> str | None:
    """Why nothing accepts connections on the engine's unix socket; None when something
    does, or when the engine is not reached by a unix socket (the SDK then connects)."""
    url = engine_url(base_url)
    if not url.startswith("unix://"):
        return None
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(PROBE_TIMEOUT)
        try:
            probe.connect(url.removeprefix("unix://"))
        except OSError as exc:
            return f"{url}: {exc.strerror or exc}"
    return None
