"""Sandbox backends; each is imported lazily when configured."""

from __future__ import annotations

from golem.core.config import (
    BackendConfig,
    DockerBackendConfig,
    GolemConfig,
    GvisorBackendConfig,
    MicroVMBackendConfig,
    ProcessBackendConfig,
)
from golem.core.errors import ConfigError
from golem.sandbox.contracts import Backend

__all__ = ["make_backend", "make_backend_for"]


def make_backend(config: BackendConfig) -> Backend:
    """The backend a config names, importing only that one."""
    if config.type == "process":
        from golem.sandbox.backends.process import ProcessBackend  # noqa: PLC0415 - lazy

        return ProcessBackend(config)
    if config.type == "gvisor":
        from golem.sandbox.backends.gvisor import GvisorBackend  # noqa: PLC0415 - lazy

        return GvisorBackend(config)
    if config.type == "microvm":
        from golem.sandbox.backends.microvm import MicroVMBackend  # noqa: PLC0415 - lazy

        return MicroVMBackend(config)
    from golem.sandbox.backends.docker import DockerBackend  # noqa: PLC0415 - lazy

    return DockerBackend(config)


def make_backend_for(name: str, config: GolemConfig) -> Backend:
    """A backend by name with this config's settings (the default backend's, or a tier's),
    for cleaning up its boxes."""
    for configured in (config.engine.backend, *config.engine.tiers.values()):
        if configured.type == name:
            return make_backend(configured)
    if name == "process":
        return make_backend(ProcessBackendConfig())
    if name == "docker":
        return make_backend(DockerBackendConfig())
    if name == "gvisor":
        return make_backend(GvisorBackendConfig())
    if name == "microvm":
        return make_backend(MicroVMBackendConfig())
    raise ConfigError(f"box records name an unknown backend {name!r}; delete them by hand")
