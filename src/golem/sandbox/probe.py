"""Which backends work on this host, and how fast a box of each starts: for `golem doctor`
and the isolation bench. Each backend is tried by starting a real box (a microVM by
booting one) and running a first call in it; one that cannot run here is said so with its
backend's own reason, at once (its check fails before any box is started). Backends are
imported only when tried (``make_backend``)."""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from golem.core.config import BackendConfig, DockerBackendConfig, GolemConfig
from golem.core.errors import ConfigError, GolemError
from golem.core.isolation import IsolationTier, tier_of
from golem.sandbox.engine import LocalEngine

__all__ = [
    "PROBE_TIMEOUT",
    "Candidate",
    "Probe",
    "alone",
    "backend_config",
    "candidates",
    "probe",
    "probe_all",
]

PROBE_TIMEOUT = 300.0
"""Seconds a backend gets to start its box and answer (a microVM under TCG boots slowly)."""
RUNSC = "runsc"
BACKEND = TypeAdapter[BackendConfig](BackendConfig)


@dataclass(frozen=True)
class Candidate:
    """A backend to try: its name as `golem doctor` shows it, and its configuration."""

    name: str
    settings: dict[str, Any] = field(default_factory=dict)


def podman_socket() -> str:
    """Podman's Docker-compatible socket: root's, or the user's (rootless)."""
    if os.geteuid() == 0:
        return "unix:///run/podman/podman.sock"
    runtime = os.environ.get("XDG_RUNTIME_DIR") or f"/run/user/{os.geteuid()}"
    return f"unix://{runtime}/podman/podman.sock"


def candidates(config: GolemConfig) -> list[Candidate]:
    """Every backend golem knows, each with this configuration's settings where it names
    that backend (its image, bubblewrap, engine socket...)."""
    configured = [config.engine.backend, *config.engine.tiers.values()]
    docker = next((c for c in configured if c.type == "docker"), DockerBackendConfig())
    base = docker.model_dump(exclude={"docker_host", "runtime"})
    engine = {"docker_host": docker.docker_host}
    podman = {"docker_host": podman_socket()}
    runsc = {"runtime": RUNSC}
    own: dict[str, dict[str, Any]] = {c.type: c.model_dump() for c in configured}
    return [
        Candidate("process", own.get("process", {"type": "process"})),
        Candidate("docker", {**base, **engine}),
        Candidate("podman", {**base, **podman}),
        Candidate("gvisor", own.get("gvisor", {"type": "gvisor"})),
        Candidate("docker+runsc", {**base, **engine, **runsc}),
        Candidate("podman+runsc", {**base, **podman, **runsc}),
        Candidate("microvm", own.get("microvm", {"type": "microvm"})),
    ]


class Probe(BaseModel):
    """What trying one backend found."""

    name: str
    tier: IsolationTier | None = Field(None, description="The tier it isolates at.")
    works: bool = False
    why_not: str | None = Field(None, description="Why it does not work here.")
    start_seconds: float | None = Field(
        None, description="A box started (no warm pool) and its first call answered."
    )
    kernel: str | None = Field(None, description="The box's kernel (uname -r).")
    own_kernel: bool | None = Field(None, description="Whether it is not the host's kernel.")
    accel: str | None = Field(None, description="A microVM's accelerator: kvm or tcg.")


def backend_config(candidate: Candidate) -> BackendConfig:
    """The candidate's backend configuration; ConfigError when this golem has no such
    backend (its type is not one the configuration knows)."""
    try:
        return BACKEND.validate_python(candidate.settings)
    except ValidationError:
        kind = candidate.settings.get("type", candidate.name)
        raise ConfigError(f"this golem has no {kind} backend") from None


def alone(base: GolemConfig, backend: BackendConfig, *, pooled: int = 0) -> GolemConfig:
    """``base`` with ``backend`` as its only backend and ``pooled`` warm boxes per shape
    (0: every box a cold start)."""
    engine = base.engine.model_copy(
        update={
            "backend": backend,
            "tiers": {},
            "pool": base.engine.pool.model_copy(update={"clean": pooled}),
            "defaults": base.engine.defaults.model_copy(update={"tier": None}),
        }
    )
    return base.model_copy(update={"engine": engine})


async def probe(
    candidate: Candidate, config: GolemConfig, *, timeout: float = PROBE_TIMEOUT
) -> Probe:
    """Try ``candidate``: its backend's check, then a box started and ``uname -r`` run."""
    try:
        backend = backend_config(candidate)
    except ConfigError as exc:
        return Probe(name=candidate.name, why_not=exc.message)
    found = Probe(name=candidate.name, tier=tier_of(backend))
    engine: LocalEngine | None = None
    try:
        async with asyncio.timeout(timeout):
            engine = LocalEngine(alone(config, backend))
            await asyncio.to_thread(engine.backend.check)
            began = time.perf_counter()
            async with engine.session() as box:
                result = await box.execute("uname -r")
                found.start_seconds = time.perf_counter() - began
                found.accel = box.isolation.accel if box.isolation is not None else None
    except TimeoutError:
        found.why_not = f"no box answered within {timeout:g}s"
    except GolemError as exc:
        found.why_not = exc.message
    except Exception as exc:
        found.why_not = f"{type(exc).__name__}: {exc}"
    else:
        found.kernel = result.stdout_text.strip()
        found.own_kernel = found.kernel != os.uname().release
        found.works = result.exit_code == 0 and (found.own_kernel or found.tier == "container")
        if result.exit_code != 0:
            found.why_not = f"uname -r failed in the box: {result.stderr_text.strip()[:200]}"
        elif not found.works:
            found.why_not = (
                f"its box runs the host's kernel, not the {found.tier} tier's: the engine "
                "did not use what was configured (an OCI runtime it ignores?)"
            )
    finally:
        if engine is not None:
            await engine.close()
    return found


async def probe_all(
    config: GolemConfig, names: list[str] | None = None, *, timeout: float = PROBE_TIMEOUT
) -> list[Probe]:
    """Every candidate (or those ``names``), one after the other: boxes started at once
    would time each other."""
    chosen = [c for c in candidates(config) if names is None or c.name in names]
    return [await probe(candidate, config, timeout=timeout) for candidate in chosen]
