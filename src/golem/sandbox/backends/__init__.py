"""Sandbox backends; each is imported lazily when configured."""

from __future__ import annotations

from golem.core.config import BackendConfig
from golem.sandbox.contracts import Backend

__all__ = ["make_backend"]


def make_backend(config: BackendConfig) -> Backend:
    """The backend a config names, importing only that one."""
    if config.type == "process":
        from golem.sandbox.backends.process import ProcessBackend  # noqa: PLC0415 - lazy

        return ProcessBackend(config)
    from golem.sandbox.backends.docker import DockerBackend  # noqa: PLC0415 - lazy

    return DockerBackend(config)
