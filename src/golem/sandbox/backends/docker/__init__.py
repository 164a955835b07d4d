"""The docker backend (Docker Engine API, or Podman's compatible socket)."""

from golem.sandbox.backends.docker.backend import DockerBackend, DockerBox

__all__ = ["DockerBackend", "DockerBox"]
